"""The event ring: dynamic sizing and too-old detection (watch_cache_test.go behaviours)."""

from __future__ import annotations

import pytest

from cacher.clock import FakeClock
from cacher.history import History, TooOldResourceVersion
from cacher.objects import CachedObject, WatchCacheEvent
from tests.unit.cacher.helpers import pod


def event(rv: int, t: float) -> WatchCacheEvent:
    return WatchCacheEvent("ADDED", CachedObject(pod(f"p{rv}", rv), {}, {}), None, rv, t)


def test_events_since_returns_newer_events_in_order() -> None:
    h = History(10)
    h.replaced(4)
    for rv in (5, 7, 9):
        h.append(event(rv, 0))
    assert [e.resource_version for e in h.events_since(4)] == [5, 7, 9]
    assert [e.resource_version for e in h.events_since(6)] == [7, 9]
    assert h.events_since(9) == []
    assert h.events_since(100) == []  # newer than the cache: nothing yet


def test_too_old_after_eviction_names_oldest_deliverable_minus_one() -> None:
    h = History(3)
    h.replaced(10)
    for rv in range(11, 16):  # 11, 12 evicted; 13, 14, 15 held
        h.append(event(rv, 0))
    assert [e.resource_version for e in h.events_since(12)] == [13, 14, 15]
    with pytest.raises(TooOldResourceVersion) as err:
        h.events_since(11)
    assert err.value.message == "too old resource version: 11 (12)"


def test_before_the_list_is_too_old_and_list_rv_is_fine() -> None:
    h = History(3)
    h.replaced(10)
    assert h.events_since(10) == []
    with pytest.raises(TooOldResourceVersion, match=r"too old resource version: 9 \(10\)"):
        h.events_since(9)


def test_replace_drops_history() -> None:
    h = History(10)
    h.replaced(1)
    h.append(event(2, 0))
    h.replaced(50)
    with pytest.raises(TooOldResourceVersion, match=r"\(50\)"):
        h.events_since(2)


def test_dynamic_ring_grows_while_events_are_fresh() -> None:
    clock = FakeClock()
    h = History(None, lower_bound=4, upper_bound=16, fresh_duration=75)
    for rv in range(1, 30):
        h.append(event(rv, clock.now()))
        clock.advance(1)
    assert h.capacity == 16
    assert len(h) == 16


def test_dynamic_ring_shrinks_when_old() -> None:
    clock = FakeClock()
    h = History(None, lower_bound=4, upper_bound=16, fresh_duration=75)
    for rv in range(1, 17):
        h.append(event(rv, clock.now()))
    assert h.capacity == 16
    clock.advance(100)
    h.append(event(17, clock.now()))
    assert h.capacity == 8
    assert [e.resource_version for e in h.events_since(9)][-1] == 17
    with pytest.raises(TooOldResourceVersion):
        h.events_since(5)


def test_fixed_size_does_not_grow() -> None:
    h = History(5)
    for rv in range(1, 50):
        h.append(event(rv, 0))
    assert h.capacity == 5 and len(h) == 5
