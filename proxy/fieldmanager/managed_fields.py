"""``metadata.managedFields`` encoded and decoded, as k8s.io/apimachinery's
``managedfields/internal`` does.

In memory, :class:`Managed` maps a manager *identifier* to its :class:`VersionedSet`
and time. The identifier is upstream's: the JSON of the entry without its fields and
time, without ``apiVersion`` for appliers (an applier keeps one entry whatever version
it applies), e.g. ``{"manager":"kubectl","operation":"Apply"}``,
``{"manager":"kube-controller-manager","operation":"Update","apiVersion":"apps/v1"}``,
``{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1","subresource":"scale"}``.

Encoding sorts entries as upstream (operation, time, manager, apiVersion, subresource:
``Apply`` before ``Update``, oldest first) and writes each entry's keys in upstream's
order. Decoding raises :class:`ValueError` on anything upstream refuses.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from proxy.fieldmanager.fieldpath import Set

__all__ = [
    "Managed",
    "VersionedSet",
    "decode",
    "encode",
    "identifier",
    "is_reset",
    "parse_identifier",
    "rfc3339",
]

APPLY, UPDATE = "Apply", "Update"


@dataclass
class VersionedSet:
    set: Set
    api_version: str
    applied: bool


@dataclass
class Managed:
    fields: dict[str, VersionedSet] = field(default_factory=dict)
    times: dict[str, str] = field(default_factory=dict)


def identifier(manager: str, operation: str, api_version: str, subresource: str = "") -> str:
    """Upstream's ``BuildManagerIdentifier`` (Go's json.Marshal of the reduced entry)."""
    entry: dict[str, str] = {"manager": manager, "operation": operation}
    if operation != APPLY and api_version:
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return orjson.dumps(entry).decode()


def parse_identifier(ident: str) -> dict[str, str]:
    try:
        found = orjson.loads(ident)
    except orjson.JSONDecodeError:
        return {"manager": ident}
    return found if isinstance(found, dict) else {"manager": ident}


def rfc3339(clock: Callable[[], datetime.datetime] | None = None) -> str:
    now = clock() if clock else datetime.datetime.now(datetime.UTC)
    return now.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_reset(entries: Any) -> bool:
    """A write that resets managedFields: ``[]`` or ``[{}]`` (upstream's
    ``isResetManagedFields``)."""
    return isinstance(entries, list) and (entries == [] or entries == [{}])


def decode(entries: Any) -> Managed:
    """The managed fields of an object's ``metadata.managedFields`` (None → empty)."""
    managed = Managed()
    if entries is None:
        return managed
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError("managedFields entry must be an object")
        operation = entry.get("operation")
        if operation not in (APPLY, UPDATE):
            raise ValueError(f"operation must be `Apply` or `Update`, got {operation!r}")
        if entry.get("fieldsType", "FieldsV1") != "FieldsV1":
            raise ValueError(f"fieldsType must be FieldsV1, got {entry.get('fieldsType')!r}")
        ident = identifier(
            str(entry.get("manager") or ""), operation, str(entry.get("apiVersion") or ""),
            str(entry.get("subresource") or ""),
        )  # fmt: skip
        if ident in managed.fields:
            raise ValueError(f"duplicate entry for manager {ident}")
        fields_v1 = entry.get("fieldsV1")
        s = Set() if fields_v1 is None else Set.from_fields_v1(fields_v1)
        managed.fields[ident] = VersionedSet(
            s, str(entry.get("apiVersion") or ""), operation == APPLY
        )
        if entry.get("time"):
            managed.times[ident] = str(entry["time"])
    return managed


def _time_seconds(value: str | None) -> float:
    if not value:
        return 0.0
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def encode(managed: Managed) -> list[dict[str, Any]]:
    """The ``metadata.managedFields`` list (empty sets are left out)."""
    entries: list[dict[str, Any]] = []
    for ident, vs in managed.fields.items():
        if vs.set.empty():
            continue
        info = parse_identifier(ident)
        entry: dict[str, Any] = {
            "manager": info.get("manager", ""),
            "operation": APPLY if vs.applied else UPDATE,
            "apiVersion": vs.api_version,
        }
        if ident in managed.times:
            entry["time"] = managed.times[ident]
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = vs.set.to_fields_v1()
        if info.get("subresource"):
            entry["subresource"] = info["subresource"]
        entries.append(entry)
    entries.sort(
        key=lambda e: (
            e["operation"], _time_seconds(e.get("time")), e["manager"], e["apiVersion"],
            e.get("subresource", ""),
        )
    )  # fmt: skip
    return entries


DEFAULT_MAX_UPDATE_MANAGERS = 10
OLD_UPDATES_MANAGER = "ancient-changes"


def cap_update_managers(managed: Managed, limit: int = DEFAULT_MAX_UPDATE_MANAGERS) -> None:
    """Upstream's ``capManagersManager``: with more than ``limit`` Update entries, the
    oldest are merged, per apiVersion, into an ``ancient-changes`` entry."""
    updaters = [m for m, vs in managed.fields.items() if not vs.applied]
    if len(updaters) <= limit:
        return
    updaters.sort(key=lambda m: (int(_time_seconds(managed.times.get(m))), m))
    first_by_version: dict[str, str] = {}
    length = len(updaters)
    for manager in updaters:
        if length <= limit:
            break
        vs = managed.fields[manager]
        when = managed.times.get(manager)
        bucket = identifier(OLD_UPDATES_MANAGER, UPDATE, vs.api_version)
        first = first_by_version.get(vs.api_version)
        if first is None:
            first_by_version[vs.api_version] = manager
            continue
        if bucket not in managed.fields:
            managed.fields[bucket] = managed.fields.pop(first)
            if first in managed.times:
                managed.times[bucket] = managed.times.pop(first)
            first_by_version[vs.api_version] = bucket
        if manager == bucket:
            continue
        merged = managed.fields[bucket].set.union(vs.set)
        managed.fields[bucket] = VersionedSet(merged, vs.api_version, False)
        del managed.fields[manager]
        managed.times.pop(manager, None)
        length -= 1
        if when:
            managed.times[bucket] = when
