"""Streaming lists (``watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan``,
client-go's WatchList, which kubectl 1.37's ``wait`` and informers use) on the uncached
etcd3 store.

kube-apiserver's etcd3 watcher honours ``sendInitialEvents``: true sends the current
objects as ADDED and then, when bookmarks are allowed, one BOOKMARK annotated
``k8s.io/initial-events-end: "true"`` at the list's revision; false sends no initial
state. Without that BOOKMARK a WatchList client waits for it and gives up after a
timeout. Our etcd3 watcher sends the initial state only for resourceVersion "" / "0"
and never the BOOKMARK, so for an uncached store the REST layer composes the stream:
one LIST at a single revision (quorum for "", not older than N otherwise), its items as
ADDED, the BOOKMARK, then the store's watch from that revision. The watch cache does
all of this itself and is passed through unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence

import orjson

from storage.etcd3 import Etcd3Store
from storage.interfaces import Interface, ListOptions, Watcher, WatchEvent

__all__ = ["INITIAL_EVENTS_END", "open_watch"]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class _ComposedWatcher:
    """``initial`` events, then ``watcher``'s; ``stop`` stops both (idempotent)."""

    def __init__(self, initial: Sequence[WatchEvent], watcher: Watcher) -> None:
        self._initial = list(initial)
        self._watcher = watcher
        self._stopped = False

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent]:
        for event in self._initial:
            if self._stopped:
                return
            yield event
        async for event in self._watcher:
            yield event

    async def stop(self) -> None:
        self._stopped = True
        await self._watcher.stop()


def _bookmark(kind: str, api_version: str, rv: int) -> WatchEvent:
    meta = {"resourceVersion": str(rv), "annotations": {INITIAL_EVENTS_END: "true"}}
    data = orjson.dumps({"kind": kind, "apiVersion": api_version, "metadata": meta})
    return WatchEvent("BOOKMARK", data, rv)


async def open_watch(
    store: Interface, key: str, opts: ListOptions, kind: str, api_version: str
) -> Watcher:
    """``store.watch(key, opts)``, with ``sendInitialEvents`` honoured as upstream's
    etcd3 watcher does when ``store`` is the uncached etcd3 store (module docstring).
    Storage errors of the LIST or the watch pass through."""
    if opts.send_initial_events is None or not isinstance(store, Etcd3Store):
        return await store.watch(key, opts)
    list_opts = ListOptions(
        resource_version=opts.resource_version,
        resource_version_match="NotOlderThan" if opts.resource_version else "",
        # the initial state is the whole list: a watch's limit/continue do not page it
        predicate=dataclasses.replace(opts.predicate, limit=0, continue_token=""),
        recursive=opts.recursive,
    )
    listed = await store.get_list(key, list_opts)
    initial: list[WatchEvent] = []
    if opts.send_initial_events:
        initial = [WatchEvent("ADDED", i.data, i.resource_version) for i in listed.items]
        if opts.allow_watch_bookmarks:
            initial.append(_bookmark(kind, api_version, listed.resource_version))
    follow = dataclasses.replace(
        opts,
        resource_version=str(listed.resource_version),
        resource_version_match="",
        send_initial_events=None,
    )
    return _ComposedWatcher(initial, await store.watch(key, follow))
