"""Containers and init containers of a pod spec, as ``pkg/apis/core/validation``
checks them (``validateContainers``, ``validateInitContainers``,
``validateContainerCommon``): names DNS-1123 labels, unique across containers and
initContainers; image required; ports (1..65535, protocol TCP/UDP/SCTP, named ports
unique); env var names; imagePullPolicy and terminationMessagePolicy supported values;
resources (standard names, non-negative, requests <= limits); volumeMounts naming a
volume; probes and lifecycle handlers (one handler type; liveness and startup probes
succeed once); probes/lifecycle forbidden on init containers without restartPolicy
Always.

Fields kube's defaulting fills in (protocol, imagePullPolicy, terminationMessagePolicy,
probe thresholds, httpGet path and scheme; ``proxy.kube.defaulting`` sets them before
validation) are only checked when set.
"""

from __future__ import annotations

from typing import Any

from proxy.apimachinery import quantity
from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList, GoLiteral
from proxy.apimachinery.validation.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_port_name,
    is_valid_port_num,
)
from proxy.apimachinery.validation.object_meta import IS_NEGATIVE, validate_nonnegative

__all__ = [
    "PORT_PROTOCOLS",
    "RESTART_POLICIES",
    "as_int",
    "as_object",
    "as_objects",
    "dns_label",
    "dns_subdomain",
    "optional_enum",
    "validate_containers",
    "validate_init_containers",
]

JSON = dict[str, Any]

PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
_PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
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
        "resourcequotas",
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
_INIT_ONLY_FORBIDDEN = "may not be set for init containers without restartPolicy=Always"
_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc", "sleep")
_RELAXED_ENV_NAME_MSG = (
    "a valid environment variable name must consist only of printable ASCII characters "
    "other than '='"
)


