"""The shared informer's reflector against real storage on a real etcd: over the etcd3
store, the first LIST, live events through the WATCH, a watch that ends resumed from
the last resourceVersion, and after a compaction past that resourceVersion one 410 that
relists and delivers the deletion it missed as a tombstone; over the watch cache,
bookmarks that move its resourceVersion while nothing it watches changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from etcdclient import EtcdClient
from lab.etcd import EtcdCluster
from proxy.informer import (
    DeletedFinalStateUnknown,
    EventHandlers,
    SharedIndexInformer,
    StorageListerWatcher,
)
from proxy.informer.lister_watcher import ListResult, WatchEvent, WatchStream
from storage import keys
from storage.etcd3 import Etcd3Store
from tests.integration.storage_suite import create, key_of, pod
from tests.integration.test_cacher_support import cached_store

pytestmark = pytest.mark.etcd

EVENT_TIMEOUT = 10.0


class Seen:
    """Every event the informer delivers, and a way to await a condition on them."""

    def __init__(self, informer: SharedIndexInformer) -> None:
        self.events: list[tuple[str, Any]] = []
        self._changed = asyncio.Event()
        informer.add_event_handler(
            EventHandlers(
                on_add=lambda o: self._record("add", o["metadata"]["name"]),
                on_update=lambda old, new: self._record("update", new["metadata"]["name"]),
                on_delete=lambda o: self._record("delete", o),
            )
        )

    def _record(self, kind: str, what: Any) -> None:
        self.events.append((kind, what))
        self._changed.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(EVENT_TIMEOUT):
            while not condition():
                self._changed.clear()
                await self._changed.wait()


class _Tapped:
    """A watch stream that sets ``passed`` as each event goes by."""

    def __init__(self, inner: WatchStream, passed: asyncio.Event) -> None:
        self.inner = inner
        self.passed = passed

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        async for event in self.inner:
            yield event
            self.passed.set()

    async def stop(self) -> None:
        await self.inner.stop()


class Gated:
    """The real storage lister-watcher, with a test hand on when watches open and end:
    ``cut()`` ends the open watch (as a dropped connection would) and holds the next
    one until ``release()``, so the test can write (and compact) in between."""

    def __init__(self, inner: StorageListerWatcher) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.gate.set()
        self.current: WatchStream | None = None
        self.watch_rvs: list[str] = []
        self.watched = asyncio.Event()  # set at every watch opened
        self.passed = asyncio.Event()  # set at every event a watch delivers (bookmarks too)

    async def list(self, resource_version: str) -> ListResult:
        return await self.inner.list(resource_version)

    async def watch(self, resource_version: str, *, timeout_seconds: float) -> WatchStream:
        await self.gate.wait()
        self.watch_rvs.append(resource_version)
        self.current = await self.inner.watch(resource_version, timeout_seconds=timeout_seconds)
        self.watched.set()
        return _Tapped(self.current, self.passed)

    async def cut(self) -> None:
        self.gate.clear()
        assert self.current is not None
        await self.current.stop()

    def release(self) -> None:
        self.gate.set()


@contextlib.asynccontextmanager
async def running(informer: SharedIndexInformer) -> AsyncIterator[None]:
    task = asyncio.create_task(informer.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_reflector_over_etcd_watches_then_relists_once_after_compaction(
    etcd_own: EtcdCluster, etcd_prefix: str
) -> None:
    async with EtcdClient(etcd_own.endpoints, request_timeout=5.0) as client:
        store = Etcd3Store(client, request_timeout=5.0)
        prefix = keys.resource_prefix("", "pods", etcd_prefix)
        lw = Gated(StorageListerWatcher(lambda: (store, prefix)))
        informer = SharedIndexInformer("pods", lw)
        seen = Seen(informer)
        await create(store, prefix, pod("a"))
        await create(store, prefix, pod("b"))
        async with running(informer):
            await seen.until(informer.has_synced)
            assert seen.events == [("add", "a"), ("add", "b")]
            await create(store, prefix, pod("c"))
            gone = await store.delete(key_of(prefix, "a"))
            await seen.until(lambda: len(seen.events) == 4)
            assert seen.events[2] == ("add", "c") and seen.events[3][0] == "delete"
            last = str(gone.resource_version)
            assert informer.last_sync_resource_version == last
            # the watch ends; meanwhile a deletion, new objects, a compaction past ``last``
            await lw.cut()
            await store.delete(key_of(prefix, "c"))
            await create(store, prefix, pod("d"))
            latest = await create(store, prefix, pod("e"))
            await client.compact(latest.resource_version, physical=True)
            lw.release()
            await seen.until(lambda: "ns/e" in informer.indexer)
            assert informer.reflector.lists == 2  # the 410 relisted, once
            assert lw.watch_rvs[:2] == [lw.watch_rvs[0], last]  # resumed from the last RV
            async with asyncio.timeout(EVENT_TIMEOUT):
                while len(lw.watch_rvs) < 3:  # watching again, from the relist's RV
                    lw.watched.clear()
                    await lw.watched.wait()
        assert sorted(informer.indexer.list_keys()) == ["ns/b", "ns/d", "ns/e"]
        deletes = [what for kind, what in seen.events[4:] if kind == "delete"]
        assert len(deletes) == 1 and isinstance(deletes[0], DeletedFinalStateUnknown)
        assert deletes[0].key == "ns/c"
        assert int(informer.last_sync_resource_version) >= latest.resource_version
        await store.close()


async def test_over_the_watch_cache_bookmarks_move_the_resource_version_without_events(
    etcd: EtcdCluster, etcd_prefix: str
) -> None:
    """Watching one namespace of the pods cache: writes in another namespace deliver
    nothing, but the cache's BOOKMARKs carry its progress to the informer."""
    async with (
        EtcdClient(etcd.endpoints, request_timeout=5.0) as client,
        cached_store(client, etcd_prefix, bookmark_interval=0.2) as cached,
    ):
        prefix = f"{etcd_prefix}/pods/"
        lw = Gated(StorageListerWatcher(lambda: (cached, prefix + "ns/")))
        informer = SharedIndexInformer("pods-in-ns", lw)
        seen = Seen(informer)
        await create(cached, prefix, pod("a"))
        async with running(informer):
            await seen.until(lambda: "ns/a" in informer.indexer)
            elsewhere = await create(cached, prefix, pod("b", namespace="other"))
            async with asyncio.timeout(EVENT_TIMEOUT):
                while int(informer.last_sync_resource_version) < elsewhere.resource_version:
                    lw.passed.clear()
                    await lw.passed.wait()
        assert seen.events == [("add", "a")]
        assert informer.reflector.lists == 1 and informer.reflector.watches == 1
