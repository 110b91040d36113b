"""Freshness for consistent reads from the cache (kube-apiserver's ConsistentListFromCache,
``cacher/progress/watch_progress.go`` and the delegator's consistent-read branch).

A consistent LIST needs the cache to have seen every change up to etcd's *current*
revision, which is read with a one-key range on the resource prefix (its header carries
the revision). A quiet resource's cache does not move on its own, so while readers wait
the requester asks etcd for progress notifications every 100 ms on the client's shared
watch stream; etcd answers with the revision every caught-up watch has reached, and the
reflector advances the cache's resourceVersion.

etcd's progress notifications were unreliable before 3.4.31 / 3.5.13 (etcd issues
#15220 and #17507: a notification could claim a revision some events of the watch had not
yet been sent for, or be sent to the wrong watch). On those versions no progress is
requested: a consistent read is served from the cache only if the cache is already at
etcd's revision, otherwise it goes to etcd. Every outcome is counted.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import Protocol

from cacher.clock import Clock
from cacher.watch_cache import DEFAULT_FRESHNESS_WAIT, WatchCache
from etcdclient.errors import EtcdError
from etcdclient.types import Status
from storage.errors import TooLargeResourceVersion

log = logging.getLogger(__name__)

PROGRESS_REQUEST_INTERVAL = 0.1
_LOGGED: set[str] = set()


class Outcome(enum.Enum):
    FRESH = "fresh"  # the cache was already at etcd's revision
    PROGRESS = "progress"  # served after waiting, with progress requests
    FALLBACK_TIMEOUT = "fallback_timeout"  # not fresh within 3 s: etcd served it
    FALLBACK_UNSUPPORTED = "fallback_unsupported"  # etcd too old to request progress


def progress_requests_supported(version: tuple[int, int, int]) -> bool:
    """etcd versions with the fixes for #15220 and #17507 (kube-apiserver's
    ``RequestWatchProgress`` feature check)."""
    major, minor, patch = version
    if (major, minor) == (3, 4):
        return patch >= 31
    if (major, minor) == (3, 5):
        return patch >= 13
    return (major, minor) > (3, 5)


class ProgressClient(Protocol):
    async def request_progress(self) -> None: ...

    async def status(self, endpoint: str | None = None) -> Status: ...


class ProgressRequester:
    """Owned by one cacher; ``run`` is its task. Readers call ``wait_until_fresh``.

    ``_waiting`` counts readers in ``wait_until_fresh`` (changed only there)."""

    def __init__(
        self,
        client: ProgressClient,
        cache: WatchCache,
        clock: Clock,
        *,
        interval: float = PROGRESS_REQUEST_INTERVAL,
    ) -> None:
        self._client = client
        self._cache = cache
        self._clock = clock
        self._interval = interval
        self._waiting = 0
        self._kick = asyncio.Event()
        self.supported: bool | None = None  # None until etcd's version is known
        self.etcd_version: tuple[int, int, int] | None = None
        self.requests = 0

    async def detect(self) -> bool:
        """Read etcd's version (once) and decide whether progress may be requested."""
        if self.supported is None:
            status = await self._client.status()
            self.etcd_version = status.version_tuple
            self.supported = progress_requests_supported(self.etcd_version)
            if status.version not in _LOGGED:  # once per process, not once per resource
                _LOGGED.add(status.version)
                log.info("etcd %s: progress requests %s", status.version,
                         "enabled" if self.supported else "disabled (#15220/#17507)")  # fmt: skip
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
            except EtcdError as err:
                log.debug("etcd version unknown yet: %s", err)
                await self._clock.sleep(1.0)
        if not self.supported:
            return
        while True:
            await self._kick.wait()
            self._kick.clear()
            while self._waiting > 0:
                try:
                    await self._client.request_progress()
                    self.requests += 1
                except EtcdError as err:
                    log.debug("progress request failed: %s", err)
                await self._clock.sleep(self._interval)


__all__ = [
    "Outcome",
    "ProgressRequester",
    "TooLargeResourceVersion",
    "progress_requests_supported",
]
