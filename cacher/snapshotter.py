"""Snapshots of the watch cache's store by resourceVersion, after kube-apiserver's
``storeSnapshotter`` (``store_btree.go``, ``ListFromCacheSnapshot``, 1.34+).

After every event the cache adds its store as it is now (a ``BTreeMap``: keeping it is
keeping a reference, nothing is copied). A LIST at revision R — ``resourceVersionMatch=
Exact``, the legacy exact form (RV + limit), or a ``continue`` token of R — is served
from the snapshot with the greatest resourceVersion ≤ R, which is the state at R: the
cache saw every change of its prefix, so nothing changed between that snapshot and R.
No snapshot ≤ R: the request goes to etcd (``get_less_or_equal`` answers None).

What bounds them (upstream ties them to the history ring instead; see docs):

- retention (``--watch-cache-snapshot-retention``, 75 s as the history's freshness): a
  snapshot goes once the state it holds stopped being current more than that long ago
  (the time of the next snapshot), so the newest one — the current state — stays
  however old; a client gets at least the retention between two pages;
- a count (``--watch-cache-snapshot-max``): the oldest go first;
- etcd's compaction (``compact``): the state at a compacted revision is no longer in
  etcd, so the cache stops serving it too (a LIST there gets etcd's 410); the newest
  snapshot at or below the compacted revision is kept, re-labelled with it, since it
  is the state at that revision;
- a re-list (``reset``): the new state starts a new series.

Not thread-safe: owned by the watch cache on the event loop.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_RETENTION = 75.0
DEFAULT_MAX_SNAPSHOTS = 10_000


class Snapshotter(Generic[T]):
    """Snapshots in increasing resourceVersion order (events arrive in that order).

    ``_rvs[i]``, ``_snaps[i]``: the i-th snapshot and its RV; ``_until[i]``: when it
    stopped being current (None for the newest). Entries before ``_start`` are dropped
    (the lists are trimmed now and then, so dropping the oldest is O(1) amortised)."""

    def __init__(
        self, *, retention: float = DEFAULT_RETENTION, max_count: int = DEFAULT_MAX_SNAPSHOTS
    ) -> None:
        self.retention = retention
        self.max_count = max(1, max_count)
        self._rvs: list[int] = []
        self._snaps: list[T | None] = []
        self._until: list[float | None] = []
        self._start = 0

    def __len__(self) -> int:
        return len(self._rvs) - self._start

    @property
    def oldest(self) -> int | None:
        """The resourceVersion of the oldest snapshot held."""
        return self._rvs[self._start] if len(self) else None

    def add(self, resource_version: int, snapshot: T, now: float) -> None:
        """``snapshot`` is the state at ``resource_version`` (≥ every RV added before)."""
        if len(self) and self._rvs[-1] == resource_version:
            self._snaps[-1] = snapshot  # a second change in one etcd revision
        else:
            if len(self):
                self._until[-1] = now
            self._rvs.append(resource_version)
            self._snaps.append(snapshot)
            self._until.append(None)
        self.expire(now)

    def held(self) -> list[T]:
        """Every snapshot held, oldest first."""
        return [s for s in self._snaps[self._start :] if s is not None]

    def get_less_or_equal(self, resource_version: int) -> T | None:
        """The state at ``resource_version`` if held: the newest snapshot not after it."""
        i = bisect_right(self._rvs, resource_version, lo=self._start) - 1
        return self._snaps[i] if i >= self._start else None

    def expire(self, now: float) -> None:
        """Drop what retention and the count no longer allow (called per event, and by
        the cache's ticker so an idle resource lets old snapshots go too)."""
        cutoff = now - self.retention
        while len(self) > 1:
            until = self._until[self._start]
            if len(self) <= self.max_count and until is not None and until > cutoff:
                break
            self._drop_oldest()

    def compact(self, revision: int) -> None:
        """etcd compacted history before ``revision``: serve nothing older."""
        i = bisect_right(self._rvs, revision, lo=self._start) - 1
        if i < self._start:
            return
        while self._start < i:
            self._drop_oldest()
        self._rvs[i] = max(self._rvs[i], revision)  # the state at the compacted revision

    def reset(self) -> None:
        self._rvs, self._snaps, self._until, self._start = [], [], [], 0

    def _drop_oldest(self) -> None:
        self._snaps[self._start] = None  # let the store's old nodes go now
        self._start += 1
        if self._start > 1024 and self._start * 2 > len(self._rvs):
            del self._rvs[: self._start], self._snaps[: self._start], self._until[: self._start]
            self._start = 0
