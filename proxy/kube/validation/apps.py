"""apps/v1 workloads as ``pkg/apis/apps/validation`` and the apps strategies validate
them: Deployment, ReplicaSet, StatefulSet, DaemonSet.

- a selector is required (DaemonSet: only through matching), valid, not empty, and
  must match the template's labels (``spec.template.metadata.labels: Invalid value:
  map[string]string{...}: `selector` does not match template `labels```); a selector
  that is not a valid selector at all makes the template unchecked, as upstream;
- replicas, minReadySeconds, revisionHistoryLimit, progressDeadlineSeconds >= 0; a
  Deployment's strategy (Recreate without rollingUpdate; maxUnavailable/maxSurge as
  counts or percentages, not both 0, maxUnavailable at most 100%);
- the template is a valid pod template (StatefulSet: labels and annotations only) with
  restartPolicy Always and no activeDeadlineSeconds;
- update: the selector is immutable in apps/v1; a StatefulSet may change only
  replicas, ordinals, template, updateStrategy, persistentVolumeClaimRetentionPolicy
  and minReadySeconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from proxy.apimachinery.validation import field, go_values
from proxy.apimachinery.validation.field import ErrorList, GoLiteral
from proxy.apimachinery.validation.names import (
    NameFunc,
    is_qualified_name,
    is_valid_label_value,
    name_is_dns_label,
    name_is_dns_subdomain,
)
from proxy.apimachinery.validation.object_meta import (
    validate_annotations,
    validate_immutable,
    validate_label_selector,
    validate_labels,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from proxy.kube.validation.pod import validate_pod_template_spec

__all__ = [
    "selector_matches",
    "validate_daemon_set",
    "validate_daemon_set_update",
    "validate_deployment",
    "validate_deployment_update",
    "validate_replica_set",
    "validate_replica_set_update",
    "validate_stateful_set",
    "validate_stateful_set_update",
]

JSON = dict[str, Any]
SpecRule = Callable[[JSON], ErrorList]
_PERCENT = re.compile("[0-9]+%")
_PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  "
    "or '93%', regex used for validation is '[0-9]+%')"
)
_STATEFUL_SET_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _selector_convertible(selector: JSON) -> bool:
    """Whether ``LabelSelectorAsSelector`` accepts it (keys, values, operators)."""
    for k, v in _dict(selector.get("matchLabels")).items():
        if is_qualified_name(str(k)) or is_valid_label_value(str(v)):
            return False
    for expr in selector.get("matchExpressions") or []:
        expr = _dict(expr)
        operator, values = expr.get("operator"), expr.get("values") or []
        if is_qualified_name(str(expr.get("key") or "")):
            return False
        if operator in ("In", "NotIn"):
            if not values:
                return False
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                return False
        else:
            return False
        if any(is_valid_label_value(str(v)) for v in values):
            return False
    return True


def selector_matches(selector: JSON, labels: dict[str, str]) -> bool:
    """A (convertible) label selector against a label set."""
    for k, v in _dict(selector.get("matchLabels")).items():
        if labels.get(str(k)) != str(v):
            return False
    for expr in selector.get("matchExpressions") or []:
        expr = _dict(expr)
        key, operator = str(expr.get("key")), expr.get("operator")
        values = {str(v) for v in expr.get("values") or []}
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _is_empty(selector: JSON) -> bool:
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _selector(spec: JSON, kind: str, required: bool = True) -> ErrorList:
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        return [field.required("spec.selector")] if required else []
    errs = validate_label_selector(selector, "spec.selector")
    if _is_empty(selector):
        errs.append(
            field.invalid(
                "spec.selector",
                go_values.label_selector(selector),
                f"empty selector is invalid for {kind}",
            )
        )
    return errs


def _template_matches(spec: JSON, bad_selector_detail: str) -> tuple[ErrorList, bool]:
    """(errors, whether the template should be validated further)."""
    selector = spec.get("selector")
    template = _dict(spec.get("template"))
    labels = {
        str(k): str(v) for k, v in _dict(_dict(template.get("metadata")).get("labels")).items()
    }
    shown = go_values.string_map(_dict(template.get("metadata")).get("labels"))
    mismatch = field.invalid(
        "spec.template.metadata.labels", shown, "`selector` does not match template `labels`"
    )
    if not isinstance(selector, dict):
        return [mismatch], True  # a nil selector selects nothing
    if not _selector_convertible(selector):
        shown_selector = go_values.label_selector(selector)
        return [field.invalid("spec.selector", shown_selector, bad_selector_detail)], False
    if _is_empty(selector) or selector_matches(selector, labels):
        return [], True
    return [mismatch], True


def _always_restart(spec: JSON, kind: str) -> ErrorList:
    pod_spec = _dict(_dict(spec.get("template")).get("spec"))
    errs: ErrorList = []
    policy = pod_spec.get("restartPolicy")
    if policy not in (None, "", "Always"):
        errs.append(field.not_supported("spec.template.spec.restartPolicy", policy, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(
            field.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    return errs


def _nonnegative(spec: JSON, *names: str) -> ErrorList:
    errs: ErrorList = []
    for name in names:
        errs += validate_nonnegative(spec.get(name), field.child("spec", name))
    return errs


def _replica_set_spec(spec: JSON) -> ErrorList:
    """``ValidateReplicaSetSpec`` (also the selector/template part of a Deployment's)."""
    errs = _selector(spec, "deployment")
    found, go_on = _template_matches(spec, "invalid label selector")
    errs += found
    if go_on:
        errs += validate_pod_template_spec(_dict(spec.get("template")), "spec.template")
        errs += _always_restart(spec, "ReplicaSet")
    return errs


def _int_or_percent(value: object) -> GoLiteral:
    """An ``intstr.IntOrString`` as ``%#v`` prints it."""
    if isinstance(value, str):
        return GoLiteral(f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{field.go_quote(value)}}}")
    return GoLiteral(f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}')


