"""Core v1 Events, as kube validates them through the v1 API: only the legacy checks
(``legacyValidateEvent``), kept for backwards compatibility; their names are path
segments, not DNS names.
"""

from __future__ import annotations

from typing import Any

from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.names import is_dns1123_subdomain
from proxy.apimachinery.validation.object_meta import validate_qualified_name

__all__ = ["validate_event", "validate_event_update"]

JSON = dict[str, Any]


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


_EVENT_LIMITS = (("action", 128), ("reason", 128), ("message", 1024))


def validate_event(event: JSON) -> ErrorList:
    """``legacyValidateEvent``, all kube checks of a core v1 Event (its name is only a
    path segment): the namespace agrees with ``involvedObject.namespace``; an event with
    an ``eventTime`` names its reporting component, instance, action and reason."""
    meta = _dict(event.get("metadata"))
    namespace = str(meta.get("namespace") or "")
    involved = str(_dict(event.get("involvedObject")).get("namespace") or "")
    path = "involvedObject.namespace"
    mismatch = field.invalid(path, involved, "does not match event.namespace")
    errs: ErrorList = []
    if not event.get("eventTime"):
        if (not involved and namespace not in ("", "default")) or (
            involved and namespace != involved
        ):
            errs.append(mismatch)
    else:
        if not involved and namespace not in ("default", "kube-system"):
            errs.append(mismatch)
        component = str(event.get("reportingComponent") or "")
        if not component:
            errs.append(field.required("reportingComponent"))
        errs += validate_qualified_name(component, "reportingComponent")
        instance = str(event.get("reportingInstance") or "")
        if not instance:
            errs.append(field.required("reportingInstance"))
        if len(instance) > 128:
            errs.append(field.invalid("reportingInstance", "", "can have at most 128 characters"))
        for name, limit in _EVENT_LIMITS:
            value = str(event.get(name) or "")
            if not value and name != "message":
                errs.append(field.required(name))
            if len(value) > limit:
                errs.append(field.invalid(name, "", f"can have at most {limit} characters"))
    return errs + [
        field.invalid("namespace", namespace, m) for m in is_dns1123_subdomain(namespace)
    ]


def validate_event_update(new: JSON, old: JSON) -> ErrorList:
    return validate_event(new)
