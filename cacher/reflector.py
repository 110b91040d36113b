"""Keeps one resource's watch cache in step with etcd, after kube-apiserver's reflector
as the cacher drives it (``cacher.go`` startCaching, ``watch_cache.go`` Replace).

Cycle: LIST the prefix at one revision (pages of 10,000, every page at the first page's
revision), ``replace`` the cache, mark it ready, then WATCH from that revision + 1 with
prev_kv and progress notifications. Each event is applied to the cache and handed to the
dispatcher; a progress notification only advances the cache's resourceVersion.

Failures: the etcd client's watch resumes by itself across etcd restarts and leader
changes from the last delivered revision + 1, so an outage is invisible here (the cache
keeps serving its stale state). Only when that revision was compacted (``Compacted``) or
etcd cancels the watch does the cycle end: the cache turns pending, every client watch is
closed (clients reconnect and get 410 for RVs before the new list), and it re-lists. A
failed LIST is retried with a capped backoff.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from cacher.cache_watcher import CloseReason
from cacher.clock import Clock
from cacher.dispatcher import Dispatcher
from cacher.ready import Ready
from cacher.watch_cache import WatchCache
from etcdclient import prefix_end
from etcdclient.errors import Compacted, EtcdError
from etcdclient.types import Event, EventType, RangeResult, WatchBatch
from storage import codec
from storage.errors import StorageError
from storage.interfaces import StoredObject

log = logging.getLogger(__name__)

PAGE_SIZE = 10_000
BACKOFF_INITIAL = 0.1
BACKOFF_MAX = 2.0


class EtcdWatch(Protocol):
    def __aiter__(self) -> AsyncIterator[WatchBatch]: ...

    async def cancel(self) -> None: ...


class ListerWatcher(Protocol):
    """The part of ``etcdclient.EtcdClient`` the reflector uses."""

    async def range(
        self,
        key: bytes,
        range_end: bytes | None = None,
        *,
        limit: int = 0,
        revision: int = 0,
        count_only: bool = False,
    ) -> RangeResult: ...

    def watch(
        self,
        key: bytes,
        range_end: bytes | None = None,
        *,
        start_revision: int = 0,
        prev_kv: bool = False,
        progress_notify: bool = False,
    ) -> EtcdWatch: ...


class Reflector:
    """Runs as one task owned by the cacher (``run``); cancelling it stops the watch.

    ``initializations`` counts successful (re-)lists; ``last_error`` is for /readyz."""

    def __init__(
        self,
        *,
        client: ListerWatcher,
        prefix: str,
        cache: WatchCache,
        dispatcher: Dispatcher,
        ready: Ready,
        clock: Clock,
        page_size: int = PAGE_SIZE,
        on_event: Callable[[], None] | None = None,
        on_initialized: Callable[[], None] | None = None,
    ) -> None:
        self._client = client
        self.prefix = prefix
        self._key = prefix.encode()
        self._end = prefix_end(self._key)
        self._cache = cache
        self._dispatcher = dispatcher
        self._ready = ready
        self._clock = clock
        self._page_size = page_size
        self._on_event = on_event
        self._on_initialized = on_initialized
        self.initializations = 0
        self.last_error: BaseException | None = None

    async def run(self) -> None:
        backoff = BACKOFF_INITIAL
        while True:
            try:
                rev = await self._list()
            except (EtcdError, StorageError) as err:
                self.last_error = err
                log.warning("cacher %s: list failed: %s; retrying", self.prefix, err)
                await self._clock.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
                continue
            backoff = BACKOFF_INITIAL
            try:
                await self._watch(rev)
            except Compacted as err:
                log.warning("cacher %s: watch from %d compacted (%s); re-listing",
                            self.prefix, self._cache.resource_version + 1, err)  # fmt: skip
                self.last_error = err
            except EtcdError as err:
                log.warning("cacher %s: watch failed: %s; re-listing", self.prefix, err)
                self.last_error = err
                await self._clock.sleep(backoff)
            self._ready.set_pending()
            self._dispatcher.terminate_all(CloseReason.REPLACED)

    async def _list(self) -> int:
        """Read the whole prefix at one revision and replace the cache's state."""
        items: list[StoredObject] = []
        page = await self._client.range(self._key, self._end, limit=self._page_size)
        rev = page.revision
        while True:
            for kv in page.kvs:
                items.append(self._decode(kv.key, kv.value, kv.mod_revision))
            if not page.more or not page.kvs:
                break
            start = page.kvs[-1].key + b"\x00"
            page = await self._client.range(start, self._end, limit=self._page_size, revision=rev)
        self._cache.replace(items, rev)
        self.initializations += 1
        self.last_error = None
        self._ready.set_ready()
        if self._on_initialized is not None:
            self._on_initialized()
        return rev

    async def _watch(self, rev: int) -> None:
        watch = self._client.watch(
            self._key, self._end, start_revision=rev + 1, prev_kv=True, progress_notify=True
        )
        try:
            async for batch in watch:
                if batch.events:
                    for ev in batch.events:
                        self._apply(ev)
                elif batch.progress_notify:
                    self._cache.update_resource_version(batch.revision)
        finally:
            await watch.cancel()
        raise EtcdError("etcd watch ended")

    def _apply(self, ev: Event) -> None:
        key = ev.kv.key.decode()
        rev = ev.kv.mod_revision
        stored: StoredObject | None = None
        if ev.type is EventType.PUT:
            try:
                stored = self._decode(ev.kv.key, ev.kv.value, rev)
            except StorageError as err:  # a corrupt value: skip it, keep the stream
                log.error("cacher %s: %s", self.prefix, err)
                self._cache.update_resource_version(rev)
                return
        event = self._cache.process(key, stored, rev)
        if event is not None:
            if self._on_event is not None:
                self._on_event()
            self._dispatcher.dispatch(event)

    @staticmethod
    def _decode(key: bytes, value: bytes, rev: int) -> StoredObject:
        return codec.decode(key.decode(), value, rev, keep_obj=True)
