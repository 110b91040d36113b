"""Serving a version that is not the storage version: objects are kept in etcd in the
storage version and seen through the served version by a :class:`Converter`. Custom
resources (apiextensions-apiserver's ``conversion`` package: ``NoneConverter``, strategy
``None``, ``apiVersion`` rewritten, or the webhook's) and built-in kinds served in more
than one version (``autoscaling/v1`` over ``v2``, ``events.k8s.io/v1`` over the core
Events: ``proxy.kube.conversion``) share it.

:class:`VersionedStorage` wraps the storage of one served version: every object read
(get, list items, watch events, the results of writes) is given the served
``apiVersion``; an update function sees the current object in the served version and
its result goes back to the storage version. Objects already in the wanted version
pass through untouched (their pre-serialized bytes are served as they are), so the
storage version's LISTs and watches keep the watch cache's serialize-once path.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import AsyncIterator, Callable
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
    """Whether compact JSON ``data`` has ``api_version`` as every apiVersion it holds (so
    as its top-level one), without decoding it. Every object written through the API
    has a managedFields entry naming its version: requiring a single apiVersion would
    decode and re-encode each of them on every read (the bench's ``cr_*`` LISTs)."""
    total = data.count(b'"apiVersion":')
    return total > 0 and data.count(b'"apiVersion":"' + api_version.encode() + b'"') == total


class _ConvertingWatcher:
    def __init__(self, inner: Watcher, storage: VersionedStorage) -> None:
        self._inner = inner
        self._storage = storage

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        async for event in self._inner:
            if event.type in _OBJECT_EVENTS and self._storage.needs_work(event.data):
                [obj] = await self._storage.present([orjson.loads(event.data)])
                event = dataclasses.replace(event, data=orjson.dumps(obj))
            yield event

    async def stop(self) -> None:
        await self._inner.stop()


class VersionedStorage:
    """``inner`` (the resource's storage) seen in ``api_version``; writes are stored in
    ``storage_api_version``. ``read_defaults`` (the storage version's schema defaults,
    when it has any) is applied to every object read, as upstream defaults what it
    reads from etcd; objects are then decoded and re-encoded on every read. Implements
    ``storage.interfaces.Interface``."""

    def __init__(
        self,
        inner: Interface,
        api_version: str,
        storage_api_version: str,
        converter: Converter | None = None,
        read_defaults: Callable[[JSONObject], None] | None = None,
    ) -> None:
        self.inner = inner
        self.api_version = api_version
        self.storage_api_version = storage_api_version
        self.converter: Converter = converter or NoneConverter()
        self.read_defaults = read_defaults
        self.cacher = getattr(inner, "cacher", None)  # for /debug, as the inner store's

    def needs_work(self, data: bytes) -> bool:
        """Whether an object read must be changed before it is served."""
        return self.read_defaults is not None or not _already_in(data, self.api_version)

    async def present(self, objects: list[JSONObject]) -> list[JSONObject]:
        """Objects read from storage as this version serves them: defaulted, converted."""
        if self.read_defaults is not None:
            objects = [copy.deepcopy(o) for o in objects]
            for obj in objects:
                if obj.get("apiVersion") == self.storage_api_version:
                    self.read_defaults(obj)
        return await self.converter.convert(objects, self.api_version)

    async def _out(self, stored: StoredObject) -> StoredObject:
        if not stored.data or not self.needs_work(stored.data):
            return stored
        [obj] = await self.present([stored.obj])
        return StoredObject(stored.key, orjson.dumps(obj), stored.resource_version, obj)

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
        todo = [i for i, item in enumerate(items) if self.needs_work(item.data)]
        if todo:  # one conversion (one webhook call) for the whole list, as upstream
            objs = await self.present([items[i].obj for i in todo])
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
            seen = (await self.present([current]))[0] if current else current
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
        return await self._out(stored)

    async def watch(self, key: str, opts: ListOptions) -> Watcher:
        watcher = await self.inner.watch(key, opts)
        return _ConvertingWatcher(watcher, self)

    async def current_resource_version(self) -> int:
        return await self.inner.current_resource_version()

    async def count(self, key: str) -> int:
        return await self.inner.count(key)

    def readiness_check(self) -> None:
        self.inner.readiness_check()

    async def close(self) -> None:
        await self.inner.close()