def as_object(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def as_objects(value: object) -> list[JSON]:
    """A list of JSON objects (anything else in it read as empty)."""
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def dns_label(value: str, path: str) -> ErrorList:
    return [field.invalid(path, value, msg) for msg in is_dns1123_label(value)]


def dns_subdomain(value: str, path: str) -> ErrorList:
    return [field.invalid(path, value, msg) for msg in is_dns1123_subdomain(value)]


def optional_enum(value: object, path: str, supported: tuple[str, ...]) -> ErrorList:
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
        container_port = as_int(port.get("containerPort")) or 0
        if container_port == 0:
            errs.append(field.required(field.child(p, "containerPort")))
        else:
            errs += [
                field.invalid(field.child(p, "containerPort"), container_port, m)
                for m in is_valid_port_num(container_port)
            ]
        host_port = as_int(port.get("hostPort")) or 0
        if host_port:
            errs += [
                field.invalid(field.child(p, "hostPort"), host_port, m)
                for m in is_valid_port_num(host_port)
            ]
        errs += optional_enum(port.get("protocol"), field.child(p, "protocol"), PORT_PROTOCOLS)
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
    limits = {str(k): quantity.parse(v) for k, v in as_object(resources.get("limits")).items()}
    requests = {str(k): quantity.parse(v) for k, v in as_object(resources.get("requests")).items()}
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


def _env(env: list[JSON], path: str) -> ErrorList:
    """``ValidateEnv`` with RelaxedEnvironmentVariableValidation (on since 1.32): names
    of printable ASCII other than ``=``."""
    errs: ErrorList = []
    for i, var in enumerate(env):
        p = field.child(field.index(path, i), "name")
        name = str(var.get("name") or "")
        if not name:
            errs.append(field.required(p))
        elif any(not (" " <= ch <= "~") or ch == "=" for ch in name):
            errs.append(field.invalid(p, name, _RELAXED_ENV_NAME_MSG))
    return errs


def _handler(handler: JSON, path: str) -> ErrorList:
    """``validateHandler``: exactly one handler type, each with what it needs (the
    first type's own errors come before the refusals of the others)."""
    kinds = [k for k in _HANDLERS if handler.get(k) is not None]
    if not kinds:
        return [field.required(path, "must specify a handler type")]
    kind, action = kinds[0], as_object(handler.get(kinds[0]))
    action_path = field.child(path, kind)
    errs: ErrorList = []
    if kind == "exec" and not action.get("command"):
        errs.append(field.required(field.child(action_path, "command")))
    elif kind in ("httpGet", "tcpSocket"):
        errs += _port_num_or_name(action.get("port"), field.child(action_path, "port"))
        scheme = action.get("scheme")
        if kind == "httpGet" and scheme not in (None, "", "HTTP", "HTTPS"):
            shown = field.child(action_path, "scheme")
            errs.append(field.not_supported(shown, scheme, ["HTTP", "HTTPS"]))
    more = "may not specify more than 1 handler type"
    return errs + [field.forbidden(field.child(path, extra), more) for extra in kinds[1:]]


def _port_num_or_name(port: object, path: str) -> ErrorList:
    if isinstance(port, str):
        return [field.invalid(path, port, m) for m in is_valid_port_name(port)]
    number = as_int(port) or 0
    return [field.invalid(path, number, m) for m in is_valid_port_num(number)]


def _probe(probe: object, path: str, kind: str) -> ErrorList:
    """``validateProbe`` plus the liveness/readiness/startup rules."""
    if not isinstance(probe, dict):
        return []
    errs = _handler(probe, path)
    for name in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        errs += validate_nonnegative(probe.get(name), field.child(path, name))
    grace = as_int(probe.get("terminationGracePeriodSeconds"))
    if grace is not None and grace <= 0:
        errs.append(
            field.invalid(
                field.child(path, "terminationGracePeriodSeconds"), grace, "must be greater than 0"
            )
        )
    success = probe.get("successThreshold")
    if kind != "readinessProbe" and success not in (None, 1):
        errs.append(field.invalid(field.child(path, "successThreshold"), success, "must be 1"))
    if kind == "readinessProbe" and probe.get("terminationGracePeriodSeconds") is not None:
        shown = probe["terminationGracePeriodSeconds"]
        errs.append(
            field.invalid(
                field.child(path, "terminationGracePeriodSeconds"),
                shown,
                "must not be set for readinessProbes",
            )
        )
    return errs


def _probes_and_lifecycle(ctr: JSON, path: str) -> ErrorList:
    errs: ErrorList = []
    lifecycle = ctr.get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                errs += _handler(lifecycle[hook], field.child(path, "lifecycle", hook))
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        errs += _probe(ctr.get(kind), field.child(path, kind), kind)
    return errs


def _container_common(ctr: JSON, volumes: set[str], path: str) -> ErrorList:
    errs: ErrorList = []
    name = str(ctr.get("name") or "")
    if not name:
        errs.append(field.required(field.child(path, "name")))
    else:
        errs += dns_label(name, field.child(path, "name"))
    if not ctr.get("image"):
        errs.append(field.required(field.child(path, "image")))
    errs += optional_enum(
        ctr.get("terminationMessagePolicy"),
        field.child(path, "terminationMessagePolicy"),
        _TERMINATION_MESSAGE_POLICIES,
    )
    errs += _ports(as_objects(ctr.get("ports")), field.child(path, "ports"))
    errs += _env(as_objects(ctr.get("env")), field.child(path, "env"))
    errs += _volume_mounts(
        as_objects(ctr.get("volumeMounts")), volumes, field.child(path, "volumeMounts")
    )
    errs += optional_enum(
        ctr.get("imagePullPolicy"), field.child(path, "imagePullPolicy"), _PULL_POLICIES
    )
    errs += _resources(as_object(ctr.get("resources")), field.child(path, "resources"))
    return errs


def validate_containers(containers: list[JSON], volumes: set[str], path: str) -> ErrorList:
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
        errs += _probes_and_lifecycle(ctr, p)
        if ctr.get("restartPolicy") is not None:
            errs.append(
                field.forbidden(
                    field.child(p, "restartPolicy"), "may not be set for non-init containers"
                )
            )
    return errs


def validate_init_containers(
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
        if policy == "Always":
            errs += _probes_and_lifecycle(ctr, p)
        else:
            for probe in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if ctr.get(probe) is not None:
                    errs.append(field.forbidden(field.child(p, probe), _INIT_ONLY_FORBIDDEN))
    return errs
