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
from storage.interfaces import Watcher, WatchEvent
from tests.integration.storage_suite import EVENT_TIMEOUT, next_events, pod
from tests.integration.storage_suite import list_opts as opts

__all__ = ["cached_store", "etcd_client", "next_events", "opts", "pod", "until_end", "view"]

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


async def until_end(watcher: Watcher, seconds: float = EVENT_TIMEOUT) -> list[WatchEvent]:
    """Every event until the server ends the stream."""
    async with asyncio.timeout(seconds):
        return [e async for e in watcher]


def view(event: WatchEvent) -> tuple[str, str, int]:
    obj = orjson.loads(event.data)
    return event.type, obj.get("metadata", {}).get("name", ""), event.resource_version
