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
    """The selectable field names of a resource, in one order, and where a version keeps
    each value: in its ``shared`` tuple (``shared[0]`` is the layout, then the values
    other versions repeat: one tuple for every pod of a namespace on a node in the same
    phase) or, for an attribute whose values are unique per object (a pod's IP), in the
    version's ``own`` value (one string, or a tuple when there are several). A 10-field
    dict per pod was ~360 bytes, a tuple of its own ~136; a shared tuple is nothing."""

    __slots__ = ("names", "own", "position")

    def __init__(self, names: tuple[str, ...], own: tuple[int, ...] = ()) -> None:
        self.names = names
        self.own = own  # the positions (in ``names``) kept in the version's own value
        # name -> i > 0: shared[i]; name -> ~j (< 0): the j-th own value
        self.position: dict[str, int] = {}
        shared = 1
        for i, n in enumerate(names):
            if i in own:
                self.position[n] = ~own.index(i)
            else:
                self.position[n] = shared
                shared += 1


_NO_FIELDS = FieldLayout(())
_NO_VALUES: tuple[object, ...] = (_NO_FIELDS,)
Own = str | tuple[str | None, ...] | None


class CachedObject(StoredObject):
    """One version as the cache holds it: the ``StoredObject`` itself (one object, not
    a second one pointing at it: ~40 bytes a version less) with its selector
    attributes. Its selectable fields are ``_shared`` (a tuple: its ``FieldLayout``,
    then the values other versions may share) and ``_own`` (the values unique to it); a
    None value stands for the last segment of the key (the object's name, which the key
    already holds: no second copy of the one string unique to each object). ``labels``
    may be shared by every version with equal labels (read-only), as ``_shared`` is."""

    __slots__ = ("_own", "_shared", "labels")

    def __init__(
        self,
        stored: StoredObject,
        labels: Mapping[str, str],
        fields: Mapping[str, str] | None = None,
        *,
        shared: tuple[object, ...] = _NO_VALUES,
        own: Own = None,
    ) -> None:
        """``stored``'s bytes and kept encodings (never its decoded dict: memory ≈ JSON
        size; nor a reference to another version's encodings, which would pin that one)
        with either ``fields`` (a plain map: tests, the history's events) or the
        ``shared`` and ``own`` values an ``AttrsCache`` made."""
        super().__init__(stored.key, stored.data, stored.resource_version)
        kept = stored._encodings
        if isinstance(kept, StoredObject):
            self._set(stored.kept())
        else:  # the protobuf value it was read from (protobuf answers start there), ...
            self._encodings = kept
        self.labels = labels
        if fields:
            shared = (FieldLayout(tuple(fields)), *fields.values())
        self._shared = shared
        self._own = own

    @property
    def stored(self) -> StoredObject:
        """The version as storage hands it out: this very object."""
        return self

    @property
    def layout(self) -> FieldLayout:
        layout = self._shared[0]
        assert isinstance(layout, FieldLayout)
        return layout

    @property
    def fields(self) -> Mapping[str, str]:
        """The selectable fields (a read-only view over the kept values)."""
        return _FieldView(self) if self.layout.names else _EMPTY

    def field(self, name: str) -> str | None:
        """One selectable field's value, None if the resource has no such field."""
        i = self.layout.position.get(name)
        if i is None:
            return None
        if i > 0:
            value = self._shared[i]
        else:
            own = self._own
            value = own[~i] if isinstance(own, tuple) else own
        if value is None:
            key = self.stored.key
            return key[key.rfind("/") + 1 :]
        assert isinstance(value, str)
        return value

    def with_stored(self, stored: StoredObject) -> CachedObject:
        """The same attributes over other bytes (a DELETED event's last state)."""
        return CachedObject(stored, self.labels, shared=self._shared, own=self._own)

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
        return iter(self._obj.layout.names)

    def __len__(self) -> int:
        return len(self._obj.layout.names)


# After this many look-ups of one attribute (a field name, a label key) with a value
# other than "" (a default, not a value), it stops being interned if 90 % of its values
# were new (pod IPs, uids: one per object, so a table entry per object would only add
# to what each object costs); a field then moves from the shared values to each
# version's own. Long enough that the node names of 2,000 pods on 5,000 nodes still
# read as shared (82 % new); short enough that the first pods' values, kept in a shared
# tuple each before the attribute was known unique, stay few.
_INTERN_SAMPLE = 2_000
# distinct label sets shared (pods of one ReplicaSet have equal labels); past it, new
# sets are not added (an attribute unique per object would fill it with nothing to share)
_MAX_LABEL_SETS = 4096
# distinct shared field values (namespace x node x phase ... combinations); past it, a
# version keeps a tuple of its own, as every version did before they were shared
_MAX_SHARED_VALUES = 65_536


