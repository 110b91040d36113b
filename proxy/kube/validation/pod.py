"""Pod validation (``pkg/apis/core/validation``: ``ValidatePodCreate``,
``ValidatePodSpec``, ``ValidatePodTemplateSpec``, ``ValidatePodUpdate``), the checks a
user meets first:

- containers: required, each as ``container`` validates it; on a pod (not a template)
  images without leading or trailing whitespace;
- volumes: names DNS-1123 labels, unique, at most one volume type (none is emptyDir);
- restartPolicy, dnsPolicy supported values; nodeSelector labels; serviceAccountName,
  nodeName, priorityClassName subdomains; hostname, subdomain labels;
  activeDeadlineSeconds in 1..2^31-1;
- update: only the containers' images, activeDeadlineSeconds (never raised), new
  tolerations and a negative terminationGracePeriodSeconds set to 1 may change:
  ``spec: Forbidden: pod updates may not change fields other than ...``.

kube validates a defaulted object, and so does this server (``proxy.kube.defaulting``
runs before validation); a field defaulting fills in (restartPolicy, dnsPolicy,
protocol, imagePullPolicy, ...) is still only checked when set, for objects stored
before defaulting existed.
"""

from __future__ import annotations

import copy
from typing import Any

from proxy.apimachinery.validation import field, go_values
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.names import (
    inclusive_range_error,
    is_valid_label_value,
    name_is_dns_subdomain,
)
from proxy.apimachinery.validation.object_meta import (
    validate_annotations,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
    validate_qualified_name,
)
from proxy.kube.validation.container import (
    RESTART_POLICIES,
    as_int,
    as_object,
    as_objects,
    dns_label,
    dns_subdomain,
    optional_enum,
    validate_containers,
    validate_init_containers,
)

__all__ = [
    "TAINT_EFFECTS",
    "validate_ephemeral_containers_update",
    "validate_pod",
    "validate_pod_spec",
    "validate_pod_template_spec",
    "validate_pod_update",
    "validate_tolerations",
]

JSON = dict[str, Any]

MAX_INT32 = 2**31 - 1
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_IMAGE_WHITESPACE = "must not have leading or trailing whitespace"
_EMPTY_KEY_NEEDS_EXISTS = (
    'operator must be Exists when `key` is empty, which means "match all values and all keys"'
)
UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


# -------------------------------------------------------------------- the spec


def _volumes(volumes: list[JSON], path: str) -> tuple[set[str], ErrorList]:
    errs: ErrorList = []
    names: set[str] = set()
    for i, vol in enumerate(volumes):
        p = field.index(path, i)
        found: ErrorList = []
        # no volume type at all is an emptyDir: v1 defaulting sets one
        sources = [k for k, v in vol.items() if k != "name" and v is not None]
        for extra in sources[1:]:
            found.append(
                field.forbidden(field.child(p, extra), "may not specify more than 1 volume type")
            )
        name = str(vol.get("name") or "")
        if not name:
            found.append(field.required(field.child(p, "name")))
        else:
            found += dns_label(name, field.child(p, "name"))
        if name in names:
            found.append(field.duplicate(field.child(p, "name"), name))
        if found:
            errs += found
        else:
            names.add(name)
    return names, errs


def validate_pod_spec(spec: JSON, path: str) -> ErrorList:
    """``ValidatePodSpec`` (the checks listed in the module docstring)."""
    volumes, errs = _volumes(as_objects(spec.get("volumes")), field.child(path, "volumes"))
    containers = as_objects(spec.get("containers"))
    errs += validate_containers(containers, volumes, field.child(path, "containers"))
    errs += validate_init_containers(
        as_objects(spec.get("initContainers")),
        containers,
        volumes,
        field.child(path, "initContainers"),
    )
    errs += optional_enum(
        spec.get("restartPolicy"), field.child(path, "restartPolicy"), RESTART_POLICIES
    )
    errs += optional_enum(spec.get("dnsPolicy"), field.child(path, "dnsPolicy"), _DNS_POLICIES)
    errs += validate_labels(spec.get("nodeSelector"), field.child(path, "nodeSelector"))
    for name in ("serviceAccountName", "nodeName"):
        if spec.get(name):
            errs += dns_subdomain(str(spec[name]), field.child(path, name))
    deadline = as_int(spec.get("activeDeadlineSeconds"))
    if deadline is not None and not 1 <= deadline <= MAX_INT32:
        errs.append(
            field.invalid(
                field.child(path, "activeDeadlineSeconds"),
                deadline,
                inclusive_range_error(1, MAX_INT32),
            )
        )
    for name in ("hostname", "subdomain"):
        if spec.get(name):
            errs += dns_label(str(spec[name]), field.child(path, name))
    errs += validate_tolerations(
        as_objects(spec.get("tolerations")), field.child(path, "tolerations")
    )
    if spec.get("priorityClassName"):
        errs += dns_subdomain(
            str(spec["priorityClassName"]), field.child(path, "priorityClassName")
        )
    return errs


