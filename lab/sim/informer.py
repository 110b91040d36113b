"""Informers and work queues, as client-go's controllers use them.

An :class:`Informer` keeps a local copy of one kind of object: it LISTs with
``resourceVersion=0`` (answered by the server's watch cache, not etcd), then WATCHes from
the list's resourceVersion with bookmarks, resuming from the last resourceVersion it saw
when a watch ends and re-listing when the server says 410 Gone. Every change is handed
to its handlers as ``(type, object, old)``; handlers only enqueue keys, never block.

A :class:`WorkQueue` holds the keys a controller must reconcile, each at most once: a
key added while it is being processed is queued again when its worker is done, so no
two workers reconcile the same object at once. :func:`run_workers` drains it, retrying
a failed key after a pause.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson

from lab.sim.client import JSON, APIError, Client

__all__ = ["Informer", "WorkQueue", "key_of", "run_workers"]

log = logging.getLogger("watchcache.sim")

Handler = Callable[[str, JSON, JSON | None], None]
RETRY_SECONDS = 1.0
# client-go's reflector picks a watch timeout between 5 and 10 minutes
WATCH_SECONDS = (300, 600)


def key_of(obj: JSON) -> str:
    """``namespace/name`` (``name`` for cluster-scoped objects), client-go's key."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def _rv(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


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
        self.client = client
        self.list_method = list_method
        self.field_selector = field_selector
        self.name = name or list_method.__name__
        self.store: dict[str, JSON] = {}
        self.synced = asyncio.Event()
        self.resource_version = ""
        self._handlers: list[Handler] = []

    def add_handler(self, handler: Handler) -> None:
        """``handler(type, obj, old)`` for every change from now on (after the first
        list it also sees every object as ADDED)."""
        self._handlers.append(handler)

    def get(self, key: str) -> JSON | None:
        return self.store.get(key)

    def items(self) -> list[JSON]:
        return list(self.store.values())

    async def run(self) -> None:
        """List and watch until cancelled; errors are logged and retried."""
        while True:
            try:
                await self._list()
                while await self._watch():
                    pass
            except (APIError, aiohttp.ClientError, TimeoutError, OSError, ValueError) as e:
                log.info("%s: %s; retrying in %.0f s", self.name, e, RETRY_SECONDS)
                await asyncio.sleep(RETRY_SECONDS)

    def _selectors(self) -> dict[str, str]:
        return {"field_selector": self.field_selector} if self.field_selector else {}

    async def _list(self) -> None:
        body = await self.client.call(self.list_method, resource_version="0", **self._selectors())
        fresh = {key_of(o): o for o in body.get("items") or []}
        for key in [k for k in self.store if k not in fresh]:
            self._deliver("DELETED", self.store.pop(key), None)
        for key, obj in fresh.items():
            old = self.store.get(key)
            self.store[key] = obj
            if old is None:
                self._deliver("ADDED", obj, None)
            elif _rv(old) != _rv(obj):
                self._deliver("MODIFIED", obj, old)
        self.resource_version = str((body.get("metadata") or {}).get("resourceVersion") or "")
        self.synced.set()

    async def _watch(self) -> bool:
        """One watch from ``resource_version``; True when it ended normally (watch
        again), False on 410 Gone (list again)."""
        seconds = random.randint(*WATCH_SECONDS)
        resp = await self.client.stream(
            self.list_method, watch=True, resource_version=self.resource_version,
            allow_watch_bookmarks=True, timeout_seconds=seconds,
            read_timeout=seconds + 30, **self._selectors(),
        )  # fmt: skip
        async with resp:
            while line := await resp.content.readline():
                event = orjson.loads(line)
                kind, obj = str(event.get("type")), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        return False
                    raise APIError(int(obj.get("code") or 500), obj)
                self.resource_version = _rv(obj) or self.resource_version
                if kind != "BOOKMARK":
                    self._apply(kind, obj)
        return True

    def _apply(self, kind: str, obj: JSON) -> None:
        key = key_of(obj)
        old = self.store.get(key)
        if kind == "DELETED":
            self.store.pop(key, None)
        else:
            self.store[key] = obj
        self._deliver(kind, obj, old)

    def _deliver(self, kind: str, obj: JSON, old: JSON | None) -> None:
        for handler in self._handlers:
            handler(kind, obj, old)


class WorkQueue:
    """Keys to reconcile, each queued at most once and processed by one worker at a
    time (client-go's workqueue without its rate limiter)."""

    def __init__(self) -> None:
        self._queued: dict[str, None] = {}  # insertion-ordered set
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._ready = asyncio.Event()

    def add(self, key: str) -> None:
        if key in self._processing:
            self._dirty.add(key)
            return
        self._queued[key] = None
        self._ready.set()

    def add_after(self, key: str, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self.add, key)

    async def get(self) -> str:
        while not self._queued:
            self._ready.clear()
            await self._ready.wait()
        key = next(iter(self._queued))
        del self._queued[key]
        self._processing.add(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def __len__(self) -> int:
        return len(self._queued)


async def run_workers(
    name: str, queue: WorkQueue, reconcile: Callable[[str], Awaitable[None]], workers: int = 4
) -> None:
    """``workers`` tasks draining ``queue`` into ``reconcile`` until cancelled; a key
    whose reconcile fails is retried after RETRY_SECONDS."""

    async def worker() -> None:
        while True:
            key = await queue.get()
            try:
                await reconcile(key)
            except (APIError, aiohttp.ClientError, TimeoutError, OSError) as e:
                log.info("%s %s: %s; retrying", name, key, e)
                queue.add_after(key, RETRY_SECONDS)
            except Exception:  # a bug in one reconcile must not stop the controller
                log.exception("%s %s: unexpected error; retrying", name, key)
                queue.add_after(key, RETRY_SECONDS * 5)
            finally:
                queue.done(key)

    async with asyncio.TaskGroup() as tg:
        for _ in range(workers):
            tg.create_task(worker())
