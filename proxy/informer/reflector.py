"""The reflector: keeps a store equal to one resource's objects on the server
(client-go's ``cache.Reflector``, cut down).

Resume rules (``run``):

1. LIST at ``resourceVersion=0`` the first time (the watch cache answers), then at the
   last resourceVersion seen (not older than it); if that LIST is 410 Gone, LIST again
   at ``""`` (a consistent read from etcd), as upstream's ``relistResourceVersion``.
   The store is replaced with the result (see ``ReflectorStore.replace``).
2. WATCH from the list's resourceVersion with bookmarks and a 5-10 minute timeout. Every
   event (bookmarks too) moves ``last_sync_resource_version``.
3. A watch that ends cleanly (timeout, server closing it) is reopened at once from the
   last resourceVersion; one that breaks (any error but 410), or cannot be opened, is
   reopened from the last resourceVersion after a jittered exponential backoff. So is
   one that ends within a second having delivered nothing (client-go's "very short
   watch"), so that a server closing every watch at once is not hammered.
4. Only 410 Gone / Expired (``storage.errors.Expired``, from the watch or in its stream)
   relists. A failed LIST is retried after the backoff.

The reflector never sleeps on the real clock when given a fake one. ``run`` returns
only by cancellation.
"""

from __future__ import annotations

import logging
import random
from typing import Protocol

from cacher.clock import Clock, RealClock
from proxy.informer.backoff import Backoff
from proxy.informer.lister_watcher import ListerWatcher, WatchEvent
from storage.errors import Expired
from storage.interfaces import JSONObject

__all__ = ["Reflector", "ReflectorStore"]

log = logging.getLogger("watchcache.informer")

# client-go's minWatchTimeout: each watch lasts 5 min x [1, 2)
MIN_WATCH_TIMEOUT = 300.0
# a watch that ends sooner than this without an event is treated as a failure
SHORT_WATCH_SECONDS = 1.0


class ShortWatch(Exception):
    """A watch ended at once having delivered nothing."""


class ReflectorStore(Protocol):
    """Where a reflector writes (client-go's DeltaFIFO; here the informer itself)."""

    def replace(self, items: list[JSONObject], resource_version: str) -> None:
        """The complete state at ``resource_version`` (keys absent are deleted)."""
        ...

    def add(self, obj: JSONObject) -> None: ...

    def update(self, obj: JSONObject) -> None: ...

    def delete(self, obj: JSONObject) -> None: ...


def _resource_version(obj: JSONObject) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class Reflector:
    """Lists and watches ``lister_watcher`` into ``store`` (see the module docstring)."""

    def __init__(
        self,
        name: str,
        lister_watcher: ListerWatcher,
        store: ReflectorStore,
        *,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
        rand: random.Random | None = None,
    ) -> None:
        self.name = name
        self.lister_watcher = lister_watcher
        self.store = store
        self.clock = clock or RealClock()
        self.rand = rand or random.Random()
        self.backoff = backoff or Backoff(clock=self.clock, rand=self.rand)
        # the resourceVersion of the last list, event or bookmark ("" before the first)
        self.last_sync_resource_version = ""
        # set when a LIST at the last resourceVersion was 410: the next one reads etcd
        self._last_sync_unavailable = False
        self.lists = 0  # LISTs that succeeded (for tests and debugging)
        self.watches = 0  # WATCHes opened

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                await self._list()
            except Exception as e:  # etcd down, cache not ready: try again later
                log.info("%s: list failed: %s", self.name, e)
                await self.clock.sleep(self.backoff.next())
                continue
            await self._watch_until_expired()

    def _relist_resource_version(self) -> str:
        if self._last_sync_unavailable:
            return ""
        return self.last_sync_resource_version or "0"

    async def _list(self) -> None:
        rv = self._relist_resource_version()
        try:
            listed = await self.lister_watcher.list(rv)
        except Expired:
            if rv == "":
                raise
            self._last_sync_unavailable = True  # too old for the cache: read etcd now
            listed = await self.lister_watcher.list("")
        self._last_sync_unavailable = False
        self.store.replace(listed.items, listed.resource_version)
        self.last_sync_resource_version = listed.resource_version
        self.lists += 1

    async def _watch_until_expired(self) -> None:
        """Watch, resuming from the last resourceVersion, until 410 Gone."""
        while True:
            try:
                await self._watch_once()
            except Expired as e:
                log.info("%s: watch expired (%s); relisting", self.name, e)
                return
            except Exception as e:  # a broken stream: resume from the last RV
                log.info("%s: watch failed: %s; resuming at %s", self.name, e,
                         self.last_sync_resource_version)  # fmt: skip
                await self.clock.sleep(self.backoff.next())

    async def _watch_once(self) -> None:
        timeout = MIN_WATCH_TIMEOUT * (1.0 + self.rand.random())
        stream = await self.lister_watcher.watch(
            self.last_sync_resource_version, timeout_seconds=timeout
        )
        self.watches += 1
        started, events = self.clock.now(), 0
        try:
            async for event in stream:
                self._handle(event)
                events += 1
        finally:
            await stream.stop()
        if events == 0 and self.clock.now() - started < SHORT_WATCH_SECONDS:
            raise ShortWatch("very short watch: ended at once with no events")

    def _handle(self, event: WatchEvent) -> None:
        obj = event.object
        if event.type == "ADDED":
            self.store.add(obj)
        elif event.type == "MODIFIED":
            self.store.update(obj)
        elif event.type == "DELETED":
            self.store.delete(obj)
        rv = _resource_version(obj)
        if rv:
            self.last_sync_resource_version = rv
