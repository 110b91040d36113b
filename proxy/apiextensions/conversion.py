"""Serving a custom resource version that is not the storage version (apiextensions-
apiserver's ``conversion`` package): objects are kept in etcd in the storage version and
seen through the served version by a :class:`Converter` — ``NoneConverter`` (strategy
``None``: ``apiVersion`` rewritten) or the webhook's (``webhook_converter``).

:class:`VersionedStorage` wraps the storage of one served version: every object read
(get, list items, watch events, the results of writes) is given the served
``apiVersion``; an update function sees the current object in the served version and
its result goes back to the storage version. Objects already in the wanted version
pass through untouched (their pre-serialized bytes are served as they are), so the
storage version's LISTs and watches keep the watch cache's serialize-once path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any, Protocol

import orjson

from storage.interfaces import (
    GetOptions,
    Interface,
    JSONObject,
    ListOptions,
    ListResult,
    Preconditions,
    StoredObject,
    UpdateFunc,
    ValidateDeletion,
    Watcher,
    WatchEvent,
)

__all__ = ["Converter", "NoneConverter", "VersionedStorage", "with_api_version"]

_OBJECT_EVENTS = frozenset({"ADDED", "MODIFIED", "DELETED"})


def with_api_version(obj: JSONObject, api_version: str) -> JSONObject:
    """``obj`` in ``api_version`` (a shallow copy; the None strategy changes nothing else)."""
    if obj.get("apiVersion") == api_version:
        return obj
    return {**obj, "apiVersion": api_version}


class Converter(Protocol):
    """Objects of one CRD in another of its versions (errors are Status errors)."""

    async def convert(self, objects: list[Any], api_version: str) -> list[Any]: ...


class NoneConverter:
    """The ``None`` strategy: only ``apiVersion`` changes."""

    async def convert(self, objects: list[Any], api_version: str) -> list[Any]:
        return [with_api_version(o, api_version) for o in objects]


def _already_in(data: bytes, api_version: str) -> bool:
    """Whether compact JSON ``data`` has ``api_version`` as its only apiVersion (so its
    top-level one), without decoding it."""
    return data.count(b'"apiVersion":') == 1 and (
        b'"apiVersion":"' + api_version.encode() + b'"' in data
    )


async def _stored_in(stored: StoredObject, api_version: str, converter: Converter) -> StoredObject:
    if _already_in(stored.data, api_version):
        return stored
    obj = stored.obj
    if obj.get("apiVersion") == api_version:
        return stored
    [converted] = await converter.convert([obj], api_version)
    return StoredObject(stored.key, orjson.dumps(converted), stored.resource_version, converted)


class _ConvertingWatcher:
    def __init__(self, inner: Watcher, api_version: str, converter: Converter) -> None:
        self._inner = inner
        self._api_version = api_version
        self._converter = converter

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        async for event in self._inner:
            if event.type in _OBJECT_EVENTS and not _already_in(event.data, self._api_version):
                obj = orjson.loads(event.data)
                if obj.get("apiVersion") != self._api_version:
                    [obj] = await self._converter.convert([obj], self._api_version)
                    event = dataclasses.replace(event, data=orjson.dumps(obj))
            yield event

    async def stop(self) -> None:
        await self._inner.stop()


class VersionedStorage:
    """``inner`` (the resource's storage) seen in ``api_version``; writes are stored in
    ``storage_api_version``. Implements ``storage.interfaces.Interface``."""

    def __init__(
        self,
        inner: Interface,
        api_version: str,
        storage_api_version: str,
        converter: Converter | None = None,
    ) -> None:
        self.inner = inner
        self.api_version = api_version
        self.storage_api_version = storage_api_version
        self.converter: Converter = converter or NoneConverter()
        self.cacher = getattr(inner, "cacher", None)  # for /debug, as the inner store's

    async def _out(self, stored: StoredObject) -> StoredObject:
        return await _stored_in(stored, self.api_version, self.converter)

    async def _to(self, obj: JSONObject, api_version: str) -> JSONObject:
        if obj.get("apiVersion") == api_version:
            return obj
        [converted] = await self.converter.convert([obj], api_version)
        result: JSONObject = converted
        return result

    async def create(self, key: str, obj: JSONObject) -> StoredObject:
        stored = await self.inner.create(key, await self._to(obj, self.storage_api_version))
        return await self._out(stored)

    async def get(self, key: str, opts: GetOptions) -> StoredObject:
        return await self._out(await self.inner.get(key, opts))

    async def get_list(self, key: str, opts: ListOptions) -> ListResult:
        listed = await self.inner.get_list(key, opts)
        items = list(listed.items)
        todo = [i for i, item in enumerate(items) if not _already_in(item.data, self.api_version)]
        if todo:  # one conversion (one webhook call) for the whole list, as upstream
            objs = await self.converter.convert([items[i].obj for i in todo], self.api_version)
            for i, obj in zip(todo, objs, strict=True):
                old = items[i]
                items[i] = StoredObject(old.key, orjson.dumps(obj), old.resource_version, obj)
        return dataclasses.replace(listed, items=items)

    async def guaranteed_update(
        self,
        key: str,
        preconditions: Preconditions | None,
        try_update: UpdateFunc,
        *,
        ignore_not_found: bool = False,
    ) -> StoredObject:
        async def converted(current: JSONObject) -> JSONObject:
            seen = await self._to(current, self.api_version) if current else current
            new = await try_update(seen)
            if new is seen:
                return current  # unchanged: the stored object itself (no write)
            return await self._to(new, self.storage_api_version)

        stored = await self.inner.guaranteed_update(
            key, preconditions, converted, ignore_not_found=ignore_not_found
        )
        return await self._out(stored)

    async def delete(
        self,
        key: str,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
        *,
        ignore_store_read_error: bool = False,
    ) -> StoredObject:
        stored = await self.inner.delete(
            key, preconditions, validate_deletion, ignore_store_read_error=ignore_store_read_error
        )
        return await self._out(stored) if stored.data else stored

    async def watch(self, key: str, opts: ListOptions) -> Watcher:
        watcher = await self.inner.watch(key, opts)
        return _ConvertingWatcher(watcher, self.api_version, self.converter)

    async def current_resource_version(self) -> int:
        return await self.inner.current_resource_version()

    async def count(self, key: str) -> int:
        return await self.inner.count(key)

    def readiness_check(self) -> None:
        self.inner.readiness_check()

    async def close(self) -> None:
        await self.inner.close()