class AttrsCache:
    """Computes selector attributes of a version once, sharing what versions repeat:
    strings (node names, namespaces, phases, label keys and values), whole label maps,
    the field values other versions have too (with the field names' layout); the
    object's name is not kept (the key holds it)."""

    def __init__(self, attrs: AttrsFunc | None) -> None:
        self._attrs = attrs
        self._intern: dict[str, str] = {}
        self._seen: dict[str, list[int]] = {}  # attribute -> [look-ups, new values]
        self._unique: set[str] = set()  # attributes whose values are not interned
        self._label_sets: dict[tuple[str, ...], Mapping[str, str]] = {}
        self._layouts: dict[tuple[tuple[str, ...], tuple[int, ...]], FieldLayout] = {}
        self._shared: dict[tuple[object, ...], tuple[object, ...]] = {}

    def cached(self, stored: StoredObject, obj: JSONObject | None = None) -> CachedObject:
        """``stored`` as the cache keeps it: bytes without the decoded dict, plus attrs
        computed from ``obj`` (the decoded form, if the caller has it) or a transient
        decode. CorruptObject when the object's labels or selectable fields are not what
        its type says (``labels: {"a": 1}``): kube-apiserver could not decode it either,
        and a cache must not hold what its selectors cannot read."""
        obj = obj if obj is not None else stored._obj
        if self._attrs is None:
            return CachedObject(stored, _EMPTY)
        if obj is None:
            obj = decode_object(stored.key, stored.data, stored.resource_version)
        try:
            labels, fields = self._attrs(obj)
            shared, own = self._fields(stored.key, fields)
            return CachedObject(stored, self._labels(labels), shared=shared, own=own)
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

    def _fields(self, key: str, m: Mapping[str, str]) -> tuple[tuple[object, ...], Own]:
        """The version's shared values (one tuple for every version with equal ones)
        and its own (the values of attributes found unique per object)."""
        if not m:
            return _NO_VALUES, None
        _check(m)
        layout = self._layout(tuple(m))
        name = key[key.rfind("/") + 1 :]
        values = [None if v == name else self._str(f, v) for f, v in m.items()]
        own = tuple(values[i] for i in layout.own)
        for i in reversed(layout.own):
            del values[i]
        shared = self._shared.get((layout, *values))
        if shared is None:
            shared = (layout, *values)
            if len(self._shared) < _MAX_SHARED_VALUES:
                self._shared[shared] = shared
        if not own:
            return shared, None
        return shared, (own[0] if len(own) == 1 else own)

    def _layout(self, names: tuple[str, ...]) -> FieldLayout:
        """The layout of these field names with the values of unique attributes own."""
        own = tuple(i for i, n in enumerate(names) if n in self._unique)
        layout = self._layouts.get((names, own))
        if layout is None:
            interned = tuple(self._str("", n) for n in names)
            layout = self._layouts.setdefault((names, own), FieldLayout(interned, own))
        return layout

    def _str(self, attribute: str, value: str) -> str:
        """``value`` as an interned string, unless ``attribute``'s values are unique."""
        if not value or attribute in self._unique or len(value) >= 64:
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

    # six slots, no key (the object's): 80 bytes an event, 96 with seven
    __slots__ = ("_prev_at_rv", "object", "prev", "record_time", "resource_version", "type")

    def __init__(
        self,
        type: ChangeType,
        object: CachedObject,
        prev: CachedObject | None,
        resource_version: int,
        record_time: float,
    ) -> None:
        self.type = type
        self.object = object
        self.prev = prev
        self.resource_version = resource_version
        self.record_time = record_time
        self._prev_at_rv: bytes | None = None

    @property
    def key(self) -> str:
        return self.object.key

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
    size = sys.getsizeof(obj) + sys.getsizeof(stored.data)
    size += sys.getsizeof(stored.key) + sys.getsizeof(stored.resource_version)
    kept = stored._encodings  # a cached version's own (it never shares another's)
    size += 0 if isinstance(kept, StoredObject) else _size(kept)
    size += _unshared(obj.labels) + _unshared(obj._shared)
    own = obj._own  # values of attributes found unique: never shared
    if isinstance(own, tuple):
        size += sys.getsizeof(own) + sum(sys.getsizeof(v) for v in own if v is not None)
    elif own is not None:
        size += sys.getsizeof(own)
    return len(stored.data), size


def _unshared(attrs: Mapping[str, str] | tuple[object, ...]) -> int:
    """A label map or field values: the container unless other versions share it (a
    shared label set or values: one reference from the version, one from the table,
    getrefcount's own), and the strings no other version shares (one reference from
    here, one from the intern table)."""
    if not attrs or attrs is _EMPTY or attrs is _NO_VALUES:
        return 0
    size = sys.getsizeof(attrs) if sys.getrefcount(attrs) <= 3 else 0
    values = attrs.values() if isinstance(attrs, Mapping) else attrs
    return size + sum(
        sys.getsizeof(v) for v in values if isinstance(v, str) and sys.getrefcount(v) <= 3
    )


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
