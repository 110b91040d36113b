"""Freshness for consistent reads from the cache (kube-apiserver's ConsistentListFromCache,
``cacher/progress/watch_progress.go`` and the delegator's consistent-read branch).

A consistent LIST needs the cache to have seen every change up to etcd's *current*
revision (the store's ``current_resource_version``). A quiet resource's cache does not
move on its own, so while readers wait the requester asks etcd for progress
notifications every 100 ms through the store (``request_watch_progress``); etcd answers
with the revision every caught-up watch has reached, and the reflector advances the
cache's resourceVersion.

etcd's progress notifications were unreliable before 3.4.31 / 3.5.13 (see
``storage.etcd3.feature``). On those versions no progress is requested: a consistent
read is served from the cache only if the cache is already at etcd's revision, otherwise
it goes to etcd. Every outcome is counted.
"""

from __future__ import annotations

import asyncio
import enum
import logging

from cacher.clock import Clock
from cacher.watch_cache import DEFAULT_FRESHNESS_WAIT, WatchCache
from storage.errors import StorageError, TooLargeResourceVersion
from storage.interfaces import ListerWatcher

log = logging.getLogger(__name__)

PROGRESS_REQUEST_INTERVAL = 0.1


class Outcome(enum.Enum):
    FRESH = "fresh"  # the cache was already at etcd's revision
    PROGRESS = "progress"  # served after waiting, with progress requests
    FALLBACK_TIMEOUT = "fallback_timeout"  # not fresh within 3 s: etcd served it
    FALLBACK_UNSUPPORTED = "fallback_unsupported"  # etcd too old to request progress


class ProgressRequester:
    """Owned by one cacher; ``run`` is its task. Readers call ``wait_until_fresh``.

    ``_waiting`` counts readers in ``wait_until_fresh`` (changed only there)."""

    def __init__(
        self,
        store: ListerWatcher,
        cache: WatchCache,
        clock: Clock,
        *,
        interval: float = PROGRESS_REQUEST_INTERVAL,
        prefix: str = "",
    ) -> None:
        """``prefix``: the reflector's, whose watch stream the requests go to."""
        self._store = store
        self._prefix = prefix
        self._cache = cache
        self._clock = clock
        self._interval = interval
        self._waiting = 0
        self._kick = asyncio.Event()
        self.supported: bool | None = None  # None until etcd's version is known
        self.requests = 0

    async def detect(self) -> bool:
        """Whether progress may be requested (etcd's version, read once; storage errors)."""
        if self.supported is None:
            self.supported = await self._store.supports_request_watch_progress()
        return self.supported

    async def wait_until_fresh(
        self, resource_version: int, wait_seconds: float = DEFAULT_FRESHNESS_WAIT
    ) -> None:
        """Wait (requesting progress) until the cache reached ``resource_version``.
        TooLargeResourceVersion after ``wait_seconds``."""
        if self._cache.resource_version >= resource_version:
            return
        self._waiting += 1
        self._kick.set()
        try:
            await self._cache.wait_until_fresh(resource_version, wait_seconds)
        finally:
            self._waiting -= 1

    async def run(self) -> None:
        """Learn etcd's version, then request progress while readers wait — never on an
        etcd with the progress bugs, where a notification could move the cache's RV past
        events it has not received (waiters then simply time out)."""
        while self.supported is None:
            try:
                await self.detect()
            except StorageError as err:
                log.debug("etcd version unknown yet: %s", err)
                await self._clock.sleep(1.0)
        if not self.supported:
            return
        while True:
            await self._kick.wait()
            self._kick.clear()
            while self._waiting > 0:
                try:
                    await self._store.request_watch_progress(self._prefix)
                    self.requests += 1
                except StorageError as err:
                    log.debug("progress request failed: %s", err)
                await self._clock.sleep(self._interval)


__all__ = [
    "Outcome",
    "ProgressRequester",
    "TooLargeResourceVersion",
]
