"""Helpers (no tests) for the cacher's integration tests: a cached store over a real etcd.

``cached_store(cluster, prefix, **config)`` is an async context manager yielding a
``CacheDelegator`` (cacher + etcd3 store) for pods under ``<prefix>/pods/``, ready.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson

from cacher import CacheDelegator, CacherConfig, new_cached_storage
from etcdclient import EtcdClient
from lab.etcd import EtcdCluster
from storage.etcd3 import Etcd3Store
from storage.fields import attrs_func
from storage.interfaces import JSONObject, ListOptions, SelectionPredicate, Watcher, WatchEvent
from storage.selectors import parse_field_selector, parse_label_selector

EVENT_TIMEOUT = 10.0

# Defaults for tests (compaction is the storage context's business, not the cache's).
TEST_CONFIG: dict[str, Any] = {"bookmark_interval": 60.0}


@contextlib.asynccontextmanager
async def etcd_client(cluster: EtcdCluster, **kw: Any) -> AsyncIterator[EtcdClient]:
    client = EtcdClient(cluster.endpoints, **kw)
    await client.connect()
    try:
        yield client
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def cached_store(
    client: EtcdClient, prefix: str, *, request_timeout: float = 10.0, **config: Any
) -> AsyncIterator[CacheDelegator]:
    """A ready cacher for pods under ``<prefix>/pods/`` over ``client``."""
    store = Etcd3Store(client, request_timeout=request_timeout)
    cfg = CacherConfig(**{**TEST_CONFIG, **config})
    cached = new_cached_storage(
        store,
        resource="pods",
        resource_prefix=f"{prefix}/pods/",
        attrs=attrs_func("pods"),
        kind="Pod",
        api_version="v1",
        config=cfg,
    )
    try:
        assert await cached.cacher.wait_ready(15), "cacher never became ready"
        yield cached
    finally:
        await cached.close()


def pod(
    name: str,
    namespace: str = "ns",
    *,
    labels: dict[str, str] | None = None,
    node: str = "",
    phase: str = "",
) -> JSONObject:
    meta: JSONObject = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    obj: JSONObject = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
    }
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def opts(
    rv: str = "",
    match: Any = "",
    *,
    label: str = "",
    field: str = "",
    limit: int = 0,
    bookmarks: bool = False,
    send_initial_events: bool | None = None,
    recursive: bool = True,
    timeout: float | None = None,
) -> ListOptions:
    pred = SelectionPredicate(
        label=parse_label_selector(label) if label else None,
        field=parse_field_selector(field) if field else None,
        get_attrs=attrs_func("pods"),
        limit=limit,
    )
    return ListOptions(
        resource_version=rv,
        resource_version_match=match,
        predicate=pred,
        recursive=recursive,
        send_initial_events=send_initial_events,
        allow_watch_bookmarks=bookmarks,
        timeout_seconds=timeout,
    )


async def next_events(watcher: Watcher, n: int, seconds: float = EVENT_TIMEOUT) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    it = aiter(watcher)
    async with asyncio.timeout(seconds):
        while len(out) < n:
            out.append(await anext(it))
    return out


async def until_end(watcher: Watcher, seconds: float = EVENT_TIMEOUT) -> list[WatchEvent]:
    """Every event until the server ends the stream."""
    async with asyncio.timeout(seconds):
        return [e async for e in watcher]


def view(event: WatchEvent) -> tuple[str, str, int]:
    obj = orjson.loads(event.data)
    return event.type, obj.get("metadata", {}).get("name", ""), event.resource_version
