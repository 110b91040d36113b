"""batch/v1 Job and CronJob as ``pkg/apis/batch/validation`` and the job strategy
validate them.

- Job create: the strategy's selector generation first (unless ``manualSelector``):
  the template gets ``batch.kubernetes.io/controller-uid``/``controller-uid`` = uid and
  ``batch.kubernetes.io/job-name``/``job-name`` = name, the selector matches the uid;
  then a DNS subdomain name, those generated labels present, counts (parallelism,
  completions, activeDeadlineSeconds, backoffLimit, ttlSecondsAfterFinished) >= 0, a
  valid pod template whose restartPolicy is OnFailure or Never, the selector matching
  the template;
- Job update: the new job valid, then completions (non-indexed), selector, template,
  completionMode immutable (``spec.template: Invalid value: ...: field is immutable``);
- CronJob: a schedule that parses, a name of at most 52 characters, a supported
  concurrencyPolicy, a job template without a selector.
"""

from __future__ import annotations

from typing import Any

from proxy.apimachinery.validation import field, go_values
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.names import name_is_dns_subdomain
from proxy.apimachinery.validation.object_meta import (
    validate_immutable,
    validate_label_selector,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from proxy.kube.validation import cron
from proxy.kube.validation.apps import selector_matches
from proxy.kube.validation.container import RESTART_POLICIES
from proxy.kube.validation.pod import validate_pod_template_spec

__all__ = [
    "prepare_job_for_create",
    "validate_cron_job",
    "validate_cron_job_update",
    "validate_job",
    "validate_job_update",
]

JSON = dict[str, Any]

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
_COUNTS = (
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "backoffLimit",
    "ttlSecondsAfterFinished",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
)
_CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
CRON_JOB_NAME_MAX_LENGTH = 52


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _setdefault_dict(obj: JSON, name: str) -> JSON:
    if not isinstance(obj.get(name), dict):
        obj[name] = {}
    result: JSON = obj[name]
    return result


def prepare_job_for_create(job: JSON) -> None:
    """The job strategy's ``generateSelector`` (mutates ``job``; uid and name set)."""
    spec = _setdefault_dict(job, "spec")
    if spec.get("manualSelector") is True:
        return
    meta = _dict(job.get("metadata"))
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    labels = _setdefault_dict(
        _setdefault_dict(_setdefault_dict(spec, "template"), "metadata"), "labels"
    )
    for key in (LEGACY_JOB_NAME, JOB_NAME):
        labels.setdefault(key, name)
    for key in (LEGACY_CONTROLLER_UID, CONTROLLER_UID):
        labels.setdefault(key, uid)
    match_labels = _setdefault_dict(_setdefault_dict(spec, "selector"), "matchLabels")
    match_labels.setdefault(CONTROLLER_UID, uid)


def _has_label(labels: JSON, key: str, expected: str) -> ErrorList:
    path = field.key("spec.template.metadata.labels", key)
    if key not in labels:
        return [field.required(path, f"must be '{expected}'")]
    if labels[key] != expected:
        return [field.invalid(path, go_values.string_map(labels), f"must be '{expected}'")]
    return []


def _generated_selector(job: JSON) -> ErrorList:
    spec, meta = _dict(job.get("spec")), _dict(job.get("metadata"))
    if spec.get("manualSelector") is True or not isinstance(spec.get("selector"), dict):
        return []
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    errs: ErrorList = [] if uid else [field.required("metadata.uid")]
    labels = _dict(_dict(_dict(spec.get("template")).get("metadata")).get("labels"))
    for key, expected in (
        (LEGACY_CONTROLLER_UID, uid),
        (LEGACY_JOB_NAME, name),
        (CONTROLLER_UID, uid),
        (JOB_NAME, name),
    ):
        errs += _has_label(labels, key, expected)
    expected_labels = {
        CONTROLLER_UID: uid,
        JOB_NAME: name,
        LEGACY_CONTROLLER_UID: uid,
        LEGACY_JOB_NAME: name,
    }
    if not selector_matches(spec["selector"], expected_labels):
        errs.append(
            field.invalid(
                "spec.selector",
                go_values.label_selector(spec["selector"]),
                "`selector` not auto-generated",
            )
        )
    return errs


def _job_spec_common(spec: JSON, path: str) -> ErrorList:
    """``validateJobSpec``: counts, the pod template and its restart policy."""
    errs: ErrorList = []
    for name in _COUNTS:
        errs += validate_nonnegative(spec.get(name), field.child(path, name))
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        errs.append(
            field.not_supported(
                field.child(path, "completionMode"), mode, ["NonIndexed", "Indexed"]
            )
        )
    if mode == "Indexed" and spec.get("completions") is None:
        errs.append(
            field.required(field.child(path, "completions"), "when completion mode is Indexed")
        )
    template_path = field.child(path, "template")
    template = _dict(spec.get("template"))
    errs += validate_pod_template_spec(template, template_path)
    policy = _dict(template.get("spec")).get("restartPolicy")
    policy_path = field.child(template_path, "spec", "restartPolicy")
    if policy in (None, "", "Always"):
        errs.append(field.required(policy_path, 'valid values: "OnFailure", "Never"'))
    elif policy not in RESTART_POLICIES:
        errs.append(field.not_supported(policy_path, policy, ["OnFailure", "Never"]))
    return errs


def _job_spec(spec: JSON) -> ErrorList:
    """``ValidateJobSpec``: the common part, a valid selector matching the template."""
    errs = _job_spec_common(spec, "spec")
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        errs.append(field.required("spec.selector"))
    else:
        errs += validate_label_selector(selector, "spec.selector")
    template_meta = _dict(_dict(spec.get("template")).get("metadata"))
    labels = {str(k): str(v) for k, v in _dict(template_meta.get("labels")).items()}
    if not isinstance(selector, dict) or not selector_matches(selector, labels):
        errs.append(
            field.invalid(
                "spec.template.metadata.labels",
                go_values.string_map(template_meta.get("labels")),
                "`selector` does not match template `labels`",
            )
        )
    return errs


def validate_job(job: JSON) -> ErrorList:
    errs = validate_object_meta(_dict(job.get("metadata")), True, name_is_dns_subdomain)
    errs += _generated_selector(job)
    return errs + _job_spec(_dict(job.get("spec")))


def validate_job_update(new: JSON, old: JSON) -> ErrorList:
    """The job strategy's ValidateUpdate: ``ValidateJob`` then ``ValidateJobUpdate``."""
    errs = validate_job(new)
    errs += validate_object_meta_update(_dict(new.get("metadata")), _dict(old.get("metadata")))
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    errs += _job_spec(spec)
    if spec.get("completionMode") != "Indexed":
        errs += validate_immutable(
            spec.get("completions"), old_spec.get("completions"), "spec.completions"
        )
    errs += validate_immutable(
        spec.get("selector"),
        old_spec.get("selector"),
        "spec.selector",
        go_values.label_selector(spec.get("selector")),
    )
    template = spec.get("template")
    errs += validate_immutable(
        template,
        old_spec.get("template"),
        "spec.template",
        go_values.struct("core.PodTemplateSpec", template),
    )
    for name in (
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ):
        shown = spec.get(name)
        if isinstance(shown, dict):
            shown = go_values.struct("", shown)
        errs += validate_immutable(
            spec.get(name), old_spec.get(name), field.child("spec", name), shown
        )
    return errs


def _cron_job_spec(spec: JSON, old_spec: JSON | None) -> ErrorList:
    errs: ErrorList = []
    schedule = str(spec.get("schedule") or "")
    if not schedule:
        errs.append(field.required("spec.schedule"))
    else:
        error = cron.schedule_error(schedule)
        if error:
            errs.append(field.invalid("spec.schedule", schedule, error))
        allow_tz = old_spec is not None and "TZ" in str(old_spec.get("schedule") or "")
        if allow_tz and "TZ" in schedule and spec.get("timeZone") is not None:
            errs.append(
                field.invalid(
                    "spec.schedule",
                    schedule,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                )
            )
        elif not allow_tz and "TZ" in schedule:
            errs.append(
                field.invalid(
                    "spec.schedule",
                    schedule,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                )
            )
    errs += validate_nonnegative(
        spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds"
    )
    policy = spec.get("concurrencyPolicy")
    if policy not in (None, "") and policy not in _CONCURRENCY_POLICIES:
        errs.append(field.not_supported("spec.concurrencyPolicy", policy, _CONCURRENCY_POLICIES))
    job_spec = _dict(_dict(spec.get("jobTemplate")).get("spec"))
    errs += _job_spec_common(job_spec, "spec.jobTemplate.spec")
    if job_spec.get("selector") is not None:
        errs.append(
            field.invalid(
                "spec.jobTemplate.spec.selector",
                go_values.label_selector(job_spec["selector"]),
                "`selector` will be auto-generated",
            )
        )
    if job_spec.get("manualSelector") is True:
        errs.append(
            field.not_supported("spec.jobTemplate.spec.manualSelector", True, ["nil", "false"])
        )
    for name in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        errs += validate_nonnegative(spec.get(name), field.child("spec", name))
    return errs


def validate_cron_job(cron_job: JSON) -> ErrorList:
    meta = _dict(cron_job.get("metadata"))
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    errs += _cron_job_spec(_dict(cron_job.get("spec")), None)
    name = str(meta.get("name") or "")
    if len(name) > CRON_JOB_NAME_MAX_LENGTH:
        errs.append(
            field.invalid(
                "metadata.name", name, f"must be no more than {CRON_JOB_NAME_MAX_LENGTH} characters"
            )
        )
    return errs


def validate_cron_job_update(new: JSON, old: JSON) -> ErrorList:
    errs = validate_object_meta_update(_dict(new.get("metadata")), _dict(old.get("metadata")))
    return errs + _cron_job_spec(_dict(new.get("spec")), _dict(old.get("spec")))
