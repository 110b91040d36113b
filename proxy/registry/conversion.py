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

from storage.errors import StorageError
from storage.interfaces import (
    GetOptions,
    Interface,
    JSONObject,
    ListOptions,
    ListResult,
    Preconditions,
    SelectionPredicate,
    StoredObject,
    UpdateFunc,
    ValidateDeletion,
    Watcher,
    WatchEvent,
)
from storage.steps import Steps

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


_API_VERSION = b'"apiVersion":'


def _already_in(data: bytes, api_version: str) -> bool:
    """Whether compact JSON ``data`` has ``api_version`` as every apiVersion it holds (so
    as its top-level one), without decoding it. Every object written through the API
    has a managedFields entry naming its version: requiring a single apiVersion would
    decode and re-encode each of them on every read (the bench's ``cr_*`` LISTs). One
    pass over the bytes (a LIST checks every item: two ``count`` passes were 45 ms for
    the bench's 10,000 widgets)."""
    wanted = _API_VERSION + b'"' + api_version.encode() + b'"'
    at = data.find(_API_VERSION)
    if at < 0:
        return False
    while at >= 0:
        if not data.startswith(wanted, at):
            return False
        at = data.find(_API_VERSION, at + len(wanted))
    return True


def _object_key(obj: JSONObject) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class _ConvertingWatcher:
    """The events of ``inner`` in the view's version; with ``selection`` (a field
    selector that must see converted objects), filtered after conversion as a
    cacher of that version filters: an object that comes into the selection is ADDED,
    one that leaves it DELETED (upstream's cacheWatcher transitions)."""

    def __init__(
        self, inner: Watcher, storage: VersionedStorage, selection: SelectionPredicate | None,
        selected: set[tuple[str, str]] | None = None,
    ) -> None:  # fmt: skip
        self._inner = inner
        self._storage = storage
        self._selection = selection
        # the objects in the selection at the watch's start (its first events add more)
        self._selected = selected or set()

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        async for event in self._inner:
            if event.type not in _OBJECT_EVENTS:
                yield event
                continue
            obj: JSONObject | None = None
            if self._storage.needs_work(event.data):
                [obj] = await self._storage.present([orjson.loads(event.data)])
                event = dataclasses.replace(event, data=orjson.dumps(obj))
            if self._selection is None:
                yield event
                continue
            selected = self._select(event, obj if obj is not None else orjson.loads(event.data))
            if selected is not None:
                yield selected

    def _select(self, event: WatchEvent, obj: JSONObject) -> WatchEvent | None:
        assert self._selection is not None
        key, was = _object_key(obj), _object_key(obj) in self._selected
        now = event.type != "DELETED" and self._selection.matches(obj)
        if now:
            self._selected.add(key)
            return event if was or event.type == "ADDED" else dataclasses.replace(
                event, type="ADDED")  # fmt: skip
        self._selected.discard(key)
        if not was:
            return None
        return event if event.type == "DELETED" else dataclasses.replace(event, type="DELETED")

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

    def _selection(self, opts: ListOptions) -> tuple[ListOptions, SelectionPredicate | None]:
        """The options for the inner storage, and the selection to apply after
        conversion: a field selector of another version than the stored one names that
        version's fields (selectableFields such as ``.host`` where the storage version
        has ``.hostPort``), so it is evaluated on converted objects, as upstream's cacher
        of each version does. Labels do not change with the version: they stay inside."""
        pred = opts.predicate
        if self.api_version == self.storage_api_version or pred.field is None or pred.field.empty:
            return opts, None
        inner = dataclasses.replace(opts, predicate=dataclasses.replace(pred, field=None))
        return inner, dataclasses.replace(pred, label=None)

    def needs_work(self, data: bytes) -> bool:
        """Whether an object read must be changed before it is served."""
        return self.read_defaults is not None or not _already_in(data, self.api_version)

    async def present(
        self, objects: list[JSONObject], steps: Steps | None = None
    ) -> list[JSONObject]:
        """Objects read from storage as this version serves them: defaulted (in
        ``steps``' bounded steps when given: a list's items), converted."""
        if self.read_defaults is not None:
            defaulted = []
            for o in objects:
                obj = copy.deepcopy(o)
                if obj.get("apiVersion") == self.storage_api_version:
                    self.read_defaults(obj)
                defaulted.append(obj)
                if steps is not None:
                    await steps.tick()
            objects = defaulted
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
        inner_opts, selection = self._selection(opts)
        listed = await self.inner.get_list(key, inner_opts)
        items = list(listed.items)
        # every item is checked (and converted, selected) in bounded steps: a LIST of
        # the whole cache is thousands of items, one step would hold the loop for all
        steps = Steps()
        await steps.split(len(items))
        todo: list[int] = []
        for i, item in enumerate(items):
            if self.needs_work(item.data):
                todo.append(i)
            await steps.tick()
        if todo:  # one conversion (one webhook call) for the whole list, as upstream
            decoded = []
            for i in todo:
                decoded.append(items[i].obj)
                await steps.tick()
            objs = await self.present(decoded, steps)
            for i, obj in zip(todo, objs, strict=True):
                old = items[i]
                items[i] = StoredObject(old.key, orjson.dumps(obj), old.resource_version, obj)
                await steps.tick()
        if selection is not None:  # a page may come out shorter than the limit
            selected = []
            for item in items:
                if selection.matches(item.obj):
                    selected.append(item)
                await steps.tick()
            items = selected
        return dataclasses.replace(listed, items=items)

    async def guaranteed_update(
        self,
        key: str,
        preconditions: Preconditions | None,
        try_update: UpdateFunc,
        *,
        ignore_not_found: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        async def converted(current: JSONObject) -> JSONObject:
            seen = (await self.present([current]))[0] if current else current
            new = await try_update(seen)
            if new is seen:
                return current  # unchanged: the stored object itself (no write)
            return await self._to(new, self.storage_api_version)

        stored = await self.inner.guaranteed_update(
            key, preconditions, converted, ignore_not_found=ignore_not_found,
            cached_existing_object=cached_existing_object,
        )  # fmt: skip
        return await self._out(stored)

    async def delete(
        self,
        key: str,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
        *,
        ignore_store_read_error: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        stored = await self.inner.delete(
            key, preconditions, validate_deletion, ignore_store_read_error=ignore_store_read_error,
            cached_existing_object=cached_existing_object,
        )  # fmt: skip
        return await self._out(stored)

    async def watch(self, key: str, opts: ListOptions) -> Watcher:
        inner_opts, selection = self._selection(opts)
        selected = await self._selected_at(key, opts) if selection is not None else None
        watcher = await self.inner.watch(key, inner_opts)
        return _ConvertingWatcher(watcher, self, selection, selected)

    async def _selected_at(self, key: str, opts: ListOptions) -> set[tuple[str, str]]:
        """What a selection held at a watch's start revision (its events carry no
        previous object: an object leaving the selection must be known to have been in
        it). RV unset or 0: the initial events say it; else the state at that revision,
        from the cache's snapshot or etcd (nothing known when it is gone)."""
        if opts.resource_version in ("", "0"):
            return set()
        at = ListOptions(resource_version=opts.resource_version, resource_version_match="Exact",
                         predicate=dataclasses.replace(opts.predicate, limit=0,
                                                       continue_token=""),
                         recursive=opts.recursive)  # fmt: skip
        try:
            listed = await self.get_list(key, at)
        except StorageError:
            return set()
        return {_object_key(item.obj) for item in listed.items}

    async def current_resource_version(self) -> int:
        return await self.inner.current_resource_version()

    async def count(self, key: str) -> int:
        return await self.inner.count(key)

    def readiness_check(self) -> None:
        self.inner.readiness_check()

    async def close(self) -> None:
        await self.inner.close()
