"""One watcher: selector transitions, bounded buffer, time budget, deadline."""

from __future__ import annotations

import asyncio

from cacher.cache_watcher import CacheWatcher, CloseReason
from cacher.clock import FakeClock
from cacher.objects import WatchCacheEvent
from cacher.watch_cache import WatchCache
from storage.interfaces import WatchEvent
from tests.unit.cacher.helpers import PREFIX, new_cache, new_watcher, pod, predicate, rv_of


def feed(
    c: WatchCache,
    w: CacheWatcher,
    name: str,
    rv: int,
    *,
    delete: bool = False,
    labels: dict[str, str] | None = None,
) -> None:
    ev: WatchCacheEvent | None
    if delete:
        ev = c.process(f"{PREFIX}default/{name}", None, rv)
    else:
        ev = c.process(f"{PREFIX}default/{name}", pod(name, rv, labels=labels), rv)
    assert ev is not None
    w.add(ev)


def drain(w: CacheWatcher) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    while w.buffered:
        out.append(w._buf.popleft())
    return out


def test_selector_transitions() -> None:
    clock = FakeClock()
    c = new_cache(clock)
    c.replace([], 1)
    w = new_watcher(clock, selection=predicate(label="app=x"))
    feed(c, w, "p", 2, labels={"app": "y"})  # neither → nothing
    feed(c, w, "p", 3, labels={"app": "x"})  # enters → ADDED
    feed(c, w, "p", 4, labels={"app": "x"})  # stays → MODIFIED
    feed(c, w, "p", 5, labels={"app": "y"})  # leaves → DELETED, old object, new RV
    feed(c, w, "p", 6, delete=True)  # real delete of a non-matching object → nothing
    feed(c, w, "q", 7, labels={"app": "x"})
    feed(c, w, "q", 8, delete=True)  # real delete of a match → DELETED at deletion RV
    got = drain(w)
    assert [(e.type, e.resource_version) for e in got] == [
        ("ADDED", 3),
        ("MODIFIED", 4),
        ("DELETED", 5),
        ("ADDED", 7),
        ("DELETED", 8),
    ]
    assert rv_of(got[2].data) == "5" and b'"app":"x"' in got[2].data
    assert rv_of(got[4].data) == "8"


def test_events_at_or_before_start_rv_are_skipped() -> None:
    clock = FakeClock()
    c = new_cache(clock)
    c.replace([], 1)
    w = new_watcher(clock, start_rv=3)
    for rv in (2, 3, 4):
        feed(c, w, f"p{rv}", rv)
    assert [e.resource_version for e in drain(w)] == [4]


async def test_slow_watcher_closed_after_budget_never_blocks() -> None:
    clock = FakeClock()
    c = new_cache(clock)
    c.replace([], 1)
    closed: list[CacheWatcher] = []
    w = new_watcher(clock, buffer_size=3, time_budget=0.1, on_close=closed.append)
    for rv in range(2, 6):  # 4 events into a soft limit of 3: full since now
        feed(c, w, f"p{rv}", rv)
    assert w.closed is None
    clock.advance(0.2)
    feed(c, w, "late", 6)
    assert w.closed is CloseReason.SLOW and closed == [w]
    assert [e async for e in w] == []


async def test_hard_cap_closes_immediately() -> None:
    clock = FakeClock()
    c = new_cache(clock)
    c.replace([], 1)
    w = new_watcher(clock, buffer_size=2, time_budget=100)
    for rv in range(2, 7):
        feed(c, w, f"p{rv}", rv)
    assert w.closed is CloseReason.SLOW


async def test_consumer_keeps_up_and_deadline_ends_cleanly() -> None:
    clock = FakeClock()
    c = new_cache(clock)
    c.replace([], 1)
    w = new_watcher(clock, deadline=clock.now() + 5, initial=[WatchEvent("ADDED", b"{}", 1)])
    got: list[str] = []

    async def consume() -> None:
        async for ev in w:
            got.append(ev.type)

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0)
    feed(c, w, "p", 2)
    await asyncio.sleep(0)
    clock.advance(5)
    await asyncio.wait_for(task, 1)
    assert got == ["ADDED", "ADDED"]
    assert w.closed is CloseReason.TIMEOUT
