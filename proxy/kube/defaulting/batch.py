"""The batch group's defaults (``pkg/apis/batch/v1/defaults.go``), with 1.37's feature
gates (``JobPodReplacementPolicy`` and ``JobBackoffLimitPerIndex``: GA)."""

from __future__ import annotations

import copy
from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, child, default_nil, default_zero, dicts, member
from proxy.kube.defaulting.pod_spec import default_pod_template

__all__ = ["DEFAULTERS"]

_MAX_INT32 = 2**31 - 1


def _job_spec(spec: JSON) -> None:
    """What ``SetDefaults_Job`` sets in the spec."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    default_nil(spec, "parallelism", 1)
    per_index = spec.get("backoffLimitPerIndex") is not None
    default_nil(spec, "backoffLimit", _MAX_INT32 if per_index else 6)
    default_nil(spec, "completionMode", "NonIndexed")
    default_nil(spec, "suspend", False)
    policy = member(spec, "podFailurePolicy")
    for rule in dicts(policy, "rules"):
        for pattern in dicts(rule, "onPodConditions"):
            default_zero(pattern, "status", "True")
    default_nil(spec, "podReplacementPolicy",
                "Failed" if policy is not None else "TerminatingOrFailed")  # fmt: skip


def job(obj: JSON) -> None:
    """``SetDefaults_Job``: one completion and parallelism 1 when both are unset, a
    backoff limit of 6 (MaxInt32 with a per-index limit), NonIndexed, not suspended,
    pod conditions' status True, the pod replacement policy; the Job's labels from its
    template's when it has none."""
    spec = child(obj, "spec")
    if spec is None:
        return
    _job_spec(spec)
    template = member(spec, "template")
    template_meta = member(template, "metadata") if template is not None else None
    labels = template_meta.get("labels") if template_meta is not None else None
    meta = child(obj, "metadata")
    if isinstance(labels, dict) and meta is not None and not meta.get("labels"):
        meta["labels"] = copy.deepcopy(labels)
    default_pod_template(spec)


def cron_job(obj: JSON) -> None:
    """``SetDefaults_CronJob``: Allow, not suspended, histories of 3 and 1; the job
    template's pod template gets the PodSpec defaults (not ``SetDefaults_Job``)."""
    spec = child(obj, "spec")
    if spec is None:
        return
    default_zero(spec, "concurrencyPolicy", "Allow")
    default_nil(spec, "suspend", False)
    default_nil(spec, "successfulJobsHistoryLimit", 3)
    default_nil(spec, "failedJobsHistoryLimit", 1)
    job_template = member(spec, "jobTemplate")
    if job_template is not None:
        default_pod_template(member(job_template, "spec"))


DEFAULTERS: dict[str, Callable[[JSON], None]] = {"Job": job, "CronJob": cron_job}
