"""``events.k8s.io/v1`` Events over the core ``v1`` Events they are stored as
(``pkg/apis/events/v1/conversion.go``): the same object, renamed fields —
``regarding``/``involvedObject``, ``note``/``message``, ``reportingController``/
``reportingComponent``, ``deprecatedSource``/``source``, ``deprecatedFirstTimestamp``/
``firstTimestamp``, ``deprecatedLastTimestamp``/``lastTimestamp``,
``deprecatedCount``/``count``. ``eventTime`` is written even when unset (null), as the
events.k8s.io type has no ``omitempty`` on it; ``deprecatedSource`` and ``regarding``
are structs, so present (``{}``) when empty.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EventConverter"]

JSON = dict[str, Any]

# core v1 name -> events.k8s.io/v1 name
_RENAMED = {
    "involvedObject": "regarding",
    "message": "note",
    "reportingComponent": "reportingController",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
_BACK = {new: old for old, new in _RENAMED.items()}
_EVENTS_V1 = "events.k8s.io/v1"


def to_events_v1(core: JSON) -> JSON:
    """A core Event as ``events.k8s.io/v1`` shows it."""
    out = {_RENAMED.get(k, k): v for k, v in core.items()}
    out["apiVersion"] = _EVENTS_V1
    out.setdefault("eventTime", None)
    for struct in ("regarding", "deprecatedSource"):
        if out.get(struct) is None:
            out[struct] = {}
    return out


def to_core(event: JSON) -> JSON:
    """An ``events.k8s.io/v1`` Event as the core Event it is stored as."""
    out = {_BACK.get(k, k): v for k, v in event.items()}
    out["apiVersion"] = "v1"
    if out.get("eventTime") is None:
        out.pop("eventTime", None)
    return out


class EventConverter:
    """Both directions, by the wanted apiVersion (``proxy.registry.conversion.Converter``)."""

    async def convert(self, objects: list[Any], api_version: str) -> list[Any]:
        convert = to_events_v1 if api_version == _EVENTS_V1 else to_core
        return [o if o.get("apiVersion") == api_version else convert(o) for o in objects]