def _amount(value: object, path: str) -> tuple[ErrorList, int]:
    """``ValidatePositiveIntOrPercent`` and the value it stands for (a percentage's
    number, as ``getIntOrPercentValue``)."""
    if isinstance(value, str):
        if _PERCENT.fullmatch(value):
            return [], int(value[:-1])
        return [field.invalid(path, _int_or_percent(value), _PERCENT_MSG)], 0
    number = value if isinstance(value, int) and not isinstance(value, bool) else 0
    return validate_nonnegative(number, path), number


def _rolling_update(update: JSON, path: str) -> ErrorList:
    """``ValidateRollingUpdateDeployment`` (unset values are kube's default, 25%)."""
    unavailable = update.get("maxUnavailable", "25%")
    unavailable_path = field.child(path, "maxUnavailable")
    errs, unavailable_value = _amount(unavailable, unavailable_path)
    surge_errs, surge_value = _amount(update.get("maxSurge", "25%"), field.child(path, "maxSurge"))
    errs += surge_errs
    if unavailable_value == 0 and surge_value == 0:
        errs.append(
            field.invalid(
                unavailable_path, _int_or_percent(unavailable), "may not be 0 when `maxSurge` is 0"
            )
        )
    if isinstance(unavailable, str) and _PERCENT.fullmatch(unavailable) and unavailable_value > 100:
        errs.append(
            field.invalid(
                unavailable_path, _int_or_percent(unavailable), "must not be greater than 100%"
            )
        )
    return errs


def _deployment_strategy(strategy: JSON) -> ErrorList:
    """``ValidateDeploymentStrategy`` (type RollingUpdate by default)."""
    kind = strategy.get("type") or "RollingUpdate"
    update = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if update is not None:
            detail = "may not be specified when strategy `type` is 'Recreate'"
            return [field.forbidden("spec.strategy.rollingUpdate", detail)]
        return []
    if kind == "RollingUpdate":
        return _rolling_update(_dict(update), "spec.strategy.rollingUpdate")
    shown = go_values.GoLiteral(
        f"apps.DeploymentStrategy{{Type:{field.go_quote(str(kind))}, "
        "RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}"
    )
    return [field.not_supported("spec.strategy", shown, ["Recreate", "RollingUpdate"])]


