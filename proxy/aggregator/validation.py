"""APIService validation and strategy (kube-aggregator's
``pkg/apis/apiregistration/validation`` and ``pkg/registry/apiservice``): the name is
``<version>.<group>``, priorities in range, caBundle/insecureSkipTLSVerify rules, the
service reference; a new APIService starts without status; the resource its REST storage
serves. The object itself: ``proxy.aggregator.apiservice``."""

from __future__ import annotations

import dataclasses
from typing import Any

from proxy.aggregator.apiservice import GROUP, ca_bundle_bytes
from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.names import (
    is_dns1035_label,
    is_dns1123_subdomain,
    is_valid_port_num,
    path_segment_name,
)
from proxy.apimachinery.validation.object_meta import validate_object_meta
from proxy.registry.catalogue import catalogued
from proxy.registry.resources import ResourceInfo
from proxy.registry.validation.strategy import KindStrategy

__all__ = [
    "STRATEGY",
    "apiservice_resource",
    "prepare_create",
    "prepare_update",
    "validate",
    "validate_status_update",
    "validate_update",
]

JSON = dict[str, Any]
_EMPTY_GROUP = "only v1 may have an empty group and it better be legacy kube"


def apiservice_resource() -> ResourceInfo:
    """apiservices as kube-aggregator's REST storage serves them: with status."""
    return dataclasses.replace(catalogued(GROUP, "v1", "apiservices"), subresources=("status",))


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _name_rule(required: str) -> Any:
    def rule(name: str, prefix: bool) -> list[str]:
        failures = path_segment_name(name, prefix)
        if failures:
            return failures
        if name != required:  # the name *must* be version.group
            return [f'must be `spec.version+"."+spec.group`: {field.go_quote(required)}']
        return []

    return rule


def validate(obj: JSON) -> ErrorList:
    """``ValidateAPIService``: the name is ``<version>.<group>``; an empty group only for
    ``v1``; group a DNS subdomain, version a DNS-1035 label; priorities in range; a local
    APIService has neither caBundle nor insecureSkipTLSVerify; a service reference has a
    namespace, a name and a valid port, and not both caBundle and insecureSkipTLSVerify."""
    spec = _dict(obj.get("spec"))
    group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
    errs = validate_object_meta(
        _dict(obj.get("metadata")), False, _name_rule(f"{version}.{group}"), core=False
    )
    if not group and version != "v1":
        errs.append(
            field.required(
                "spec.group", "only v1 may have an empty group and it better be legacy kube"
            )
        )
    if group:
        errs += [field.invalid("spec.group", group, m) for m in is_dns1123_subdomain(group)]
    errs += [field.invalid("spec.version", version, m) for m in is_dns1035_label(version)]
    gpm, vp = _int(spec.get("groupPriorityMinimum")), _int(spec.get("versionPriority"))
    if not 0 < gpm <= 20000:
        errs.append(
            field.invalid("spec.groupPriorityMinimum", gpm, "must be positive and less than 20000")
        )
    if not 0 < vp <= 1000:
        errs.append(
            field.invalid("spec.versionPriority", vp, "must be positive and less than 1000")
        )
    ca = ca_bundle_bytes(spec)
    insecure = spec.get("insecureSkipTLSVerify") is True
    service = spec.get("service")
    if not isinstance(service, dict):
        if ca:
            errs.append(
                field.invalid(
                    "spec.caBundle", f"{len(ca)} bytes", "local APIServices may not have a caBundle"
                )
            )
        if insecure:
            errs.append(
                field.invalid(
                    "spec.insecureSkipTLSVerify",
                    True,
                    "local APIServices may not have insecureSkipTLSVerify",
                )
            )
        return errs
    if not service.get("namespace"):
        errs.append(field.required("spec.service.namespace"))
    if not service.get("name"):
        errs.append(field.required("spec.service.name"))
    port = _int(service.get("port"), 443)
    port_errs = is_valid_port_num(port)
    if port_errs:
        errs.append(
            field.invalid("spec.service.port", port, "port is not valid: " + ", ".join(port_errs))
        )
    if insecure and ca:
        errs.append(
            field.invalid(
                "spec.insecureSkipTLSVerify", True, "may not be true if caBundle is present"
            )
        )
    return errs


def validate_update(new: JSON, old: JSON) -> ErrorList:
    """``ValidateAPIServiceUpdate``: the whole object again (metadata update rules are
    checked by the caller)."""
    return validate(new)


_STATUSES = ["True", "False", "Unknown"]


def validate_status_update(new: JSON, old: JSON) -> ErrorList:
    """``ValidateAPIServiceStatusUpdate``: every condition's status is True, False or
    Unknown (nothing else is checked upstream, not even the type)."""
    errs: ErrorList = []
    conditions = _dict(new.get("status")).get("conditions") or []
    for i, cond in enumerate(conditions if isinstance(conditions, list) else []):
        status = _dict(cond).get("status")
        if status not in _STATUSES:
            path = field.child(field.index("status.conditions", i), "status")
            errs.append(field.not_supported(path, status, _STATUSES))
    return errs


def set_defaults(obj: JSON) -> None:
    """``SetDefaults_ServiceReference``: ``spec.service.port`` is 443 when unset."""
    service = _dict(obj.get("spec")).get("service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


def prepare_create(obj: JSON) -> None:
    """Defaults, then ``PrepareForCreate``: a new APIService starts without status."""
    set_defaults(obj)
    obj.pop("status", None)


def prepare_update(new: JSON, old: JSON) -> None:
    """``PrepareForUpdate``: the main resource keeps the stored status (the generic
    update already does; kept as the strategy's named step)."""
    set_defaults(new)
    if "status" in old:
        new["status"] = old["status"]
    else:
        new.pop("status", None)


# the APIService's strategy, registered by the composition root
STRATEGY = KindStrategy(
    validate,
    validate_update,
    prepare_create=prepare_create,
    prepare_update=prepare_update,
    validate_status_update=validate_status_update,
    core_meta=False,
)