def validate_tolerations(tolerations: list[JSON], path: str) -> ErrorList:
    """``ValidateTolerations``: keys, operators, values, effects."""
    errs: ErrorList = []
    for i, toleration in enumerate(tolerations):
        p = field.index(path, i)
        key, operator = str(toleration.get("key") or ""), str(toleration.get("operator") or "")
        value, effect = str(toleration.get("value") or ""), str(toleration.get("effect") or "")
        if key:
            errs += validate_qualified_name(key, field.child(p, "key"))
        op_path = field.child(p, "operator")
        if not key and operator != "Exists":
            errs.append(field.invalid(op_path, operator, _EMPTY_KEY_NEEDS_EXISTS))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(
                field.invalid(
                    field.child(p, "effect"),
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            msgs = is_valid_label_value(value)
            if msgs:
                errs.append(field.invalid(op_path, value, ";".join(msgs)))
        elif operator == "Exists":
            if value:
                errs.append(
                    field.invalid(op_path, value, "value must be empty when `operator` is 'Exists'")
                )
        else:
            errs.append(field.not_supported(op_path, operator, ["Equal", "Exists"]))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(field.not_supported(field.child(p, "effect"), effect, TAINT_EFFECTS))
    return errs


def validate_pod(pod: JSON) -> ErrorList:
    """``ValidatePodCreate``: metadata (a DNS subdomain name), the spec, no ephemeral
    containers, no nodeName while scheduling gates remain."""
    meta, spec = as_object(pod.get("metadata")), as_object(pod.get("spec"))
    errs = _pod_metadata_and_spec(meta, spec)
    if spec.get("ephemeralContainers"):
        errs.append(field.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errs.append(
            field.forbidden(
                "spec.nodeName", "cannot be set until all schedulingGates have been cleared"
            )
        )
    return errs


def _pod_metadata_and_spec(meta: JSON, spec: JSON) -> ErrorList:
    """``validatePodMetadataAndSpec``: metadata, spec, then what only a pod (not a
    template) is held to: images without surrounding whitespace."""
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    errs += validate_pod_spec(spec, "spec")
    for name in ("containers", "initContainers"):
        for i, ctr in enumerate(as_objects(spec.get(name))):
            image = ctr.get("image")
            if isinstance(image, str) and image.strip() != image:
                errs.append(
                    field.invalid(
                        field.child(field.index(f"spec.{name}", i), "image"),
                        image,
                        _IMAGE_WHITESPACE,
                    )
                )
    return errs


def validate_pod_template_spec(template: JSON, path: str) -> ErrorList:
    """``ValidatePodTemplateSpec``: template labels, annotations and pod spec."""
    meta, spec = as_object(template.get("metadata")), as_object(template.get("spec"))
    errs = validate_labels(meta.get("labels"), field.child(path, "metadata", "labels"))
    errs += validate_annotations(
        meta.get("annotations"), field.child(path, "metadata", "annotations")
    )
    errs += validate_pod_spec(spec, field.child(path, "spec"))
    if spec.get("ephemeralContainers"):
        errs.append(
            field.forbidden(
                field.child(path, "spec", "ephemeralContainers"),
                "ephemeral containers not allowed in pod template",
            )
        )
    return errs


# ---------------------------------------------------------------------- update


def _container_updates(new: list[JSON], old: list[JSON], path: str) -> tuple[ErrorList, bool]:
    if len(new) != len(old):
        return [field.forbidden(path, "pod updates may not add or remove containers")], True
    errs: ErrorList = []
    for i, ctr in enumerate(new):
        image = ctr.get("image")
        if not image:
            errs.append(field.required(field.child(field.index(path, i), "image")))
        elif isinstance(image, str) and image.strip() != image:
            errs.append(
                field.invalid(
                    field.child(field.index(path, i), "image"),
                    image,
                    _IMAGE_WHITESPACE,
                )
            )
    return errs, False


def validate_pod_update(new: JSON, old: JSON) -> ErrorList:
    """``ValidatePodUpdate``: metadata update, the new pod valid, then only the
    updatable spec fields changed."""
    new_meta, old_meta = as_object(new.get("metadata")), as_object(old.get("metadata"))
    errs = validate_object_meta_update(new_meta, old_meta)
    new_spec, old_spec = as_object(new.get("spec")), as_object(old.get("spec"))
    errs += _pod_metadata_and_spec(new_meta, new_spec)
    for name in ("containers", "initContainers"):
        found, stop = _container_updates(
            as_objects(new_spec.get(name)),
            as_objects(old_spec.get(name)),
            field.child("spec", name),
        )
        errs += found
        if stop:
            return errs
    new_deadline, old_deadline = (
        new_spec.get("activeDeadlineSeconds"),
        old_spec.get("activeDeadlineSeconds"),
    )
    path = "spec.activeDeadlineSeconds"
    if isinstance(new_deadline, int):
        if not 0 <= new_deadline <= MAX_INT32:
            errs.append(field.invalid(path, new_deadline, inclusive_range_error(0, MAX_INT32)))
            return errs
        if isinstance(old_deadline, int) and old_deadline < new_deadline:
            errs.append(
                field.invalid(path, new_deadline, "must be less than or equal to previous value")
            )
            return errs
    elif old_deadline is not None:
        errs.append(
            field.invalid(path, None, "must not update from a positive integer to nil value")
        )
    errs += _only_added_tolerations(
        as_objects(new_spec.get("tolerations")), as_objects(old_spec.get("tolerations"))
    )
    old_spec = _defaulted(old_spec)
    new_spec = _defaulted(new_spec, like=old_spec)
    if new_spec == old_spec:
        return errs
    munged = _munged(new_spec, old_spec)
    if munged != old_spec:
        detail = "pod updates may not change fields other than " + ",".join(
            UPDATABLE_POD_SPEC_FIELDS
        )
        errs.append(field.forbidden("spec", f"{detail}\n{_spec_diff(old_spec, munged)}"))
    return errs


def _only_added_tolerations(new: list[JSON], old: list[JSON]) -> ErrorList:
    for toleration in old:
        wanted = {k: v for k, v in toleration.items() if k != "tolerationSeconds"}
        if not any({k: v for k, v in t.items() if k != "tolerationSeconds"} == wanted for t in new):
            return [
                field.forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            ]
    return validate_tolerations(new, "spec.tolerations")


_POD_SPEC_DEFAULTS: JSON = {
    "restartPolicy": "Always",
    "dnsPolicy": "ClusterFirst",
    "terminationGracePeriodSeconds": 30,
    "schedulerName": "default-scheduler",
    "securityContext": {},
    "enableServiceLinks": True,
}
_CONTAINER_DEFAULTS: JSON = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resources": {},
}


def _pull_policy(image: object) -> str:
    """SetDefaults_Container: Always for ``:latest`` or no tag, else IfNotPresent."""
    name = str(image or "").partition("@")[0]
    tag = name.rpartition(":")[2] if ":" in name.rpartition("/")[2] else ""
    return "Always" if tag in ("", "latest") and "@" not in str(image or "") else "IfNotPresent"


def _defaulted(spec: JSON, like: JSON | None = None) -> JSON:
    """``spec`` with kube's PodSpec defaults filled in where unset, so that an update
    is compared as kube compares defaulted objects (a pod stored before defaulting
    existed is not: docs/defaulting.md). An
    unset imagePullPolicy is taken from ``like`` (the stored spec) when it has the
    container: kube defaulted it from the image the pod was created with. The spec's
    own values are shared, not copied (every pod update defaults both specs; a deep
    copy of each was most of this check's cost): the containers and their ports are
    new objects, and nothing downstream writes into the rest (:func:`_munged` copies)."""
    out = {**_POD_SPEC_DEFAULTS, **spec}
    for name in ("containers", "initContainers"):
        if isinstance(out.get(name), list):
            stored = as_objects((like or {}).get(name))
            out[name] = [
                _defaulted_container(c, stored[i] if i < len(stored) else None)
                for i, c in enumerate(as_objects(out[name]))
            ]
    return out


def _defaulted_container(ctr: JSON, like: JSON | None) -> JSON:
    policy = like.get("imagePullPolicy") if like else _pull_policy(ctr.get("image"))
    out = {**_CONTAINER_DEFAULTS, "imagePullPolicy": policy, **ctr}
    if isinstance(out.get("ports"), list):
        out["ports"] = [{"protocol": "TCP", **p} for p in as_objects(out["ports"])]
    return out


def _munged(new: JSON, old: JSON) -> JSON:
    """The new spec with every updatable field set back to the old value."""
    munged = copy.deepcopy(new)
    for name in ("containers", "initContainers"):
        olds = as_objects(old.get(name))
        for i, ctr in enumerate(as_objects(munged.get(name))):
            if "image" in olds[i]:
                ctr["image"] = olds[i]["image"]
            else:
                ctr.pop("image", None)
    for name in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        if name in old:
            munged[name] = copy.deepcopy(old[name])
        else:
            munged.pop(name, None)
    old_grace = as_int(old.get("terminationGracePeriodSeconds"))
    if old_grace is not None and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    return munged


def _spec_diff(old: JSON, new: JSON) -> str:
    """A diff in the spirit of go-cmp's (whose exact text upstream randomises): the
    changed top-level fields of the PodSpec, old lines ``-``, new lines ``+``."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new), key=lambda k: (k not in old, k)):
        if old.get(key) == new.get(key):
            continue
        name = go_values.go_name(key)
        if key in old:
            lines.append(f"- \t{name}: {_diff_value(old[key])},")
        if key in new:
            lines.append(f"+ \t{name}: {_diff_value(new[key])},")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def _diff_value(value: object) -> str:
    return go_values.value_text(value)


# fields an ephemeral container may not set (``validateEphemeralContainers``)
_EPHEMERAL_FORBIDDEN = ("ports", "livenessProbe", "readinessProbe", "startupProbe",
                        "lifecycle", "resources", "resizePolicy")  # fmt: skip


def validate_ephemeral_containers_update(new: JSON, old: JSON) -> ErrorList:
    """``ValidatePodEphemeralContainersUpdate``: existing ephemeral containers neither
    change nor go; new ones are named uniquely among all the pod's containers and set
    none of the fields an ephemeral container may not have."""
    path = "spec.ephemeralContainers"
    new_spec, old_spec = as_object(new.get("spec")), as_object(old.get("spec"))
    news = as_objects(new_spec.get("ephemeralContainers"))
    by_name = {str(c.get("name")): c for c in news}
    errs: ErrorList = []
    for ctr in as_objects(old_spec.get("ephemeralContainers")):
        name = str(ctr.get("name"))
        if name not in by_name:
            errs.append(field.forbidden(path, f'existing ephemeral containers "{name}" may not '
                                              "be removed"))  # fmt: skip
        elif by_name[name] != ctr:
            errs.append(field.forbidden(path, f'existing ephemeral containers "{name}" may not '
                                              "be changed"))  # fmt: skip
    taken = {str(c.get("name")) for key in ("containers", "initContainers")
             for c in as_objects(new_spec.get(key))}  # fmt: skip
    for i, ctr in enumerate(news):
        at = f"{path}[{i}]"
        new_name = ctr.get("name")
        if not new_name:
            errs.append(field.required(f"{at}.name", ""))
        elif new_name in taken:
            errs.append(field.duplicate(f"{at}.name", new_name))
        taken.add(str(new_name))
        if not ctr.get("image"):
            errs.append(field.required(f"{at}.image", ""))
        for key in _EPHEMERAL_FORBIDDEN:
            if ctr.get(key):
                detail = "cannot be set for an Ephemeral Container"
                errs.append(field.forbidden(f"{at}.{key}", detail))
    return errs
