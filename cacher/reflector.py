"""Keeps one resource's watch cache in step with etcd, after kube-apiserver's reflector
as the cacher drives it (``cacher.go`` startCaching, ``watch_cache.go`` Replace).

It reads etcd only through the storage floor (``storage.interfaces.ListerWatcher``, the
etcd3 store): errors arrive translated, every call is in etcd_request_duration_seconds.

Cycle: LIST the prefix at one revision (``list_pages``: pages of 10,000 keys at the first
page's revision, decoded in slices that yield to the event loop), build the new state
beside the old one slice by slice and swap it in at once (``WatchCache.swap``), mark
the cache ready, then WATCH from that revision + 1 with progress notifications. Each
change is applied to the cache and handed to the dispatcher; a progress notification
only advances the cache's resourceVersion.

A value that cannot be decoded (not JSON, a foreign encoding, labels that are not
strings) is reported (log, ``apiserver_storage_decode_errors_total``) and skipped, in
the LIST and in the WATCH alike: the cache holds every valid object and moves on. A
corrupt value written over a valid one takes the valid one out of the cache (a
DELETED event at the corrupt revision: what a re-list would find), as upstream's cacher
cannot keep serving a version etcd no longer has; its key is in ``corrupt_keys`` (the
``watchcache_corrupt_objects`` gauge, ``/readyz?verbose``) until a valid value or a
delete replaces it.

Failures: the etcd client's watch resumes by itself across etcd restarts and leader
changes from the last delivered revision + 1, so an outage is invisible here (the cache
keeps serving its stale state). Only when that revision was compacted (``Expired``) or
the watch fails or ends does the cycle end: the cache turns pending, every client watch
is closed (clients reconnect and get 410 for RVs before the new list), and it re-lists.
A failed LIST is retried with a capped backoff. Anything else escaping is a bug the
cacher's supervisor handles (restart with backoff).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from cacher.cache_watcher import CloseReason
from cacher.clock import Clock
from cacher.dispatcher import Dispatcher
from cacher.ready import Ready
from cacher.watch_cache import WatchCache
from storage.errors import CorruptObject, Expired, StorageError
from storage.interfaces import Change, ListerWatcher

log = logging.getLogger(__name__)

PAGE_SIZE = 10_000
# how long the reflector applies a watch batch before it gives the event loop a turn
# (a listed page is a slice already: storage.etcd3.lister_watcher.DECODE_SLICE): a
# batch of 150 pod updates, each indexed and dispatched, took one 21-34 ms step
STEP_SECONDS = 0.005
BACKOFF_INITIAL = 0.1
BACKOFF_MAX = 2.0


class Reflector:
    """Runs as one task owned by the cacher (``run``); cancelling it stops the watch.

    ``initializations`` counts successful (re-)lists; ``last_error`` is for /readyz;
    ``corrupt`` counts values skipped because they could not be decoded;
    ``corrupt_keys`` are the keys whose newest value is such a value (changed by the
    reflector only)."""

    def __init__(
        self,
        *,
        store: ListerWatcher,
        prefix: str,
        cache: WatchCache,
        dispatcher: Dispatcher,
        ready: Ready,
        clock: Clock,
        page_size: int = PAGE_SIZE,
        on_event: Callable[[], None] | None = None,
        on_initialized: Callable[[], None] | None = None,
        on_corrupt: Callable[[CorruptObject], None] | None = None,
    ) -> None:
        self._store = store
        self.prefix = prefix
        self._cache = cache
        self._dispatcher = dispatcher
        self._ready = ready
        self._clock = clock
        self._page_size = page_size
        self._on_event = on_event
        self._on_initialized = on_initialized
        self._on_corrupt = on_corrupt
        self.initializations = 0
        self.corrupt = 0
        self.corrupt_keys: set[str] = set()
        self.last_error: BaseException | None = None

    async def run(self) -> None:
        backoff = BACKOFF_INITIAL
        while True:
            try:
                rev = await self._list()
            except StorageError as err:
                self.last_error = err
                log.warning("cacher %s: list failed: %s; retrying", self.prefix, err.message)
                await self._clock.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
                continue
            backoff = BACKOFF_INITIAL
            try:
                await self._watch(rev)
            except Expired as err:
                log.warning("cacher %s: watch from %d compacted (%s); re-listing",
                            self.prefix, self._cache.resource_version + 1, err)  # fmt: skip
                self.last_error = err
            except StorageError as err:
                log.warning("cacher %s: watch failed: %s; re-listing", self.prefix, err.message)
                self.last_error = err
                await self._clock.sleep(backoff)
            self._ready.set_pending()
            self._dispatcher.terminate_all(CloseReason.REPLACED)

    async def _list(self) -> int:
        """Read the whole prefix at one revision and replace the cache's state."""
        replacement = self._cache.new_replacement()
        corrupt_keys: set[str] = set()
        rev = 0
        pages = self._store.list_pages(self.prefix, page_size=self._page_size)
        async with contextlib.aclosing(pages):
            async for page in pages:
                rev = page.resource_version
                for err in page.corrupt:
                    self._report(err)
                    corrupt_keys.add(err.key)
                for err in replacement.add(page.items):
                    self._report(err)
                    corrupt_keys.add(err.key)
        self._cache.swap(replacement, rev)
        self.corrupt_keys = corrupt_keys
        self.initializations += 1
        self.last_error = None
        self._ready.set_ready()
        if self._on_initialized is not None:
            self._on_initialized()
        return rev

    async def _watch(self, rev: int) -> None:
        stream = self._store.watch_changes(self.prefix, rev + 1)
        try:
            async for batch in stream:
                step = time.perf_counter() + STEP_SECONDS
                for change in batch.changes:
                    # a watcher is full (let its client drain before the next event),
                    # or this step has run long enough: others get the loop
                    if self._apply(change) or time.perf_counter() > step:
                        await asyncio.sleep(0)
                        step = time.perf_counter() + STEP_SECONDS
                if batch.progress:
                    self._cache.update_resource_version(batch.progress)
        finally:
            await stream.stop()
        raise StorageError("etcd watch ended")

    def _apply(self, change: Change) -> bool:
        """Apply one change to the cache and dispatch it; True when a watcher is now at
        its soft limit (``Dispatcher.dispatch``)."""
        if change.corrupt is not None:
            return self._skip(change.key, change.corrupt)
        try:
            event = self._cache.process(change.key, change.object, change.resource_version)
        except CorruptObject as err:  # decoded, but its labels/fields are unreadable
            return self._skip(change.key, err)
        self.corrupt_keys.discard(change.key)
        if event is None:
            return False
        if self._on_event is not None:
            self._on_event()
        return self._dispatcher.dispatch(event)

    def _skip(self, key: str, err: CorruptObject) -> bool:
        """A corrupt new value: report it; the key's last valid version, if the cache
        holds one, leaves it as a DELETED event at the corrupt revision (dispatched:
        True when a watcher is now at its soft limit); the revision moves past it."""
        self._report(err)
        self.corrupt_keys.add(key)
        event = self._cache.process(key, None, err.revision)  # no-op if not held
        if event is None:
            return False
        if self._on_event is not None:
            self._on_event()
        return self._dispatcher.dispatch(event)

    def _report(self, err: CorruptObject) -> None:
        self.corrupt += 1
        log.error("cacher %s: skipping a value that cannot be decoded: %s",
                  self.prefix, err.message)  # fmt: skip
        if self._on_corrupt is not None:
            self._on_corrupt(err)
