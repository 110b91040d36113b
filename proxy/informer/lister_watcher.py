"""What a reflector needs of an API: LIST and WATCH of one resource (client-go's
``cache.ListerWatcher``), and its in-process implementation over the storage interface.

The contract, for any implementation (in-process here, HTTP in ``lab/sim``):

- ``list(resource_version)``: every object of the resource, decoded, and the list's
  resourceVersion. ``"0"`` means any (the watch cache answers), ``""`` a consistent
  read, ``"N"`` not older than N.
- ``watch(resource_version, timeout_seconds=...)``: the changes after
  ``resource_version``, BOOKMARK events included; the stream ends cleanly after
  ``timeout_seconds`` (or when the server closes it).
- A resourceVersion too old to serve (410 Gone / Expired) raises ``storage.errors.Expired``
  — from ``list``, from ``watch`` or while iterating — and nothing else does: the
  reflector relists on that and only that. Any other exception is an ordinary failure
  (retried after a backoff from the last resourceVersion).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import orjson

from storage.errors import Expired
from storage.interfaces import Interface, JSONObject, ListOptions, Watcher

__all__ = [
    "ListResult",
    "ListerWatcher",
    "StorageListerWatcher",
    "WatchError",
    "WatchEvent",
    "WatchStream",
    "raise_for_error_status",
]

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[JSONObject]
    resource_version: str


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    object: JSONObject


class WatchError(Exception):
    """An ERROR event other than 410 Gone; ``status`` is its Status object."""

    def __init__(self, status: JSONObject) -> None:
        super().__init__(f"{status.get('code')} {status.get('reason')}: {status.get('message')}")
        self.status = status


class WatchStream(Protocol):
    """An open watch: iterate for events; ``stop()`` ends it (idempotent)."""

    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    async def stop(self) -> None: ...


class ListerWatcher(Protocol):
    async def list(self, resource_version: str) -> ListResult: ...

    async def watch(self, resource_version: str, *, timeout_seconds: float) -> WatchStream: ...


def raise_for_error_status(status: JSONObject) -> None:
    """An ERROR event's Status as the exception the contract names (Expired for 410)."""
    if status.get("code") == 410:
        raise Expired(str(status.get("message") or "too old resource version"))
    raise WatchError(status)


class _StorageWatchStream:
    """A storage ``Watcher`` seen as a ``WatchStream`` (events decoded, ERROR raised)."""

    def __init__(self, watcher: Watcher) -> None:
        self._watcher = watcher

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        async for event in self._watcher:
            obj: JSONObject = orjson.loads(event.data)
            if event.type == "ERROR":
                raise_for_error_status(obj)
            else:
                yield WatchEvent(event.type, obj)

    async def stop(self) -> None:
        await self._watcher.stop()


class StorageListerWatcher:
    """LIST and WATCH of the objects under one key prefix of a storage ``Interface``
    (the watch cache when it is on, else the etcd3 store): the server's own controllers
    read as upstream's loopback informers do, minus HTTP. ``resolve`` gives the
    (storage, prefix) at each call: storages are built when the server starts, after
    the informers are declared."""

    def __init__(self, resolve: Callable[[], tuple[Interface, str]]) -> None:
        self._resolve = resolve

    async def list(self, resource_version: str) -> ListResult:
        store, prefix = self._resolve()
        listed = await store.get_list(prefix, ListOptions(resource_version=resource_version))
        return ListResult([i.decoded() for i in listed.items], str(listed.resource_version))

    async def watch(self, resource_version: str, *, timeout_seconds: float) -> WatchStream:
        store, prefix = self._resolve()
        opts = ListOptions(
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout_seconds,
        )
        return _StorageWatchStream(await store.watch(prefix, opts))
