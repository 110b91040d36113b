"""What the cache keeps per object version and per change.

A ``CachedObject`` is one version: the final JSON bytes (``StoredObject``, resourceVersion
set, encoded once) plus the selector attributes computed once when the version entered
the cache. The decoded dict is never kept: memory per object stays close to its JSON size.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Literal

from storage.codec import decode_object, with_resource_version
from storage.errors import CorruptObject
from storage.interfaces import AttrsFunc, JSONObject, SelectionPredicate, StoredObject

ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]

_EMPTY: Mapping[str, str] = {}


class FieldLayout:
    """The selectable field names of a resource, in one order, shared by every version
    that has them: a version keeps its values as a tuple in this order (a 10-field dict
    per pod was ~360 bytes; the tuple is ~136)."""

    __slots__ = ("names", "position")

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.position = {n: i for i, n in enumerate(names)}


_NO_FIELDS = FieldLayout(())


class CachedObject:
    """One version as the cache holds it. ``_values[i]`` is the field
    ``_layout.names[i]``; None stands for the last segment of the key (the object's
    name, which the key already holds: no second copy of the one string unique to each
    object). ``labels`` may be shared by every version with equal labels (read-only)."""

    __slots__ = ("_layout", "_values", "labels", "stored")

    def __init__(
        self,
        stored: StoredObject,
        labels: Mapping[str, str],
        fields: Mapping[str, str] | None = None,
        *,
        layout: FieldLayout = _NO_FIELDS,
        values: tuple[str | None, ...] = (),
    ) -> None:
        """Either ``fields`` (a plain map: tests, the history's events) or the
        ``layout`` and ``values`` an ``AttrsCache`` made."""
        self.stored = stored
        self.labels = labels
        if fields:
            layout = FieldLayout(tuple(fields))
            values = tuple(fields.values())
        self._layout = layout
        self._values = values

    @property
    def key(self) -> str:
        return self.stored.key

    @property
    def resource_version(self) -> int:
        return self.stored.resource_version

    @property
    def fields(self) -> Mapping[str, str]:
        """The selectable fields (a read-only view over the kept values)."""
        return _FieldView(self) if self._values else _EMPTY

    def field(self, name: str) -> str | None:
        """One selectable field's value, None if the resource has no such field."""
        i = self._layout.position.get(name)
        if i is None:
            return None
        value = self._values[i]
        if value is None:
            key = self.stored.key
            return key[key.rfind("/") + 1 :]
        return value

    def with_stored(self, stored: StoredObject) -> CachedObject:
        """The same attributes over other bytes (a DELETED event's last state)."""
        return CachedObject(stored, self.labels, layout=self._layout, values=self._values)

    def matches(self, pred: SelectionPredicate) -> bool:
        """The predicate's selectors against the attributes computed at insert time."""
        if pred.label is not None and not pred.label.empty and not pred.label.matches(self.labels):
            return False
        return pred.field is None or pred.field.empty or pred.field.matches(self.fields)


class _FieldView(Mapping[str, str]):
    __slots__ = ("_obj",)

    def __init__(self, obj: CachedObject) -> None:
        self._obj = obj

    def __getitem__(self, name: str) -> str:
        value = self._obj.field(name)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._obj._layout.names)

    def __len__(self) -> int:
        return len(self._obj._values)


# After this many look-ups of one attribute (a field name, a label key), it stops being
# interned if 90 % of its values were new (pod IPs, uids: one per object, so a table
# entry per object would only add to what each object costs). Long enough that the
# node names of 10,000 pods on 5,000 nodes still read as shared.
_INTERN_SAMPLE = 10_000
# distinct label sets shared (pods of one ReplicaSet have equal labels); past it, new
# sets are not added (an attribute unique per object would fill it with nothing to share)
_MAX_LABEL_SETS = 4096


