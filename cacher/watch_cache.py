"""The cache's store, after kube-apiserver's ``watch_cache.go``.

Objects are kept in key order in a persistent B-tree (``cacher.btree``), so a namespace
LIST is a range scan, with exact-value indexes on selectable fields (pods by
``spec.nodeName`` built in). Because the tree is copy-on-write, the store as it was after
each event is kept for a while at no copying cost (``cacher.snapshotter``): LISTs at an
exact revision and the pages after the first are served from those snapshots
(``ListFromCacheSnapshot``). The
cache's ``resource_version`` is the revision up to which it has seen every change of its
prefix: it advances with each event and with etcd progress notifications. Readers may
wait (bounded) until it reaches a revision they need.

Single-threaded by design: every method runs on the event loop without awaiting in the
middle of a mutation, so a reader sees the store, the history and the RV of one instant.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter

from cacher.btree import BTreeMap
from cacher.clock import Clock, wait_for_future
from cacher.history import History
from cacher.objects import AttrsCache, CachedObject, ChangeType, WatchCacheEvent
from cacher.snapshotter import Snapshotter
from storage.codec import with_resource_version
from storage.errors import CorruptObject, Expired, TooLargeResourceVersion
from storage.interfaces import AttrsFunc, SelectionPredicate, StoredObject

DEFAULT_FRESHNESS_WAIT = 3.0  # kube-apiserver's blockTimeout


@dataclass(frozen=True, slots=True)
class CacheList:
    """A LIST served from memory: items in key order at ``resource_version``."""

    items: list[CachedObject]
    resource_version: int
    fetched: int  # cache entries examined (the index bucket when an index was used)
    evaluated: int  # entries tested against the selector
    index: str = ""  # the index used, "" for a scan
    # a page (a limit was given) that stopped before the end: the last key it holds, and
    # how many keys follow it in the range (remainingItemCount; -1 with a selector)
    last_key: str = ""
    remaining: int = 0
    # asked with ``later``: the selector still to apply to ``items`` (the candidates),
    # which the cacher applies in bounded steps (thousands of candidates are tens of
    # milliseconds of matching)
    selecting: SelectionPredicate | None = None


Store = BTreeMap[CachedObject]
# field -> value -> the objects with that value, in key order (a list: ~9 bytes an
# object where a key -> object dict took ~30; kept in order, a LIST reads it as is)
Indexes = dict[str, dict[str, list[CachedObject]]]
_KEY = attrgetter("key")


def prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"


def exact_match(pred: SelectionPredicate, field: str) -> str | None:
    """The value ``pred`` requires ``field`` to equal, if it does."""
    if pred.field is None or pred.field.empty:
        return None
    value: str | None = pred.field.requires_exact_match(field)
    return value


class WatchCache:
    """The store, indexes, history and resource version of one resource.

    ``resource_version`` and the store change only in ``replace``, ``process`` and
    ``update_resource_version`` (called by the reflector).
    """

    def __init__(
        self,
        *,
        attrs: AttrsFunc | None,
        clock: Clock,
        history: History | None = None,
        indexes: Sequence[str] = (),
        on_resource_version: Callable[[int], None] | None = None,
        snapshots: Snapshotter[Store] | None = None,
    ) -> None:
        """``snapshots``: where the store after each event is kept for LISTs at an exact
        revision (None: ``ListFromCacheSnapshot`` off, nothing kept)."""
        self._attrs = AttrsCache(attrs)
        self._clock = clock
        self.history = history if history is not None else History()
        self.index_fields = tuple(indexes)
        self._store: Store = BTreeMap()  # key -> CachedObject, replaced on every change
        self.snapshots = snapshots
        self._indexes: Indexes = {f: {} for f in self.index_fields}
        self.resource_version = 0
        # the stored bytes of every object held (APF's list estimate: average size)
        self.object_bytes = 0
        self._on_rv = on_resource_version
        self._seq = itertools.count()
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []  # heap by rv

    def __len__(self) -> int:
        return len(self._store)

    # -- writes (reflector) -------------------------------------------------------------

    def new_replacement(self) -> Replacement:
        """An empty state to fill (slice by slice, between yields to the event loop)
        and then swap in with ``swap``; the live state serves meanwhile."""
        return Replacement(self._attrs, self.index_fields)

    def swap(self, replacement: Replacement, resource_version: int) -> None:
        """Swap the whole state for a LIST taken at ``resource_version`` (one step, no
        per-object work)."""
        self._store = replacement.build()
        self.object_bytes = replacement.object_bytes
        self._indexes = replacement.indexes
        self.history.replaced(resource_version)
        if self.snapshots is not None:  # a new series: nothing older is known
            self.snapshots.reset()
            self.snapshots.add(resource_version, self._store, self._clock.now())
        self._set_rv(resource_version)

    def replace(self, objects: Iterable[StoredObject], resource_version: int) -> None:
        """``swap`` in a state built from ``objects`` in one step (small lists, tests);
        CorruptObject if one of them cannot be held."""
        replacement = self.new_replacement()
        errors = replacement.add(objects)
        if errors:
            raise errors[0]
        self.swap(replacement, resource_version)

    def process(
        self, key: str, stored: StoredObject | None, resource_version: int
    ) -> WatchCacheEvent | None:
        """Apply one etcd change (``stored`` None = delete) and record it in the history.

        Returns the event, or None for the delete of a key the cache never held."""
        prev: CachedObject | None = self._store.get(key)
        if stored is None:
            if prev is None:
                self._set_rv(resource_version)
                return None
            self._store = self._store.remove(key)
            self.object_bytes -= len(prev.stored.data)
            self._index_remove(prev)
            last = with_resource_version(prev.stored, resource_version)
            event = WatchCacheEvent(
                "DELETED",
                prev.with_stored(last),
                prev,
                resource_version,
                self._clock.now(),
            )
        else:
            obj = self._attrs.cached(stored)
            if prev is not None:
                self._index_remove(prev)
                self.object_bytes -= len(prev.stored.data)
            self._store = self._store.set(key, obj)
            self.object_bytes += len(stored.data)
            self._index_add(obj)
            kind: ChangeType = "ADDED" if prev is None else "MODIFIED"
            event = WatchCacheEvent(kind, obj, prev, resource_version, self._clock.now())
        self.history.append(event)
        if self.snapshots is not None:
            self.snapshots.add(resource_version, self._store, event.record_time)
        self._set_rv(resource_version)
        return event

    def update_resource_version(self, resource_version: int) -> None:
        """etcd said every change up to ``resource_version`` was delivered (progress)."""
        if resource_version > self.resource_version:
            self._set_rv(resource_version)

    def _set_rv(self, rv: int) -> None:
        self.resource_version = rv
        while self._waiters and self._waiters[0][0] <= rv:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)
        if self._on_rv is not None:
            self._on_rv(rv)

    # -- freshness ---------------------------------------------------------------------

    async def wait_until_fresh(
        self, resource_version: int, wait_seconds: float = DEFAULT_FRESHNESS_WAIT
    ) -> None:
        """Return once the cache has seen every change up to ``resource_version``.

        Raises TooLargeResourceVersion after ``wait_seconds``."""
        if self.resource_version >= resource_version:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (resource_version, next(self._seq), fut))
        try:
            if not await wait_for_future(self._clock, fut, wait_seconds):
                raise TooLargeResourceVersion(resource_version, self.resource_version)
        finally:
            fut.cancel()

    @property
    def waiting(self) -> int:
        """How many readers wait for freshness (the progress requester's trigger)."""
        return sum(1 for _, _, f in self._waiters if not f.done())

    # -- reads -------------------------------------------------------------------------

    def get(self, key: str) -> CachedObject | None:
        obj: CachedObject | None = self._store.get(key)
        return obj

    @property
    def store(self) -> Store:
        """The store as it is now (immutable: later changes make a new one)."""
        return self._store

    def bytes_under(self, prefix: str) -> int:
        """About how many stored bytes the objects under ``prefix`` hold (their count,
        O(log n), times the average size): what a LIST of them reads."""
        total = len(self._store)
        if not total:
            return 0
        return self._store.count(prefix, prefix_end(prefix)) * self.object_bytes // total

    def objects(self) -> Iterable[CachedObject]:
        """Every object held now (an immutable map: safe to read across awaits)."""
        return self._store.values()

    def version_at(self, key: str, resource_version: int) -> CachedObject | None:
        """The version of ``key`` held now if its resourceVersion is
        ``resource_version``, with its selector attributes (``storage.known_versions``'
        lookup)."""
        obj: CachedObject | None = self._store.get(key)
        if obj is None or obj.resource_version != resource_version:
            return None
        return obj

    def list_objects(
        self,
        key: str,
        pred: SelectionPredicate,
        *,
        recursive: bool = True,
        start: str = "",
        limit: int = 0,
        later: bool = False,
    ) -> CacheList:
        """Objects under prefix ``key`` (or the one object ``key``) matching ``pred``, as
        they are now; from key ``start`` on (a continue key) and at most ``limit`` of
        them (0: all) when given. An index serves an exact field match unless the list
        continues (upstream passes no index with a continue key). With ``later``, a
        whole list's candidates come unselected (see ``CacheList.selecting``)."""
        rv = self.resource_version
        if not recursive:
            one = self._store.get(key)
            found = [one] if one is not None and one.matches(pred) else []
            return CacheList(found, rv, int(one is not None), int(one is not None))
        index, bucket = self._bucket(pred) if not start else ("", None)
        if bucket is not None:
            candidates = [o for o in bucket if o.key.startswith(key)]
            if limit:
                return _page(iter(candidates), len(candidates), pred, limit, rv, index)
            return _filtered(candidates, len(bucket), pred, rv, index, later)
        return _range(self._store, key, start, pred, limit, rv, later)

    def list_at(
        self, key: str, pred: SelectionPredicate, resource_version: int, *, start: str = "",
        limit: int = 0, later: bool = False,
    ) -> CacheList:  # fmt: skip
        """``list_objects`` of the state at ``resource_version``, from the snapshots
        (upstream's ``listExactRV``): Expired "too old resource version: N" when that
        state is not held (the delegator then asks etcd)."""
        snapshot = None if self.snapshots is None else self.snapshots.get_less_or_equal(
            resource_version
        )  # fmt: skip
        if snapshot is None:
            raise Expired(f"too old resource version: {resource_version}")
        return _range(snapshot, key, start, pred, limit, resource_version, later)

    def holds(self, resource_version: int) -> bool:
        """Whether the state at ``resource_version`` is held (upstream CanServeExactRV)."""
        return (
            self.snapshots is not None
            and self.snapshots.get_less_or_equal(resource_version) is not None
        )

    def _bucket(self, pred: SelectionPredicate) -> tuple[str, list[CachedObject] | None]:
        for f in self.index_fields:
            value = exact_match(pred, f)
            if value is not None:
                return f, self._indexes[f].get(value, [])
        return "", None

    def events_since(self, resource_version: int) -> list[WatchCacheEvent]:
        return self.history.events_since(resource_version)

    # -- indexes -----------------------------------------------------------------------

    def _index_add(self, obj: CachedObject) -> None:
        _index_add(self._indexes, obj)

    def _index_remove(self, obj: CachedObject) -> None:
        for f, idx in self._indexes.items():
            value = obj.field(f)
            if value is None:
                continue
            bucket = idx.get(value)
            if bucket is not None:
                i = bisect_left(bucket, obj.key, key=_KEY)
                if i < len(bucket) and bucket[i].key == obj.key:
                    del bucket[i]
                if not bucket:
                    del idx[value]


def _index_add(indexes: Indexes, obj: CachedObject, *, last: bool = False) -> None:
    """Index ``obj``, replacing the object of its key; ``last``: its key follows every
    key indexed (a LIST in key order: appended, no search)."""
    for f, idx in indexes.items():
        value = obj.field(f)
        if value is None:
            continue
        bucket = idx.get(value)
        if bucket is None:
            idx[value] = [obj]
        elif last:
            bucket.append(obj)
        else:
            i = bisect_left(bucket, obj.key, key=_KEY)
            if i < len(bucket) and bucket[i].key == obj.key:
                bucket[i] = obj
            else:
                bucket.insert(i, obj)


def _range(
    store: Store, key: str, start: str, pred: SelectionPredicate, limit: int, rv: int,
    later: bool = False,
) -> CacheList:  # fmt: skip
    """The objects of ``store`` under prefix ``key`` from ``start`` on, paged."""
    lo, hi = max(start, key), prefix_end(key)
    if limit:
        total = store.count(lo, hi) if pred.empty else None
        return _page(store.values(lo, hi), total, pred, limit, rv, "")
    candidates = store.value_list(lo, hi)
    return _filtered(candidates, len(candidates), pred, rv, "", later)


def _filtered(
    candidates: list[CachedObject], fetched: int, pred: SelectionPredicate, rv: int, index: str,
    later: bool = False,
) -> CacheList:  # fmt: skip
    if pred.empty:
        return CacheList(candidates, rv, fetched, 0, index)
    if later:
        return CacheList(candidates, rv, fetched, len(candidates), index, selecting=pred)
    items = [o for o in candidates if o.matches(pred)]
    return CacheList(items, rv, fetched, len(candidates), index)


def _page(
    candidates: Iterator[CachedObject],
    total: int | None,
    pred: SelectionPredicate,
    limit: int,
    rv: int,
    index: str,
) -> CacheList:
    """At most ``limit`` matches, as upstream's cacher pages: without a selector the
    page is the first ``limit`` and more remain when ``total`` is larger; with one,
    more remain as soon as a candidate follows a full page (matching or not, so the
    next page may be empty, as on kube-apiserver)."""
    if pred.empty:
        assert total is not None
        items = list(itertools.islice(candidates, limit))
        if total <= limit:
            return CacheList(items, rv, len(items), 0, index)
        return CacheList(items, rv, len(items), 0, index, items[-1].key, total - limit)
    selected: list[CachedObject] = []
    fetched = 0
    for obj in candidates:
        if len(selected) >= limit:
            return CacheList(selected, rv, fetched, fetched, index, selected[-1].key, -1)
        fetched += 1
        if obj.matches(pred):
            selected.append(obj)
    return CacheList(selected, rv, fetched, fetched, index)


class Replacement:
    """A state under construction for ``WatchCache.swap``: owned by the reflector
    while it re-lists; nothing reads it before the swap."""

    def __init__(self, attrs: AttrsCache, index_fields: Sequence[str]) -> None:
        self._attrs = attrs
        self._keys: list[str] = []
        self._objects: list[CachedObject] = []
        self._sorted = True  # etcd lists in key order; anything else is sorted at build
        self.object_bytes = 0
        self.indexes: Indexes = {f: {} for f in index_fields}

    def add(self, objects: Iterable[StoredObject]) -> list[CorruptObject]:
        """Add decoded objects; those whose labels or fields cannot be read are left out
        and returned."""
        skipped: list[CorruptObject] = []
        for stored in objects:
            try:
                obj = self._attrs.cached(stored)
            except CorruptObject as err:
                skipped.append(err)
                continue
            if self._keys and obj.key <= self._keys[-1]:
                self._sorted = False
            self._keys.append(obj.key)
            self._objects.append(obj)
            self.object_bytes += len(stored.data)
            if self._sorted:  # else indexed at build
                _index_add(self.indexes, obj, last=True)
        return skipped

    def build(self) -> Store:
        """The store of everything added (the last version of a key repeated wins)."""
        if self._sorted:
            return BTreeMap.from_sorted_lists(self._keys, self._objects)
        by_key = dict(zip(self._keys, self._objects, strict=True))
        self.object_bytes = sum(len(o.stored.data) for o in by_key.values())
        keys = sorted(by_key)
        objects = [by_key[k] for k in keys]
        # indexed again: a key repeated may have left its earlier version in another bucket
        self.indexes = {f: {} for f in self.indexes}
        for obj in objects:
            _index_add(self.indexes, obj, last=True)
        return BTreeMap.from_sorted_lists(keys, objects)
