"""The ring of recent events, after kube-apiserver's ``watch_cache.go`` /
``watch_cache_interval.go``.

Dynamic sizing (``capacity=None``): the ring starts at 100 events and doubles, up to
102,400, whenever it is full while its oldest event is younger than 75 s (the watchers
that may need to resume are recent); it halves, down to 100, when it is full and even the
event a quarter from the newest end is older than 75 s. A fixed size (kube-apiserver's
``--default-watch-cache-size`` / per-resource sizes) disables resizing.

A watch can resume from RV ``N`` if every event after ``N`` is still here: ``N ≥ O`` where
``O`` = oldest deliverable RV - 1. The oldest deliverable RV is the list RV + 1 as long as
no event was evicted since the last re-list, else the RV of the oldest event held.
"""

from __future__ import annotations

from cacher.objects import WatchCacheEvent
from storage.errors import Expired

LOWER_BOUND_CAPACITY = 100
UPPER_BOUND_CAPACITY = 100 * 1024
EVENT_FRESH_DURATION = 75.0


class TooOldResourceVersion(Expired):
    """A watch asked for events the ring no longer holds (delivered as a 410 ERROR event)."""

    def __init__(self, resource_version: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {resource_version} ({oldest})")
        self.resource_version = resource_version
        self.oldest = oldest


class History:
    """Not thread-safe: owned by the watch cache, mutated only from the event loop.

    Events are appended in increasing RV order.
    """

    def __init__(
        self,
        capacity: int | None = None,
        *,
        lower_bound: int = LOWER_BOUND_CAPACITY,
        upper_bound: int = UPPER_BOUND_CAPACITY,
        fresh_duration: float = EVENT_FRESH_DURATION,
    ) -> None:
        self.dynamic = capacity is None
        self.capacity = lower_bound if capacity is None else max(1, capacity)
        self._lower = lower_bound
        self._upper = upper_bound
        self._fresh = fresh_duration
        self._ring: list[WatchCacheEvent | None] = [None] * self.capacity
        self._start = 0  # absolute index of the oldest event held
        self._end = 0  # absolute index one past the newest
        self.list_resource_version = 0
        self._evicted_since_list = False

    def __len__(self) -> int:
        return self._end - self._start

    def _at(self, i: int) -> WatchCacheEvent:
        ev = self._ring[i % self.capacity]
        assert ev is not None
        return ev

    @property
    def full(self) -> bool:
        return len(self) == self.capacity

    def append(self, event: WatchCacheEvent) -> None:
        if self.dynamic:
            self._resize(event.record_time)
        if self.full:
            self._ring[self._start % self.capacity] = None
            self._start += 1
            self._evicted_since_list = True
        self._ring[self._end % self.capacity] = event
        self._end += 1

    def replaced(self, list_resource_version: int) -> None:
        """A re-list at ``list_resource_version``: events before it are no history of the
        new state; the oldest deliverable RV becomes list RV + 1."""
        self._ring = [None] * self.capacity
        self._start = self._end = 0
        self.list_resource_version = list_resource_version
        self._evicted_since_list = False

    def oldest_deliverable(self) -> int:
        if not self._evicted_since_list:
            return self.list_resource_version + 1
        if len(self):
            return self._at(self._start).resource_version
        return self.list_resource_version + 1

    def events_since(self, resource_version: int) -> list[WatchCacheEvent]:
        """Every held event with RV > ``resource_version``, oldest first.

        Raises TooOldResourceVersion when events after it were evicted (or precede the
        last re-list)."""
        oldest = self.oldest_deliverable()
        if resource_version < oldest - 1:
            raise TooOldResourceVersion(resource_version, oldest - 1)
        lo, hi = self._start, self._end
        while lo < hi:  # first index whose RV > resource_version
            mid = (lo + hi) // 2
            if self._at(mid).resource_version > resource_version:
                hi = mid
            else:
                lo = mid + 1
        return [self._at(i) for i in range(lo, self._end)]

    # -- sizing ------------------------------------------------------------------------

    def _resize(self, now: float) -> None:
        if not self.full:
            return
        if now - self._at(self._start).record_time < self._fresh:
            new = min(self.capacity * 2, self._upper)
            if new > self.capacity:
                self._set_capacity(new)
            return
        quarter = self._at(self._end - max(1, self.capacity // 4))
        if now - quarter.record_time > self._fresh:
            new = max(self.capacity // 2, self._lower)
            if new < self.capacity:
                self._set_capacity(new)

    def _set_capacity(self, capacity: int) -> None:
        keep = [self._at(i) for i in range(max(self._start, self._end - capacity), self._end)]
        if len(keep) < len(self):
            self._evicted_since_list = True
        self.capacity = capacity
        self._ring = [None] * capacity
        self._start = self._end - len(keep)
        for i, ev in enumerate(keep, start=self._start):
            self._ring[i % capacity] = ev
