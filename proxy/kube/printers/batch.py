"""Column handlers of the ``batch`` group: jobs and cronjobs (kubectl's ``printJob``,
``printCronJob``).
"""

from __future__ import annotations

import datetime as dt

from proxy.printers.columns import (
    AGE,
    JSON,
    NAME,
    Column,
    Row,
    TablePrinter,
    as_int,
    as_list,
    condition_true,
    format_label_selector,
    lookup,
    name_age,
    object_meta,
    since,
    template_columns,
    template_wide,
)
from proxy.printers.duration import human_duration, parse_time

__all__ = ["HANDLERS"]

BATCH = "io.k8s.api.batch.v1."
JOB_COLUMNS = (
    NAME,
    Column("Status", description="Status of the job."),
    Column("Completions", doc=BATCH + "JobStatus.succeeded"),
    Column("Duration", description="Time required to complete the job."),
    AGE,
    *template_columns(BATCH + "JobSpec.selector"),
)

JOB_STATUS_ORDER = ("Complete", "Failed")
JOB_STATUS_AFTER_TERMINATING = (
    ("Suspended", "Suspended"),
    ("FailureTarget", "FailureTarget"),
    ("SuccessCriteriaMet", "SuccessCriteriaMet"),
)


def _job_status(job: dict[str, JSON]) -> str:
    conditions = lookup(job, "status", "conditions")
    for ctype in JOB_STATUS_ORDER:
        if condition_true(conditions, ctype):
            return ctype
    if object_meta(job).get("deletionTimestamp"):
        return "Terminating"
    for ctype, label in JOB_STATUS_AFTER_TERMINATING:
        if condition_true(conditions, ctype):
            return label
    return "Running"


def print_job(job: dict[str, JSON], now: dt.datetime) -> Row:
    succeeded = as_int(lookup(job, "status", "succeeded"))
    completions = lookup(job, "spec", "completions")
    parallelism = as_int(lookup(job, "spec", "parallelism"))
    if isinstance(completions, int):
        done = f"{succeeded}/{completions}"
    elif parallelism > 1:
        done = f"{succeeded}/1 of {parallelism}"
    else:
        done = f"{succeeded}/1"
    start = parse_time(lookup(job, "status", "startTime"))
    end = parse_time(lookup(job, "status", "completionTime"))
    took = "" if start is None else human_duration((end or now) - start)
    selector = format_label_selector(lookup(job, "spec", "selector")) or "<none>"
    name, age = name_age(job, now)
    cells: list[JSON] = [name, _job_status(job), done, took, age]
    return cells + template_wide(job, selector), []


CRONJOB_COLUMNS = (
    NAME,
    Column("Schedule", doc=BATCH + "CronJobSpec.schedule"),
    Column("Timezone", doc=BATCH + "CronJobSpec.timeZone"),
    Column("Suspend", type="boolean", doc=BATCH + "CronJobSpec.suspend"),
    Column("Active", type="integer", doc=BATCH + "CronJobStatus.active"),
    Column("Last Schedule", doc=BATCH + "CronJobStatus.lastScheduleTime"),
    AGE,
    *template_columns(BATCH + "JobSpec.selector"),
)


def print_cronjob(cj: dict[str, JSON], now: dt.datetime) -> Row:
    last = lookup(cj, "status", "lastScheduleTime")
    job_spec = lookup(cj, "spec", "jobTemplate", "spec") or {}
    containers = as_list(lookup(job_spec, "template", "spec", "containers"))
    selector = format_label_selector(job_spec.get("selector")) or "<none>"
    name, age = name_age(cj, now)
    cells: list[JSON] = [
        name,
        str(lookup(cj, "spec", "schedule") or ""),
        str(lookup(cj, "spec", "timeZone") or "<none>"),
        # kube defaults spec.suspend to false, so its printer never meets it unset.
        "True" if lookup(cj, "spec", "suspend") is True else "False",
        len(as_list(lookup(cj, "status", "active"))),
        "<none>" if last is None else since(last, now),
        age,
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        selector,
    ]
    return cells, []


# kubectl's handlers for the batch group, by resource
HANDLERS: dict[str, TablePrinter] = {
    "jobs": TablePrinter(JOB_COLUMNS, print_job),
    "cronjobs": TablePrinter(CRONJOB_COLUMNS, print_cronjob),
}
