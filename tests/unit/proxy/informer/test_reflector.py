"""The reflector and shared informer against a scripted lister-watcher and a fake clock:
where each LIST and WATCH starts, what a relist delivers, when it backs off."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from proxy.informer import (
    Backoff,
    DeletedFinalStateUnknown,
    EventHandlers,
    FakeClock,
    SharedIndexInformer,
    WatchError,
)
from storage.errors import Expired, Unavailable
from tests.unit.proxy.informer.fakes import FakeListerWatcher, obj, until


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def handlers(self) -> EventHandlers:
        return EventHandlers(
            on_add=lambda o: self.events.append(("add", _name(o))),
            on_update=lambda old, new: self.events.append(("update", _name(new))),
            on_delete=lambda o: self.events.append(("delete", o)),
        )


def _name(o: Any) -> str:
    return str(o["metadata"]["name"])


Running = tuple[SharedIndexInformer, FakeListerWatcher, FakeClock, Recorder]


@pytest.fixture
async def running() -> AsyncIterator[Running]:
    lw, clock, rec = FakeListerWatcher(), FakeClock(), Recorder()
    informer = SharedIndexInformer("widgets", lw, clock=clock)
    informer.reflector.rand = random.Random(7)
    informer.reflector.backoff = Backoff(clock=clock, rand=random.Random(7))
    informer.add_event_handler(rec.handlers())
    lw.answer(10, obj("a", 5), obj("b", 9))
    task = asyncio.create_task(informer.run())
    await until(lambda: len(lw.streams) == 1)
    yield informer, lw, clock, rec
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_lists_at_zero_then_watches_from_the_lists_resource_version(running: Running) -> None:
    informer, lw, _, rec = running
    assert lw.lists == ["0"] and lw.watch_rvs == ["10"]
    assert informer.has_synced()
    assert rec.events == [("add", "a"), ("add", "b")]
    lw.streams[0].send("MODIFIED", obj("a", 11))
    lw.streams[0].send("ADDED", obj("c", 12))
    lw.streams[0].send("DELETED", obj("b", 13))
    lw.streams[0].send("BOOKMARK", {"metadata": {"resourceVersion": "20"}})
    await until(lambda: informer.last_sync_resource_version == "20")
    assert rec.events[2:] == [("update", "a"), ("add", "c"), ("delete", obj("b", 13))]
    assert sorted(informer.indexer.list_keys()) == ["a", "c"]


async def test_a_watch_that_ends_resumes_at_once_from_the_last_resource_version(
    running: Running,
) -> None:
    _, lw, clock, _ = running
    lw.streams[0].send("ADDED", obj("c", 15))
    lw.streams[0].end()
    await until(lambda: len(lw.streams) == 2)
    assert lw.watch_rvs == ["10", "15"] and lw.lists == ["0"]
    assert lw.streams[0].stopped
    assert clock.deadlines() == []  # no backoff for a clean end


async def test_a_watch_that_ends_at_once_with_nothing_backs_off(running: Running) -> None:
    _, lw, clock, _ = running
    lw.streams[0].end()  # no event, no time passed: the server closes watches at once
    await until(lambda: len(clock.deadlines()) == 1)
    assert len(lw.streams) == 1
    clock.advance(clock.deadlines()[0] - clock.now())
    await until(lambda: len(lw.streams) == 2)
    clock.advance(1.0)  # a quiet watch that lasted is an ordinary end
    lw.streams[1].end()
    await until(lambda: len(lw.streams) == 3)
    assert lw.watch_rvs == ["10", "10", "10"] and lw.lists == ["0"]


async def test_a_broken_stream_backs_off_then_resumes_without_relisting(running: Running) -> None:
    _, lw, clock, _ = running
    lw.streams[0].send("ADDED", obj("c", 16))
    lw.streams[0].fail(Unavailable("etcd is gone"))
    await until(lambda: len(clock.deadlines()) == 1)
    pause = clock.deadlines()[0] - clock.now()
    assert 0.8 <= pause <= 1.6  # 800 ms plus up to 100 % jitter
    assert len(lw.streams) == 1
    clock.advance(pause)
    await until(lambda: len(lw.streams) == 2)
    assert lw.watch_rvs == ["10", "16"] and lw.lists == ["0"]


async def test_a_watch_that_cannot_open_backs_off_and_keeps_the_resource_version(
    running: Running,
) -> None:
    _, lw, clock, _ = running
    lw.watch_errors = [Unavailable("refused"), WatchError({"code": 500, "reason": "x"})]
    clock.advance(1.0)
    lw.streams[0].end()
    await until(lambda: len(clock.deadlines()) == 1)
    first = clock.deadlines()[0] - clock.now()
    clock.advance(first)
    await until(lambda: len(clock.deadlines()) == 1)
    second = clock.deadlines()[0] - clock.now()
    assert second >= 1.6  # the backoff doubled
    clock.advance(second)
    await until(lambda: len(lw.streams) == 2)
    assert lw.watch_rvs == ["10", "10", "10", "10"] and lw.lists == ["0"]


async def test_410_relists_at_the_last_rv_and_delivers_what_was_missed(running: Running) -> None:
    informer, lw, _, rec = running
    lw.streams[0].send("BOOKMARK", {"metadata": {"resourceVersion": "30"}})
    lw.answer(40, obj("a", 35), obj("d", 38))
    lw.streams[0].fail(Expired("too old resource version: 10 (30)"))
    await until(lambda: len(lw.streams) == 2)
    assert lw.lists == ["0", "30"] and lw.watch_rvs == ["10", "40"]
    tombstone = DeletedFinalStateUnknown("b", obj("b", 9))
    assert rec.events[2:] == [("delete", tombstone), ("update", "a"), ("add", "d")]
    assert sorted(informer.indexer.list_keys()) == ["a", "d"]


async def test_a_relist_too_old_for_the_cache_reads_etcd(running: Running) -> None:
    _, lw, clock, _ = running
    lw.list_answers = [Expired("too old"), *lw.list_answers]
    lw.answer(50, obj("a", 5))
    lw.watch_errors = [Expired("gone")]
    clock.advance(1.0)
    lw.streams[0].end()
    await until(lambda: len(lw.streams) == 2)
    assert lw.lists == ["0", "10", ""] and lw.watch_rvs == ["10", "10", "50"]


async def test_a_failed_list_is_retried_after_a_growing_backoff() -> None:
    lw, clock = FakeListerWatcher(), FakeClock()
    informer = SharedIndexInformer("widgets", lw, clock=clock)
    informer.reflector.backoff = Backoff(clock=clock, jitter=0.0)
    lw.list_answers = [Unavailable("down"), Unavailable("down")]
    lw.answer(3, obj("a", 2))
    task = asyncio.create_task(informer.run())
    pauses = []
    for _ in range(2):
        await until(lambda: len(clock.deadlines()) == 1)
        pauses.append(clock.deadlines()[0] - clock.now())
        clock.advance(pauses[-1])
    await until(informer.has_synced)
    assert pauses == pytest.approx([0.8, 1.6]) and lw.lists == ["0", "0", "0"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_the_backoff_caps_and_starts_over_after_a_quiet_spell() -> None:
    clock = FakeClock()
    backoff = Backoff(clock=clock, jitter=0.0)
    assert [backoff.next() for _ in range(8)] == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    clock.advance(121)
    assert backoff.next() == 0.8
    jittered = Backoff(clock=clock, rand=random.Random(1))
    pauses = [jittered.next() for _ in range(5)]
    base = [0.8, 1.6, 3.2, 6.4, 12.8]
    assert all(b <= p <= 2 * b for p, b in zip(pauses, base, strict=True))
    assert pauses != base  # jittered


async def test_a_late_handler_sees_every_object_and_a_failing_one_stops_nothing(
    running: Running,
) -> None:
    informer, lw, _, rec = running
    late = Recorder()

    def broken(o: Any) -> None:
        raise RuntimeError("bug")

    informer.add_event_handler(EventHandlers(on_add=broken))
    remove = informer.add_event_handler(late.handlers())
    assert late.events == [("add", "a"), ("add", "b")]
    lw.streams[0].send("ADDED", obj("e", 11))
    await until(lambda: ("add", "e") in rec.events)
    assert ("add", "e") in late.events
    remove()
    lw.streams[0].send("ADDED", obj("f", 12))
    await until(lambda: ("add", "f") in rec.events)
    assert ("add", "f") not in late.events
