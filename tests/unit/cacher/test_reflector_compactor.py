"""The reflector's list/watch cycle and the compactor's rounds, against fake etcd clients."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson

from cacher.cache_watcher import CacheWatcher, CloseReason
from cacher.clock import FakeClock
from cacher.compactor import COMPACT_REV_KEY, Compactor
from cacher.dispatcher import Dispatcher
from cacher.ready import Ready
from cacher.reflector import Reflector
from etcdclient.errors import Compacted
from etcdclient.types import Event, EventType, KeyValue, RangeResult, TxnResult, WatchBatch
from storage import codec
from tests.unit.cacher.helpers import PREFIX, new_cache, predicate


def kv(name: str, rev: int) -> KeyValue:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"}}
    return KeyValue(f"{PREFIX}ns/{name}".encode(), codec.encode(obj), rev, rev, 1)


class FakeWatch:
    def __init__(self, batches: asyncio.Queue[WatchBatch | Exception]) -> None:
        self.batches = batches
        self.cancelled = False

    def __aiter__(self) -> AsyncIterator[WatchBatch]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[WatchBatch]:
        while True:
            item = await self.batches.get()
            if isinstance(item, Exception):
                raise item
            yield item

    async def cancel(self) -> None:
        self.cancelled = True


class FakeEtcd:
    """Pages of ``page`` keys at a fixed revision; watches fed by the test."""

    def __init__(self, kvs: list[KeyValue], revision: int) -> None:
        self.kvs, self.revision = kvs, revision
        self.ranges: list[tuple[bytes, int, int]] = []
        self.watches: list[tuple[int, bool, bool]] = []
        self.batches: asyncio.Queue[WatchBatch | Exception] = asyncio.Queue()

    async def range(self, key: bytes, range_end: bytes | None = None, *, limit: int = 0,
                    revision: int = 0, count_only: bool = False) -> RangeResult:  # fmt: skip
        self.ranges.append((key, limit, revision))
        rest = [k for k in self.kvs if k.key >= key]
        return RangeResult(self.revision, rest[:limit], more=len(rest) > limit)

    def watch(self, key: bytes, range_end: bytes | None = None, *, start_revision: int = 0,
              prev_kv: bool = False, progress_notify: bool = False) -> FakeWatch:  # fmt: skip
        self.watches.append((start_revision, prev_kv, progress_notify))
        return FakeWatch(self.batches)


def setup(etcd: FakeEtcd) -> tuple[Reflector, Dispatcher, Ready, Any]:
    clock = FakeClock()
    cache = new_cache(clock)
    d = Dispatcher(clock=clock, kind="Pod", api_version="v1")
    ready = Ready(clock)
    r = Reflector(client=etcd, prefix=PREFIX, cache=cache, dispatcher=d, ready=ready,
                  clock=clock, page_size=2)  # fmt: skip
    return r, d, ready, cache


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_paged_list_at_one_revision_then_watch_from_next() -> None:
    etcd = FakeEtcd([kv(n, i + 2) for i, n in enumerate("abcde")], revision=10)
    r, _, ready, cache = setup(etcd)
    task = asyncio.ensure_future(r.run())
    await settle()
    assert ready.check() and len(cache) == 5 and cache.resource_version == 10
    assert [rev for _, _, rev in etcd.ranges] == [0, 10, 10]  # later pages at the first's rev
    assert etcd.watches == [(11, True, True)]
    etcd.batches.put_nowait(WatchBatch(12, (Event(EventType.PUT, kv("f", 12)),)))
    etcd.batches.put_nowait(WatchBatch(15, progress_notify=True))
    await settle()
    assert cache.get(f"{PREFIX}ns/f") is not None and cache.resource_version == 15
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_compacted_watch_relists_and_closes_watchers() -> None:
    etcd = FakeEtcd([kv("a", 2)], revision=10)
    r, d, ready, cache = setup(etcd)
    task = asyncio.ensure_future(r.run())
    await settle()
    w = CacheWatcher(key=PREFIX, recursive=True, predicate=predicate(), start_rv=10,
                     initial=iter(()), clock=FakeClock(), on_close=d.forget)  # fmt: skip
    d.add_watcher(w)
    etcd.kvs, etcd.revision = [kv("a", 2), kv("b", 30)], 40
    etcd.batches.put_nowait(Compacted(35))
    await settle()
    assert w.closed is CloseReason.REPLACED and len(d) == 0
    assert r.initializations == 2 and ready.check() and ready.generation == 2
    assert cache.resource_version == 40 and len(cache) == 2
    assert etcd.watches[-1] == (41, True, True)
    deleted = Event(EventType.DELETE, KeyValue(f"{PREFIX}ns/a".encode(), b"", 0, 41, 0))
    etcd.batches.put_nowait(WatchBatch(41, (deleted,)))
    await settle()
    ev = cache.events_since(40)[0]
    assert ev.type == "DELETED"
    assert orjson.loads(ev.object.stored.data)["metadata"]["resourceVersion"] == "41"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


class FakeCompactClient:
    def __init__(self) -> None:
        self.key_rev = 0  # mod_revision of compact_rev_key
        self.revision = 100
        self.compactions: list[int] = []

    async def optimistic_put(self, key: bytes, value: bytes, expected_mod_revision: int,
                             *, lease: int = 0) -> TxnResult:  # fmt: skip
        assert key == COMPACT_REV_KEY
        if expected_mod_revision != self.key_rev:
            return TxnResult(self.revision, False, KeyValue(key, b"", 1, self.key_rev, 1))
        self.revision += 1
        self.key_rev = self.revision
        return TxnResult(self.revision, True, KeyValue(key, value, 1, self.revision, 1))

    async def compact(self, revision: int, *, physical: bool = False) -> int:
        self.compactions.append(revision)
        return self.revision


async def test_compactor_compacts_what_it_saw_an_interval_ago() -> None:
    etcd = FakeCompactClient()
    c = Compactor(etcd, 300, FakeClock())
    await c.round()  # bootstrap: no compaction, remember the revision
    assert etcd.compactions == [] and c.next_revision == 101
    etcd.revision += 50  # writes during the interval
    await c.round()
    assert etcd.compactions == [101]
    assert c.next_revision == 152


async def test_two_servers_do_not_double_compact() -> None:
    etcd = FakeCompactClient()
    a, b = Compactor(etcd, 300, FakeClock()), Compactor(etcd, 300, FakeClock())
    for _ in range(3):
        await a.round()
        await b.round()  # b always finds a's write: it only follows
        etcd.revision += 10
    assert etcd.compactions == [101, 112]
    assert b.compacted == []


async def test_acquire_shares_one_compactor_per_client_and_zero_disables() -> None:
    etcd = FakeCompactClient()
    assert Compactor.acquire(etcd, 0) is None
    one = Compactor.acquire(etcd, 300, FakeClock())
    two = Compactor.acquire(etcd, 300, FakeClock())
    assert one is two and one is not None
    await one.release()
    assert one._task is not None
    await one.release()
    assert one._task is None
