"""Pod validation (``pkg/apis/core/validation``: ``ValidatePodCreate``,
``ValidatePodSpec``, ``ValidatePodTemplateSpec``, ``ValidatePodUpdate``), the checks a
user meets first:

- containers: required; names DNS-1123 labels, unique across containers and
  initContainers; image required; ports (1..65535, protocol TCP/UDP/SCTP, named ports
  unique); imagePullPolicy and terminationMessagePolicy supported values; resources
  (standard names, non-negative, requests <= limits); volumeMounts name a volume;
  probes/lifecycle forbidden on plain init containers;
- volumes: names DNS-1123 labels, unique, at most one volume type (none is emptyDir);
- restartPolicy, dnsPolicy supported values; nodeSelector labels; serviceAccountName,
  nodeName, priorityClassName subdomains; hostname, subdomain labels;
  activeDeadlineSeconds in 1..2^31-1;
- update: only the containers' images, activeDeadlineSeconds (never raised), new
  tolerations and a negative terminationGracePeriodSeconds set to 1 may change:
  ``spec: Forbidden: pod updates may not change fields other than ...``.

kube validates a defaulted object; objects here are not defaulted, so a field that
defaulting fills in (restartPolicy, dnsPolicy, protocol, imagePullPolicy, ...) is only
checked when it is set.
"""

from __future__ import annotations

import copy
from typing import Any

from proxy.registry.validation import field, go_values, quantity
from proxy.registry.validation.field import ErrorList, GoLiteral
from proxy.registry.validation.names import (
    inclusive_range_error,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns_subdomain,
)
from proxy.registry.validation.object_meta import (
    IS_NEGATIVE,
    validate_annotations,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
)

__all__ = [
    "validate_pod",
    "validate_pod_spec",
    "validate_pod_template_spec",
    "validate_pod_update",
]

JSON = dict[str, Any]

