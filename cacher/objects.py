"""What the cache keeps per object version and per change.

A ``CachedObject`` is one version: the final JSON bytes (``StoredObject``, resourceVersion
set, encoded once) plus the selector attributes computed once when the version entered
the cache. The decoded dict is never kept: memory per object stays close to its JSON size.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Literal

from storage.codec import decode_object, with_resource_version
from storage.errors import CorruptObject
from storage.interfaces import AttrsFunc, JSONObject, SelectionPredicate, StoredObject

ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]

_EMPTY: Mapping[str, str] = {}


class CachedObject:
    __slots__ = ("fields", "labels", "stored")

    def __init__(
        self, stored: StoredObject, labels: Mapping[str, str], fields: Mapping[str, str]
    ) -> None:
        self.stored = stored
        self.labels = labels
        self.fields = fields

    @property
    def key(self) -> str:
        return self.stored.key

    @property
    def resource_version(self) -> int:
        return self.stored.resource_version

    def matches(self, pred: SelectionPredicate) -> bool:
        """The predicate's selectors against the attributes computed at insert time."""
        if pred.label is not None and not pred.label.empty and not pred.label.matches(self.labels):
            return False
        return pred.field is None or pred.field.empty or pred.field.matches(self.fields)


class AttrsCache:
    """Computes selector attributes of a version once, interning repeated strings
    (node names, namespaces, phases, label values) so 10,000 pods share them."""

    def __init__(self, attrs: AttrsFunc | None) -> None:
        self._attrs = attrs
        self._intern: dict[str, str] = {}

    def cached(self, stored: StoredObject, obj: JSONObject | None = None) -> CachedObject:
        """``stored`` as the cache keeps it: bytes without the decoded dict, plus attrs
        computed from ``obj`` (the decoded form, if the caller has it) or a transient
        decode. CorruptObject when the object's labels or selectable fields are not what
        its type says (``labels: {"a": 1}``): kube-apiserver could not decode it either,
        and a cache must not hold what its selectors cannot read."""
        if stored._obj is not None:  # never keep the dict: memory ≈ JSON size
            obj = stored._obj
            fresh = StoredObject(stored.key, stored.data, stored.resource_version)
            # but keep the protobuf value it was read from: protobuf answers start there
            fresh._encodings = stored._encodings
            stored = fresh
        if self._attrs is None:
            return CachedObject(stored, _EMPTY, _EMPTY)
        if obj is None:
            obj = decode_object(stored.key, stored.data, stored.resource_version)
        try:
            labels, fields = self._attrs(obj)
            return CachedObject(stored, self._shrink(labels), self._shrink(fields))
        except (TypeError, ValueError, AttributeError, KeyError) as err:
            raise CorruptObject(stored.key, f"unreadable attributes: {err}",
                                stored.resource_version) from err  # fmt: skip

    def _shrink(self, m: Mapping[str, str]) -> Mapping[str, str]:
        if not m:
            return _EMPTY
        if not isinstance(m, Mapping):
            raise TypeError(f"expected a map of strings, got {type(m).__name__}")
        intern = self._intern
        out: dict[str, str] = {}
        for k, v in m.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"{k!r}: {v!r}: expected a string")
            out[intern.setdefault(k, k)] = intern.setdefault(v, v) if len(v) < 64 else v
        if len(intern) > 200_000:  # bound the intern table; entries are cheap to rebuild
            intern.clear()
        return out


class WatchCacheEvent:
    """One change as the cache saw it.

    ``object`` is the new version; for DELETED it is the last state re-encoded with the
    deletion revision (attrs of the last state). ``prev`` is the version replaced (None on
    ADDED). ``prev_at_rv()`` is the previous version re-encoded with this event's RV, for
    watchers whose selector the object leaves — computed lazily, once per event.
    """

    __slots__ = ("_prev_at_rv", "key", "object", "prev", "record_time", "resource_version", "type")

    def __init__(
        self,
        type: ChangeType,
        object: CachedObject,
        prev: CachedObject | None,
        resource_version: int,
        record_time: float,
    ) -> None:
        self.type = type
        self.key = object.key
        self.object = object
        self.prev = prev
        self.resource_version = resource_version
        self.record_time = record_time
        self._prev_at_rv: bytes | None = None

    def prev_at_rv(self) -> bytes:
        assert self.prev is not None
        if self._prev_at_rv is None:
            self._prev_at_rv = with_resource_version(self.prev.stored, self.resource_version).data
        return self._prev_at_rv

    def __repr__(self) -> str:
        return f"WatchCacheEvent({self.type}, {self.key!r}, rv={self.resource_version})"


def held_bytes(obj: CachedObject) -> tuple[int, int]:
    """What the cache holds for one version: (its JSON bytes, everything it keeps —
    the JSON, other encodings, Table row, gzip segments, selector attributes and the
    objects holding them; interned strings shared by many versions are not counted)."""
    stored = obj.stored
    size = sys.getsizeof(obj) + sys.getsizeof(stored) + len(stored.data)
    size += _size(stored._encodings) + _attrs_size(obj.labels) + _attrs_size(obj.fields)
    return len(stored.data), size


def _attrs_size(m: Mapping[str, str]) -> int:
    """A selector-attribute map: its dict, and the values no other version shares (one
    reference from the map, one from the intern table; getrefcount adds its own)."""
    if m is _EMPTY:
        return 0
    return sys.getsizeof(m) + sum(sys.getsizeof(v) for v in m.values() if sys.getrefcount(v) <= 3)


def _size(value: object) -> int:
    if value is None or value is _EMPTY:
        return 0
    if isinstance(value, bytes | str):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(_size(v) for v in value.values())
    if isinstance(value, tuple | list):
        return sys.getsizeof(value) + sum(_size(v) for v in value)
    slots = getattr(type(value), "__slots__", ())
    return sys.getsizeof(value) + sum(_size(getattr(value, s, None)) for s in slots)