def _deployment_spec(spec: JSON) -> ErrorList:
    errs = _nonnegative(spec, "replicas") + _replica_set_spec(spec)
    errs += _deployment_strategy(_dict(spec.get("strategy")))
    errs += _nonnegative(spec, "minReadySeconds", "revisionHistoryLimit")
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int):
        errs += _nonnegative(spec, "progressDeadlineSeconds")
        if deadline <= (spec.get("minReadySeconds") or 0):
            errs.append(
                field.invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    return errs


def _meta(obj: JSON) -> JSON:
    return _dict(obj.get("metadata"))


def _spec(obj: JSON) -> JSON:
    return _dict(obj.get("spec"))


def _selector_immutable(new: JSON, old: JSON) -> ErrorList:
    new_sel, old_sel = _spec(new).get("selector"), _spec(old).get("selector")
    return validate_immutable(new_sel, old_sel, "spec.selector", go_values.label_selector(new_sel))


def _for_create(spec_rule: SpecRule, name_rule: NameFunc) -> Callable[[JSON], ErrorList]:
    """A kind's Validate: ObjectMeta with its name rule, then its spec."""

    def validate(obj: JSON) -> ErrorList:
        return validate_object_meta(_meta(obj), True, name_rule) + spec_rule(_spec(obj))

    return validate


def _for_update(
    spec_rule: SpecRule, validate: Callable[[JSON], ErrorList] | None = None
) -> Callable[[JSON, JSON], ErrorList]:
    """A kind's ValidateUpdate: (``validate`` of the new object, for the strategies that
    run it first,) the metadata update, the new spec, the selector kept."""

    def validate_update(new: JSON, old: JSON) -> ErrorList:
        errs = validate(new) if validate is not None else []
        errs += validate_object_meta_update(_meta(new), _meta(old)) + spec_rule(_spec(new))
        return errs + _selector_immutable(new, old)

    return validate_update


def _rs_spec(spec: JSON) -> ErrorList:
    return _nonnegative(spec, "replicas", "minReadySeconds") + _replica_set_spec(spec)


def _stateful_set_spec(spec: JSON) -> ErrorList:
    errs: ErrorList = []
    policy = spec.get("podManagementPolicy")
    if policy not in (None, "", "OrderedReady", "Parallel"):
        errs.append(
            field.invalid(
                "spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"
            )
        )
    errs += _nonnegative(spec, "replicas", "minReadySeconds")
    errs += _selector(spec, "statefulset")
    found, go_on = _template_matches(spec, "")
    errs += found
    if go_on:
        meta = _dict(_dict(spec.get("template")).get("metadata"))
        # upstream's paths: template.labels / template.annotations (no "metadata")
        errs += validate_labels(meta.get("labels"), "spec.template.labels")
        errs += validate_annotations(meta.get("annotations"), "spec.template.annotations")
    return errs + _always_restart(spec, "StatefulSet")


def validate_stateful_set_update(new: JSON, old: JSON) -> ErrorList:
    errs = validate_object_meta_update(_meta(new), _meta(old))
    errs += _stateful_set_spec(_spec(new))
    new_rest = {k: v for k, v in _spec(new).items() if k not in _STATEFUL_SET_MUTABLE}
    old_rest = {k: v for k, v in _spec(old).items() if k not in _STATEFUL_SET_MUTABLE}
    if new_rest != old_rest:
        errs.append(
            field.forbidden(
                "spec",
                "updates to statefulset spec for fields other than "
                "'replicas', 'ordinals', 'template', 'updateStrategy', "
                "'persistentVolumeClaimRetentionPolicy' and "
                "'minReadySeconds' are forbidden",
            )
        )
    return errs


def _daemon_set_spec(spec: JSON) -> ErrorList:
    errs = validate_label_selector(spec.get("selector"), "spec.selector")
    found, _ = _template_matches(spec, "")
    errs += [e for e in found if e.field != "spec.selector"]
    selector = spec.get("selector")
    if isinstance(selector, dict) and _is_empty(selector):
        errs.append(
            field.invalid(
                "spec.selector",
                go_values.label_selector(selector),
                "empty selector is invalid for daemonset",
            )
        )
    errs += validate_pod_template_spec(_dict(spec.get("template")), "spec.template")
    errs += _always_restart(spec, "DaemonSet")
    return errs + _nonnegative(
        spec, "minReadySeconds", "templateGeneration", "revisionHistoryLimit"
    )


validate_deployment = _for_create(_deployment_spec, name_is_dns_subdomain)
validate_deployment_update = _for_update(_deployment_spec)
validate_replica_set = _for_create(_rs_spec, name_is_dns_subdomain)
validate_replica_set_update = _for_update(_rs_spec, validate_replica_set)
validate_stateful_set = _for_create(_stateful_set_spec, name_is_dns_label)
validate_daemon_set = _for_create(_daemon_set_spec, name_is_dns_subdomain)
validate_daemon_set_update = _for_update(_daemon_set_spec, validate_daemon_set)