MAX_INT32 = 2**31 - 1
PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
_DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES = (
    _STANDARD_CONTAINER_RESOURCES
    | {
        f"{scope}.{name}"
        for scope in ("requests", "limits")
        for name in _STANDARD_CONTAINER_RESOURCES
    }
    | {
        "pods",
        "quota",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)
_INIT_ONLY_FORBIDDEN = "may not be set for init containers without restartPolicy=Always"


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _dicts(value: object) -> list[JSON]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _label(value: str, path: str) -> ErrorList:
    return [field.invalid(path, value, msg) for msg in is_dns1123_label(value)]


def _subdomain(value: str, path: str) -> ErrorList:
    return [field.invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def _supported(value: object, path: str, supported: tuple[str, ...]) -> ErrorList:
    """An optional (defaulted) enum: checked when set."""
    if value in (None, ""):
        return []
    if value not in supported:
        return [field.not_supported(path, value, supported)]
    return []


# ----------------------------------------------------------------- containers


def _ports(ports: list[JSON], path: str) -> ErrorList:
    errs: ErrorList = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = field.index(path, i)
        name = str(port.get("name") or "")
        if name:
            msgs = is_valid_port_name(name)
            if msgs:
                errs += [field.invalid(field.child(p, "name"), name, m) for m in msgs]
            elif name in names:
                errs.append(field.duplicate(field.child(p, "name"), name))
            else:
                names.add(name)
        container_port = _int(port.get("containerPort")) or 0
        if container_port == 0:
            errs.append(field.required(field.child(p, "containerPort")))
        else:
            errs += [
                field.invalid(field.child(p, "containerPort"), container_port, m)
                for m in is_valid_port_num(container_port)
            ]
        host_port = _int(port.get("hostPort")) or 0
        if host_port:
            errs += [
                field.invalid(field.child(p, "hostPort"), host_port, m)
                for m in is_valid_port_num(host_port)
            ]
        errs += _supported(port.get("protocol"), field.child(p, "protocol"), PORT_PROTOCOLS)
    return errs


def _resource_name(name: str, path: str) -> ErrorList:
    """``validateContainerResourceName`` (the name is a ``ResourceName``: printed bare)."""
    shown = GoLiteral(name)
    errs = [field.invalid(path, shown, msg) for msg in is_qualified_name(name)]
    if not errs and "/" not in name and not _standard_resource(name):
        errs.append(
            field.invalid(path, shown, "must be a standard resource type or fully qualified")
        )
    standard = name in _STANDARD_CONTAINER_RESOURCES or name.startswith("hugepages-")
    if "/" not in name and not standard:
        errs.append(field.invalid(path, shown, "must be a standard resource for containers"))
    return errs


def _standard_resource(name: str) -> bool:
    return name in _STANDARD_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-"))


def _overcommit_allowed(name: str) -> bool:
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _resources(resources: JSON, path: str) -> ErrorList:
    errs: ErrorList = []
    lim_path, req_path = field.child(path, "limits"), field.child(path, "requests")
    limits = {str(k): quantity.parse(v) for k, v in _dict(resources.get("limits")).items()}
    requests = {str(k): quantity.parse(v) for k, v in _dict(resources.get("requests")).items()}
    for name, amount in sorted(limits.items()):
        p = field.key(lim_path, name)
        errs += _resource_name(name, p)
        if amount is not None and amount.is_negative():
            errs.append(field.invalid(p, str(amount), IS_NEGATIVE))
    for name, amount in sorted(requests.items()):
        p = field.key(req_path, name)
        errs += _resource_name(name, p)
        if amount is None:
            continue
        if amount.is_negative():
            errs.append(field.invalid(p, str(amount), IS_NEGATIVE))
        limit = limits.get(name)
        if name in limits and limit is not None:
            if amount.value != limit.value and not _overcommit_allowed(name):
                errs.append(
                    field.invalid(
                        req_path, str(amount), f"must be equal to {name} limit of {limit}"
                    )
                )
            elif amount.value > limit.value:
                errs.append(
                    field.invalid(
                        req_path,
                        str(amount),
                        f"must be less than or equal to {name} limit of {limit}",
                    )
                )
        elif name not in limits and not _overcommit_allowed(name):
            errs.append(
                field.required(lim_path, "Limit must be set for non overcommitable resources")
            )
    return errs


def _volume_mounts(mounts: list[JSON], volumes: set[str], path: str) -> ErrorList:
    errs: ErrorList = []
    mount_points: set[str] = set()
    for i, mount in enumerate(mounts):
        p = field.index(path, i)
        name = str(mount.get("name") or "")
        if not name:
            errs.append(field.required(field.child(p, "name")))
        if name not in volumes:
            errs.append(field.not_found(field.child(p, "name"), name))
        mount_path = str(mount.get("mountPath") or "")
        if not mount_path:
            errs.append(field.required(field.child(p, "mountPath")))
        if mount_path in mount_points:
            errs.append(field.invalid(field.child(p, "mountPath"), mount_path, "must be unique"))
        mount_points.add(mount_path)
    return errs


def _container_common(ctr: JSON, volumes: set[str], path: str) -> ErrorList:
    errs: ErrorList = []
    name = str(ctr.get("name") or "")
    if not name:
        errs.append(field.required(field.child(path, "name")))
    else:
        errs += _label(name, field.child(path, "name"))
    if not ctr.get("image"):
        errs.append(field.required(field.child(path, "image")))
    errs += _supported(
        ctr.get("terminationMessagePolicy"),
        field.child(path, "terminationMessagePolicy"),
        _TERMINATION_MESSAGE_POLICIES,
    )
    errs += _ports(_dicts(ctr.get("ports")), field.child(path, "ports"))
    errs += _volume_mounts(
        _dicts(ctr.get("volumeMounts")), volumes, field.child(path, "volumeMounts")
    )
    errs += _supported(
        ctr.get("imagePullPolicy"), field.child(path, "imagePullPolicy"), _PULL_POLICIES
    )
    errs += _resources(_dict(ctr.get("resources")), field.child(path, "resources"))
    return errs


def _containers(containers: list[JSON], volumes: set[str], path: str) -> ErrorList:
    if not containers:
        return [field.required(path)]
    errs: ErrorList = []
    names: set[str] = set()
    for i, ctr in enumerate(containers):
        p = field.index(path, i)
        errs += _container_common(ctr, volumes, p)
        name = str(ctr.get("name") or "")
        if name in names:
            errs.append(field.duplicate(field.child(p, "name"), name))
        else:
            names.add(name)
        if ctr.get("restartPolicy") is not None:
            errs.append(
                field.forbidden(
                    field.child(p, "restartPolicy"), "may not be set for non-init containers"
                )
            )
    return errs


def _init_containers(
    inits: list[JSON], containers: list[JSON], volumes: set[str], path: str
) -> ErrorList:
    errs: ErrorList = []
    names = {str(c.get("name") or "") for c in containers}
    for i, ctr in enumerate(inits):
        p = field.index(path, i)
        errs += _container_common(ctr, volumes, p)
        policy = ctr.get("restartPolicy")
        if policy is not None and policy != "Always":
            errs.append(field.not_supported(field.child(p, "restartPolicy"), policy, ["Always"]))
        name = str(ctr.get("name") or "")
        if name in names:
            errs.append(field.duplicate(field.child(p, "name"), name))
        elif name:
            names.add(name)
        if policy != "Always":
            for probe in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(probe) is not None:
                    errs.append(field.forbidden(field.child(p, probe), _INIT_ONLY_FORBIDDEN))
    return errs


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
            found += _label(name, field.child(p, "name"))
        if name in names:
            found.append(field.duplicate(field.child(p, "name"), name))
        if found:
            errs += found
        else:
            names.add(name)
    return names, errs


def validate_pod_spec(spec: JSON, path: str) -> ErrorList:
    """``ValidatePodSpec`` (the checks listed in the module docstring)."""
    volumes, errs = _volumes(_dicts(spec.get("volumes")), field.child(path, "volumes"))
    containers = _dicts(spec.get("containers"))
    errs += _containers(containers, volumes, field.child(path, "containers"))
    errs += _init_containers(
        _dicts(spec.get("initContainers")), containers, volumes, field.child(path, "initContainers")
    )
    errs += _supported(
        spec.get("restartPolicy"), field.child(path, "restartPolicy"), RESTART_POLICIES
    )
    errs += _supported(spec.get("dnsPolicy"), field.child(path, "dnsPolicy"), _DNS_POLICIES)
    errs += validate_labels(spec.get("nodeSelector"), field.child(path, "nodeSelector"))
    for name in ("serviceAccountName", "nodeName"):
        if spec.get(name):
            errs += _subdomain(str(spec[name]), field.child(path, name))
    deadline = _int(spec.get("activeDeadlineSeconds"))
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
            errs += _label(str(spec[name]), field.child(path, name))
    if spec.get("priorityClassName"):
        errs += _subdomain(str(spec["priorityClassName"]), field.child(path, "priorityClassName"))
    return errs


def validate_pod(pod: JSON) -> ErrorList:
    """``ValidatePodCreate``: metadata (a DNS subdomain name), the spec, no ephemeral
    containers, no nodeName while scheduling gates remain."""
    meta, spec = _dict(pod.get("metadata")), _dict(pod.get("spec"))
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
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    return errs + validate_pod_spec(spec, "spec")


def validate_pod_template_spec(template: JSON, path: str) -> ErrorList:
    """``ValidatePodTemplateSpec``: template labels, annotations and pod spec."""
    meta, spec = _dict(template.get("metadata")), _dict(template.get("spec"))
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
                    "must not have leading or trailing whitespace",
                )
            )
    return errs, False