class AttrsCache:
    """Computes selector attributes of a version once, sharing what versions repeat:
    strings (node names, namespaces, phases, label keys and values), whole label maps,
    the field names' layout; the object's name is not kept (the key holds it)."""

    def __init__(self, attrs: AttrsFunc | None) -> None:
        self._attrs = attrs
        self._intern: dict[str, str] = {}
        self._seen: dict[str, list[int]] = {}  # attribute -> [look-ups, new values]
        self._unique: set[str] = set()  # attributes whose values are not interned
        self._label_sets: dict[tuple[str, ...], Mapping[str, str]] = {}
        self._layouts: dict[tuple[str, ...], FieldLayout] = {}

    def cached(self, stored: StoredObject, obj: JSONObject | None = None) -> CachedObject:
        """``stored`` as the cache keeps it: bytes without the decoded dict, plus attrs
        computed from ``obj`` (the decoded form, if the caller has it) or a transient
        decode. CorruptObject when the object's labels or selectable fields are not what
        its type says (``labels: {"a": 1}``): kube-apiserver could not decode it either,
        and a cache must not hold what its selectors cannot read."""
        if stored._obj is not None or isinstance(stored._encodings, StoredObject):
            # never keep the dict (memory ≈ JSON size), nor a copy sharing another
            # version's encodings (pinning that one)
            obj = stored._obj
            fresh = StoredObject(stored.key, stored.data, stored.resource_version)
            # but keep the protobuf value it was read from (protobuf answers start
            # there) and whatever else the version has (the same bytes)
            fresh._set(stored.kept())
            stored = fresh
        if self._attrs is None:
            return CachedObject(stored, _EMPTY)
        if obj is None:
            obj = decode_object(stored.key, stored.data, stored.resource_version)
        try:
            labels, fields = self._attrs(obj)
            layout, values = self._fields(stored.key, fields)
            return CachedObject(stored, self._labels(labels), layout=layout, values=values)
        except (TypeError, ValueError, AttributeError, KeyError) as err:
            raise CorruptObject(stored.key, f"unreadable attributes: {err}",
                                stored.resource_version) from err  # fmt: skip

    def _labels(self, m: Mapping[str, str]) -> Mapping[str, str]:
        if not m:
            return _EMPTY
        _check(m)
        # label keys and field names under one attribute, "": they repeat, their values may not
        flat = tuple(s for k, v in m.items() for s in (self._str("", k), self._str(k, v)))
        shared = self._label_sets.get(flat)
        if shared is None:
            shared = dict(zip(flat[::2], flat[1::2], strict=True))
            if len(self._label_sets) < _MAX_LABEL_SETS:
                self._label_sets[flat] = shared
        return shared

    def _fields(self, key: str, m: Mapping[str, str]) -> tuple[FieldLayout, tuple[str | None, ...]]:
        if not m:
            return _NO_FIELDS, ()
        _check(m)
        names = tuple(m)
        layout = self._layouts.get(names)
        if layout is None:
            layout = self._layouts.setdefault(
                names, FieldLayout(tuple(self._str("", n) for n in names))
            )
        name = key[key.rfind("/") + 1 :]
        values = tuple(None if v == name else self._str(f, v) for f, v in m.items())
        return layout, values

    def _str(self, attribute: str, value: str) -> str:
        """``value`` as an interned string, unless ``attribute``'s values are unique."""
        if attribute in self._unique or len(value) >= 64:
            return value
        seen = self._seen.get(attribute)
        if seen is None:
            seen = self._seen[attribute] = [0, 0]
        seen[0] += 1
        found = self._intern.get(value)
        if found is None:
            seen[1] += 1
            if len(self._intern) > 200_000:  # bound the table; entries are cheap to rebuild
                self._intern.clear()
            found = self._intern[value] = value
        if seen[0] == _INTERN_SAMPLE and seen[1] * 10 > seen[0] * 9:
            self._unique.add(attribute)
        return found


def _check(m: Mapping[str, str]) -> None:
    if not isinstance(m, Mapping):
        raise TypeError(f"expected a map of strings, got {type(m).__name__}")
    for k, v in m.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"{k!r}: {v!r}: expected a string")


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
    the JSON, its key and resourceVersion, other encodings, Table row, gzip segments,
    selector attributes and the objects holding them; strings and label maps shared by
    many versions are not counted)."""
    stored = obj.stored
    size = sys.getsizeof(obj) + sys.getsizeof(stored) + sys.getsizeof(stored.data)
    size += sys.getsizeof(stored.key) + sys.getsizeof(stored.resource_version)
    kept = stored._encodings  # a cached version's own (it never shares another's)
    size += 0 if isinstance(kept, StoredObject) else _size(kept)
    size += _unshared(obj.labels) + _unshared(obj._values)
    return len(stored.data), size


def _unshared(attrs: Mapping[str, str] | tuple[str | None, ...]) -> int:
    """A label map or field values: the container unless other versions share it (a
    shared label set: one reference from the version, one from the table, getrefcount's
    own), and the strings no other version shares (one reference from here, one from
    the intern table)."""
    if not attrs or attrs is _EMPTY:
        return 0
    size = sys.getsizeof(attrs) if sys.getrefcount(attrs) <= 3 else 0
    values = attrs.values() if isinstance(attrs, Mapping) else attrs
    return size + sum(sys.getsizeof(v) for v in values if v is not None and sys.getrefcount(v) <= 3)


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
