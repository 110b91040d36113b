"""The reflector's list/watch cycle against a fake storage floor (pages and change
batches fed by the test), and the compactor's rounds against a fake etcd client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import orjson

from cacher.cache_watcher import CacheWatcher, CloseReason
from cacher.clock import FakeClock
from cacher.dispatcher import Dispatcher
from cacher.ready import Ready
from cacher.reflector import Reflector
from etcdclient.types import GetResult, KeyValue, TxnResult
from storage import codec
from storage.errors import CorruptObject, Expired
from storage.etcd3.compact import COMPACT_REV_KEY, Compactor
from storage.interfaces import Change, ChangeBatch, ListPage, StoredObject
from tests.unit.cacher.helpers import PREFIX, new_cache, predicate


def stored(name: str, rev: int, labels: dict[str, Any] | None = None) -> StoredObject:
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if labels is not None:
        meta["labels"] = labels
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
    return codec.decode(f"{PREFIX}ns/{name}", codec.encode(obj), rev, keep_obj=True)


class FakeStream:
    def __init__(self, batches: asyncio.Queue[ChangeBatch | Exception]) -> None:
        self.batches = batches
        self.stopped = False

    def __aiter__(self) -> AsyncIterator[ChangeBatch]:
        return self._iter()

    async def _iter(self) -> AsyncIterator[ChangeBatch]:
        while True:
            item = await self.batches.get()
            if isinstance(item, Exception):
                raise item
            yield item

    async def stop(self) -> None:
        self.stopped = True


class FakeStore:
    """Pages of ``page`` objects at a fixed revision; change streams fed by the test."""

    def __init__(self, objects: list[StoredObject], revision: int) -> None:
        self.objects, self.revision = objects, revision
        self.corrupt: list[CorruptObject] = []
        self.lists: list[int] = []
        self.watches: list[int] = []
        self.batches: asyncio.Queue[ChangeBatch | Exception] = asyncio.Queue()

    async def list_pages(self, prefix: str, *, page_size: int) -> AsyncGenerator[ListPage, None]:
        self.lists.append(page_size)
        for first in range(0, max(len(self.objects), 1), page_size):
            corrupt = self.corrupt if first == 0 else []
            yield ListPage(self.objects[first : first + page_size], corrupt, self.revision)

    def watch_changes(self, prefix: str, start_revision: int) -> FakeStream:
        self.watches.append(start_revision)
        return FakeStream(self.batches)

    async def current_resource_version(self) -> int:
        return self.revision

    async def supports_request_watch_progress(self) -> bool:
        return False

    async def request_watch_progress(self, prefix: str = "") -> None:
        raise AssertionError("not requested")


def setup(etcd: FakeStore) -> tuple[Reflector, Dispatcher, Ready, Any]:
    clock = FakeClock()
    cache = new_cache(clock)
    d = Dispatcher(clock=clock, kind="Pod", api_version="v1")
    ready = Ready(clock)
    r = Reflector(store=etcd, prefix=PREFIX, cache=cache, dispatcher=d, ready=ready,
                  clock=clock, page_size=2)  # fmt: skip
    return r, d, ready, cache


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_paged_list_at_one_revision_then_watch_from_next() -> None:
    etcd = FakeStore([stored(n, i + 2) for i, n in enumerate("abcde")], revision=10)
    r, _, ready, cache = setup(etcd)
    task = asyncio.ensure_future(r.run())
    await settle()
    assert ready.check() and len(cache) == 5 and cache.resource_version == 10
    assert etcd.lists == [2] and etcd.watches == [11]
    etcd.batches.put_nowait(ChangeBatch((Change(f"{PREFIX}ns/f", stored("f", 12), 12),)))
    etcd.batches.put_nowait(ChangeBatch(progress=15))
    await settle()
    assert cache.get(f"{PREFIX}ns/f") is not None and cache.resource_version == 15
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_compacted_watch_relists_and_closes_watchers() -> None:
    etcd = FakeStore([stored("a", 2)], revision=10)
    r, d, ready, cache = setup(etcd)
    task = asyncio.ensure_future(r.run())
    await settle()
    w = CacheWatcher(key=PREFIX, recursive=True, predicate=predicate(), start_rv=10,
                     initial=iter(()), clock=FakeClock(), on_close=d.forget)  # fmt: skip
    d.add_watcher(w)
    etcd.objects, etcd.revision = [stored("a", 2), stored("b", 30)], 40
    etcd.batches.put_nowait(Expired("compacted"))
    await settle()
    assert w.closed is CloseReason.REPLACED and len(d) == 0
    assert r.initializations == 2 and ready.check() and ready.generation == 2
    assert cache.resource_version == 40 and len(cache) == 2
    assert etcd.watches[-1] == 41
    etcd.batches.put_nowait(ChangeBatch((Change(f"{PREFIX}ns/a", None, 41),)))
    await settle()
    ev = cache.events_since(40)[0]
    assert ev.type == "DELETED"
    assert orjson.loads(ev.object.stored.data)["metadata"]["resourceVersion"] == "41"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_corrupt_values_are_skipped_in_list_and_watch() -> None:
    etcd = FakeStore([stored("a", 2), stored("bad", 3, labels={"x": 1})], revision=10)
    etcd.corrupt = [CorruptObject(f"{PREFIX}ns/raw", "not JSON", 4)]
    r, _, ready, cache = setup(etcd)
    task = asyncio.ensure_future(r.run())
    await settle()
    assert ready.check() and len(cache) == 1 and r.corrupt == 2
    etcd.batches.put_nowait(ChangeBatch((
        Change(f"{PREFIX}ns/x", None, 11, corrupt=CorruptObject(f"{PREFIX}ns/x", "k8s", 11)),
        Change(f"{PREFIX}ns/y", stored("y", 12, labels={"n": [1]}), 12),
        Change(f"{PREFIX}ns/z", stored("z", 13), 13),
    )))  # fmt: skip
    await settle()
    assert [k for k in ("a", "x", "y", "z") if cache.get(f"{PREFIX}ns/{k}")] == ["a", "z"]
    assert r.corrupt == 4 and cache.resource_version == 13 and r.initializations == 1
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


class FakeCompactClient:
    def __init__(self) -> None:
        self.key_rev = 0  # mod_revision of compact_rev_key
        self.value = b""  # compact_rev_key's value: the revision its writer compacts to
        self.revision = 100
        self.compactions: list[int] = []

    async def get(self, key: bytes, *, revision: int = 0) -> GetResult:
        assert key == COMPACT_REV_KEY
        kv = KeyValue(key, self.value, 1, self.key_rev, 1) if self.key_rev else None
        return GetResult(self.revision, kv)

    async def optimistic_put(self, key: bytes, value: bytes, expected_mod_revision: int,
                             *, lease: int = 0) -> TxnResult:  # fmt: skip
        assert key == COMPACT_REV_KEY
        if expected_mod_revision != self.key_rev:
            return TxnResult(self.revision, False, KeyValue(key, self.value, 1, self.key_rev, 1))
        self.revision += 1
        self.key_rev = self.revision
        self.value = value
        return TxnResult(self.revision, True, KeyValue(key, value, 1, self.revision, 1))

    async def compact(self, revision: int, *, physical: bool = False) -> int:
        self.compactions.append(revision)
        return self.revision


async def test_compactor_compacts_what_it_saw_an_interval_ago() -> None:
    etcd = FakeCompactClient()
    c = Compactor(etcd, 300)  # type: ignore[arg-type]
    await c.round()  # bootstrap: no compaction, remember the revision
    assert etcd.compactions == [] and c.next_revision == 101
    etcd.revision += 50  # writes during the interval
    await c.round()
    assert etcd.compactions == [101]
    assert c.next_revision == 152


async def test_two_servers_do_not_double_compact() -> None:
    etcd = FakeCompactClient()
    a, b = Compactor(etcd, 300), Compactor(etcd, 300)  # type: ignore[arg-type]
    for _ in range(3):
        await a.round()
        await b.round()  # b always finds a's write: it only follows
        etcd.revision += 10
    assert etcd.compactions == [101, 112]
    assert b.compacted == []


async def test_compactor_runs_every_interval_until_stopped() -> None:
    etcd, clock = FakeCompactClient(), FakeClock()
    c = Compactor(etcd, 300, sleep=clock.sleep)  # type: ignore[arg-type]
    c.start()
    for _ in range(3):
        await settle()
        clock.advance(300)
    await settle()
    assert c.running and etcd.compactions == [101, 102]  # the first round only bootstraps
    await c.stop()
    assert not c.running
    await c.stop()  # idempotent


async def test_every_server_knows_the_latest_compaction() -> None:
    """The compact revision the watch caches drop their snapshots by: the winner's own
    compaction, what a loser reads in compact_rev_key, and what a server that does not
    compact observes there (ListFromCacheSnapshot)."""
    etcd = FakeCompactClient()
    a, b = Compactor(etcd, 300), Compactor(etcd, 300)  # type: ignore[arg-type]
    watcher = Compactor(etcd, 0, observe_interval=15)  # type: ignore[arg-type]
    await a.round()
    etcd.revision += 10
    await a.round()  # compacts to 101
    await b.round()  # loses: learns 101 from the key
    await watcher.observe()
    assert etcd.compactions == [101]
    assert a.compact_revision == b.compact_revision == watcher.compact_revision == 101


async def test_a_long_watch_batch_gives_the_loop_turns(monkeypatch: Any) -> None:
    """A batch is applied in steps of at most ``STEP_SECONDS`` (here 0: one change a
    step): another task runs while it is half applied (150 pod updates in one step held
    the loop 21-34 ms in the benchmark)."""
    monkeypatch.setattr("cacher.reflector.STEP_SECONDS", 0.0)
    etcd = FakeStore([stored("a", 2)], revision=10)
    r, _, _, cache = setup(etcd)
    task = asyncio.ensure_future(r.run())
    await settle()
    seen: list[int] = []

    async def other() -> None:
        while len(cache) < 51:
            seen.append(len(cache))
            await asyncio.sleep(0)

    watcher = asyncio.ensure_future(other())
    changes = tuple(Change(f"{PREFIX}ns/n{i}", stored(f"n{i}", 11 + i), 11 + i) for i in range(50))
    etcd.batches.put_nowait(ChangeBatch(changes))
    await asyncio.wait_for(watcher, 5)
    assert any(1 < n < 51 for n in seen), seen  # it ran between two changes of the batch
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
