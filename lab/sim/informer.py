"""Informers and work queues for the simulated controllers: the server's own shared
informer library (:mod:`proxy.informer`) over HTTP.

An :class:`Informer` keeps a local copy of one kind of object with
:class:`proxy.informer.SharedIndexInformer` — LIST at ``resourceVersion=0`` (answered by
the server's watch cache, not etcd), WATCH from the list's resourceVersion with
bookmarks, resume from the last resourceVersion when a watch ends or breaks, relist
only on 410 Gone, jittered backoff on errors — through :class:`HTTPListerWatcher`, the
lister-watcher protocol spoken over the API with the generated client. Every change is
handed to its handlers as ``(type, object, old)``; handlers only enqueue keys, never
block.

``WorkQueue`` and ``run_workers`` are the library's: each key queued at most once and
processed by one worker at a time, a failed key retried with per-key exponential
backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from lab.sim.client import JSON, APIError, Client
from proxy.informer import (
    DeletedFinalStateUnknown,
    EventHandlers,
    ListResult,
    SharedIndexInformer,
    WatchEvent,
    WatchStream,
    WorkQueue,
    run_workers,
)
from proxy.informer import meta_namespace_key as key_of
from proxy.informer.lister_watcher import raise_for_error_status
from storage.errors import Expired

__all__ = ["HTTPListerWatcher", "Informer", "WorkQueue", "key_of", "run_workers"]

Handler = Callable[[str, JSON, JSON | None], None]
# a watch's socket may stay quiet this long past its timeoutSeconds before it is broken
READ_SLACK_SECONDS = 30


class _HTTPWatchStream:
    """A watch response read line by line (one JSON event per line)."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp = resp

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        while line := await self._resp.content.readline():
            event = orjson.loads(line)
            kind, obj = str(event.get("type")), event.get("object") or {}
            if kind == "ERROR":
                raise_for_error_status(obj)
            elif kind in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                yield WatchEvent(kind, obj)  # type: ignore[arg-type]  # checked just above

    async def stop(self) -> None:
        self._resp.close()


class HTTPListerWatcher:
    """LIST and WATCH through ``list_method`` (a generated ``list_*`` method of
    ``client``), narrowed by ``field_selector``; a 410 answer raises ``Expired``."""

    def __init__(
        self, client: Client, list_method: Callable[..., Awaitable[Any]], field_selector: str = ""
    ) -> None:
        self.client = client
        self.list_method = list_method
        self.selectors = {"field_selector": field_selector} if field_selector else {}

    async def list(self, resource_version: str) -> ListResult:
        try:
            body = await self.client.call(
                self.list_method, resource_version=resource_version, **self.selectors
            )
        except APIError as e:
            if e.status == 410:
                raise Expired(str(e)) from e
            raise
        rv = str((body.get("metadata") or {}).get("resourceVersion") or "")
        return ListResult(list(body.get("items") or []), rv)

    async def watch(self, resource_version: str, *, timeout_seconds: float) -> WatchStream:
        try:
            resp = await self.client.stream(
                self.list_method, watch=True, resource_version=resource_version,
                allow_watch_bookmarks=True, timeout_seconds=int(timeout_seconds),
                read_timeout=timeout_seconds + READ_SLACK_SECONDS, **self.selectors,
            )  # fmt: skip
        except APIError as e:
            if e.status == 410:
                raise Expired(str(e)) from e
            raise
        return _HTTPWatchStream(resp)


class Informer:
    """One kind of object, listed and watched through ``list_method`` (a generated
    ``list_*`` method of ``client``), optionally narrowed by ``field_selector``."""

    def __init__(
        self,
        client: Client,
        list_method: Callable[..., Awaitable[Any]],
        *,
        field_selector: str = "",
        name: str = "",
    ) -> None:
        self.name = name or list_method.__name__
        lister_watcher = HTTPListerWatcher(client, list_method, field_selector)
        self.shared = SharedIndexInformer(self.name, lister_watcher)
        self.synced = asyncio.Event()

    def add_handler(self, handler: Handler) -> None:
        """``handler(type, obj, old)`` for every change from now on (after the first
        list it also sees every object as ADDED, and at a relist every object held as
        MODIFIED). For DELETED, ``old`` is the object's last state too."""

        def deleted(obj: JSON | DeletedFinalStateUnknown) -> None:
            last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            handler("DELETED", last, last)  # ``old``: what it was (its owners, its node)

        self.shared.add_event_handler(
            EventHandlers(
                on_add=lambda obj: handler("ADDED", obj, None),
                on_update=lambda old, new: handler("MODIFIED", new, old),
                on_delete=deleted,
            )
        )

    @property
    def resource_version(self) -> str:
        return self.shared.last_sync_resource_version

    def get(self, key: str) -> JSON | None:
        return self.shared.indexer.get_by_key(key)

    def items(self) -> list[JSON]:
        return self.shared.indexer.list()

    async def run(self) -> None:
        """List and watch until cancelled; errors are logged and retried."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self.shared.run(), name=f"informer-{self.name}")
            await self.shared.wait_for_sync()
            self.synced.set()
