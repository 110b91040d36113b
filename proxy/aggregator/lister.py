"""The APIServices in memory (upstream's APIService informer and lister).

``run`` lists the APIServices at ``resourceVersion=0`` (from the watch cache when it is
on), then watches from the list's revision; an ERROR event or a closed stream relists,
a storage error retries after ``RETRY_SECONDS``. ``synced`` is set after the first list.
The map is replaced or changed only by ``run``, on the event loop; listeners added with
``on_change`` are called synchronously after every change (the proxy's routing table
and discovery rebuild from them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import orjson

from proxy.aggregator.apiservice import APIServiceRef, parse
from proxy.registry.storage_factory import ResourceStorage
from storage.interfaces import ListOptions

__all__ = ["APIServiceLister"]

log = logging.getLogger("watchcache.aggregator")

RETRY_SECONDS = 1.0


class APIServiceLister:
    """name -> the stored APIService object (and its parsed ``APIServiceRef``)."""

    def __init__(self, storage: Callable[[], ResourceStorage]) -> None:
        self._storage = storage
        self.objects: dict[str, dict[str, Any]] = {}
        self.refs: dict[str, APIServiceRef] = {}
        self.synced = asyncio.Event()
        self._listeners: list[Callable[[], None]] = []

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def by_group_version(self, group: str, version: str) -> APIServiceRef | None:
        """The APIService of ``group``/``version`` (its name is ``version.group``)."""
        return self.refs.get(f"{version}.{group}")

    def _set(self, obj: dict[str, Any]) -> None:
        ref = parse(obj)
        self.objects[ref.name] = obj
        self.refs[ref.name] = ref

    def _changed(self) -> None:
        for listener in self._listeners:
            try:
                listener()
            except Exception:  # one listener's bug must not stop the others
                log.exception("APIService listener failed")

    async def _list_and_watch(self) -> None:
        rs = self._storage()
        key = rs.list_key("")
        listed = await rs.store.get_list(key, ListOptions(resource_version="0"))
        self.objects, self.refs = {}, {}
        for item in listed.items:
            self._set(item.obj)
        self.synced.set()
        self._changed()
        watcher = await rs.store.watch(
            key, ListOptions(resource_version=str(listed.resource_version))
        )
        try:
            async for event in watcher:
                if event.type == "ERROR":
                    return
                if event.type == "BOOKMARK":
                    continue
                obj = orjson.loads(event.data)
                if event.type == "DELETED":
                    name = str((obj.get("metadata") or {}).get("name") or "")
                    self.objects.pop(name, None)
                    self.refs.pop(name, None)
                else:
                    self._set(obj)
                self._changed()
        finally:
            await watcher.stop()

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # etcd down, compaction: list again shortly
                log.info("APIService lister: %s (relisting)", e)
                await asyncio.sleep(RETRY_SECONDS)
