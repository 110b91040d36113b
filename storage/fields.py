"""Selectable fields per resource (upstream ``pkg/registry/*/strategy.go``): each
registry's ``ToSelectableFields`` / ``GetAttrs`` and the field label conversion functions.

Every resource offers ``metadata.name`` and ``metadata.namespace``; some add their own.
Field values are strings as upstream renders them (booleans ``"true"``/``"false"``,
absent fields ``""``). ``attrs_func(resource)`` gives the ``AttrsFunc`` a
``SelectionPredicate`` needs; ``validate_field_selector`` rejects labels the resource
does not support with ``field label not supported: <label>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from storage.interfaces import AttrsFunc, JSONObject
from storage.selectors import FieldSelector, SelectorError

_Extractor = Callable[[JSONObject], str]


def _path(*names: str) -> _Extractor:
    """The string at a nested path; "" when absent (like a Go zero value)."""

    def get(obj: JSONObject) -> str:
        cur: Any = obj
        for name in names:
            if not isinstance(cur, dict):
                return ""
            cur = cur.get(name)
        return _render(cur)

    return get


def _render(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bool_path(*names: str) -> _Extractor:
    """A boolean rendered with strconv.FormatBool (absent = false)."""
    inner = _path(*names)

    def get(obj: JSONObject) -> str:
        return inner(obj) or "false"

    return get


def _int_path(*names: str) -> _Extractor:
    """An int32 rendered with strconv.Itoa (absent = 0)."""
    inner = _path(*names)

    def get(obj: JSONObject) -> str:
        return inner(obj) or "0"

    return get


def _pod_ip(obj: JSONObject) -> str:
    # status.podIP, as ToSelectableFields reads the first of status.podIPs.
    status = obj.get("status")
    if not isinstance(status, dict):
        return ""
    ips = status.get("podIPs")
    if isinstance(ips, list) and ips and isinstance(ips[0], dict):
        return _render(ips[0].get("ip"))
    return _render(status.get("podIP"))


def _event_source(obj: JSONObject) -> str:
    source = _path("source", "component")(obj)
    return source or _path("reportingComponent")(obj)


_POD_FIELDS: dict[str, _Extractor] = {
    "spec.nodeName": _path("spec", "nodeName"),
    "spec.restartPolicy": _path("spec", "restartPolicy"),
    "spec.schedulerName": _path("spec", "schedulerName"),
    "spec.serviceAccountName": _path("spec", "serviceAccountName"),
    "spec.hostNetwork": _bool_path("spec", "hostNetwork"),
    "status.phase": _path("status", "phase"),
    "status.podIP": _pod_ip,
    "status.nominatedNodeName": _path("status", "nominatedNodeName"),
}

_EVENT_FIELDS: dict[str, _Extractor] = {
    **{
        f"involvedObject.{name}": _path("involvedObject", name)
        for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion")
    },
    "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _event_source,
    "type": _path("type"),
}

# Resource-specific fields, beyond metadata.name and metadata.namespace.
SPECIFIC_FIELDS: dict[str, dict[str, _Extractor]] = {
    "pods": _POD_FIELDS,
    "nodes": {"spec.unschedulable": _bool_path("spec", "unschedulable")},
    "secrets": {"type": _path("type")},
    "namespaces": {"status.phase": _path("status", "phase")},
    "events": _EVENT_FIELDS,
    "replicasets": {"status.replicas": _int_path("status", "replicas")},
    "replicationcontrollers": {"status.replicas": _int_path("status", "replicas")},
    "jobs": {"status.successful": _int_path("status", "successful")},
    "certificatesigningrequests": {"spec.signerName": _path("spec", "signerName")},
}

_META_FIELDS: dict[str, _Extractor] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}


def selectable_fields(resource: str) -> frozenset[str]:
    """The field labels ``resource`` supports in field selectors."""
    return frozenset(_META_FIELDS) | frozenset(SPECIFIC_FIELDS.get(resource, {}))


class _Fields(Mapping[str, str]):
    """An object's selectable fields, each computed when first looked up: a selector
    usually reads one or two of them, so building all of them per object is waste."""

    __slots__ = ("_cache", "_extractors", "_obj")

    def __init__(self, obj: JSONObject, extractors: Mapping[str, _Extractor]) -> None:
        self._obj = obj
        self._extractors = extractors
        self._cache: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        value = self._cache.get(name)
        if value is None:
            value = self._cache[name] = self._extractors[name](self._obj)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._extractors)

    def __len__(self) -> int:
        return len(self._extractors)

    def __repr__(self) -> str:
        return repr(dict(self))


def attrs_func(resource: str) -> AttrsFunc:
    """(labels, selectable fields) of an object of ``resource``, all values strings.
    The fields mapping computes each field on first access."""
    extractors = {**_META_FIELDS, **SPECIFIC_FIELDS.get(resource, {})}

    def get_attrs(obj: JSONObject) -> tuple[Mapping[str, str], Mapping[str, str]]:
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        return (labels if isinstance(labels, dict) else {}), _Fields(obj, extractors)

    return get_attrs


def validate_field_selector(resource: str, selector: FieldSelector) -> None:
    """SelectorError ``field label not supported: <label>`` for the first field (in the
    selector's order) that ``resource`` does not offer."""
    _check_terms(selectable_fields(resource), selector)


def _check_terms(supported: frozenset[str], selector: FieldSelector) -> None:
    for term in selector.terms:
        if term.field not in supported:
            raise SelectorError(f"field label not supported: {term.field}")


def validate_offered_fields(get_attrs: AttrsFunc, selector: FieldSelector) -> None:
    """``validate_field_selector`` for the fields ``get_attrs`` offers (every field an
    attrs function knows is listed by its fields mapping, whatever the object)."""
    _check_terms(frozenset(get_attrs({"metadata": {}})[1]), selector)