def validate_pod_update(new: JSON, old: JSON) -> ErrorList:
    """``ValidatePodUpdate``: metadata update, the new pod valid, then only the
    updatable spec fields changed."""
    new_meta, old_meta = _dict(new.get("metadata")), _dict(old.get("metadata"))
    errs = validate_object_meta_update(new_meta, old_meta)
    new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    errs += _pod_metadata_and_spec(new_meta, new_spec)
    for name in ("containers", "initContainers"):
        found, stop = _container_updates(
            _dicts(new_spec.get(name)), _dicts(old_spec.get(name)), field.child("spec", name)
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
        _dicts(new_spec.get("tolerations")), _dicts(old_spec.get("tolerations"))
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
    return []


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
    is compared as kube compares defaulted objects (this server does not default). An
    unset imagePullPolicy is taken from ``like`` (the stored spec) when it has the
    container: kube defaulted it from the image the pod was created with."""
    out = {**_POD_SPEC_DEFAULTS, **copy.deepcopy(spec)}
    for name in ("containers", "initContainers"):
        if isinstance(out.get(name), list):
            stored = _dicts((like or {}).get(name))
            out[name] = [
                _defaulted_container(c, stored[i] if i < len(stored) else None)
                for i, c in enumerate(_dicts(out[name]))
            ]
    return out


def _defaulted_container(ctr: JSON, like: JSON | None) -> JSON:
    policy = like.get("imagePullPolicy") if like else _pull_policy(ctr.get("image"))
    out = {**_CONTAINER_DEFAULTS, "imagePullPolicy": policy, **ctr}
    if isinstance(out.get("ports"), list):
        out["ports"] = [{"protocol": "TCP", **p} for p in _dicts(out["ports"])]
    return out


def _munged(new: JSON, old: JSON) -> JSON:
    """The new spec with every updatable field set back to the old value."""
    munged = copy.deepcopy(new)
    for name in ("containers", "initContainers"):
        olds = _dicts(old.get(name))
        for i, ctr in enumerate(_dicts(munged.get(name))):
            if "image" in olds[i]:
                ctr["image"] = olds[i]["image"]
            else:
                ctr.pop("image", None)
    for name in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        if name in old:
            munged[name] = copy.deepcopy(old[name])
        else:
            munged.pop(name, None)
    old_grace = _int(old.get("terminationGracePeriodSeconds"))
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
