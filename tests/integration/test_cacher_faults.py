"""The cache through etcd outages, compaction and leader loss (upstream cacher.go and
reflector behaviour), against
real etcd processes stopped and started by PID."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

import orjson
import pytest

from cacher import CacheDelegator
from cacher.cache_watcher import CacheWatcher, CloseReason
from etcdclient import EtcdClient
from lab.etcd import EtcdCluster
from storage.errors import AlreadyExists, StorageError, Unavailable
from storage.etcd3 import Etcd3Store
from storage.interfaces import GetOptions, StoredObject
from tests.integration.test_cacher_support import (
    cached_store,
    etcd_client,
    next_events,
    opts,
    pod,
    until_end,
    view,
)

pytestmark = pytest.mark.etcd

T = TypeVar("T")


def new_prefix() -> str:
    return f"/t-{uuid.uuid4().hex[:12]}/registry"


async def retrying(op: Callable[[], Awaitable[T]], seconds: float = 20.0) -> T:
    """Retry a write while etcd recovers (elections, reconnects)."""
    async with asyncio.timeout(seconds):
        while True:
            try:
                return await op()
            except Unavailable:
                await asyncio.sleep(0.05)  # etcd is recovering: nothing to await but time


async def create_pod(store: Etcd3Store | CacheDelegator, prefix: str, name: str) -> StoredObject:
    key = f"{prefix}/pods/ns/{name}"

    async def once() -> StoredObject:
        try:
            return await store.create(key, pod(name))
        except AlreadyExists:  # an earlier attempt went through before the error
            return await store.get(key, GetOptions())

    return await retrying(once)


async def test_etcd_down_cache_serves_rv0_unset_fails_then_recovers(
    etcd_own: EtcdCluster,
) -> None:
    prefix = new_prefix()
    async with (
        etcd_client(etcd_own, request_timeout=1.0, dial_timeout=1.0) as client,
        cached_store(client, prefix, request_timeout=1.0) as c,
    ):
        written = [await create_pod(c, prefix, n) for n in ("a", "b", "c")]
        last = written[-1].resource_version
        await c.cacher.wait_until_fresh(last)
        watcher = await c.watch(c.cacher.resource_prefix, opts(str(last)))

        await asyncio.to_thread(etcd_own.stop_member, 0)
        listed = await c.get_list(c.cacher.resource_prefix, opts("0"))
        assert [s.obj["metadata"]["name"] for s in listed.items] == ["a", "b", "c"]
        assert listed.served_from == "cache" and listed.resource_version == last
        got = await c.get(f"{prefix}/pods/ns/b", GetOptions(resource_version="0"))
        assert got.data == written[1].data
        at_n = await c.get(f"{prefix}/pods/ns/a", GetOptions(resource_version=str(last)))
        assert at_n.resource_version == written[0].resource_version

        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(StorageError):
            await c.get_list(c.cacher.resource_prefix, opts())
        with pytest.raises(StorageError):
            await c.get(f"{prefix}/pods/ns/a", GetOptions())
        assert loop.time() - began < 6.0  # bounded by the request timeout, not hanging

        await asyncio.to_thread(etcd_own.start_member, 0)
        d = await create_pod(c, prefix, "d")
        assert [view(e) for e in await next_events(watcher, 1, seconds=20)] == [
            ("ADDED", "d", d.resource_version)
        ]
        assert c.cacher.reflector.initializations == 1  # resumed, no re-list
        await watcher.stop()


async def test_compaction_past_the_cache_relists_and_old_rvs_get_410(
    etcd_cluster3: EtcdCluster,
) -> None:
    """The cache's only etcd member goes away while the others take writes and compact;
    when it comes back the cache's resume revision is compacted: it re-lists, closes its
    watchers, and watches from before the re-list get 410."""
    prefix = new_prefix()
    m0, others = etcd_cluster3.members[0], etcd_cluster3.members[1:]
    async with etcd_client(etcd_cluster3) as writer_all:
        cache_client = EtcdClient([m0.client_url], request_timeout=2.0, dial_timeout=1.0)
        await cache_client.connect()
        try:
            async with cached_store(cache_client, prefix) as c:
                writer = Etcd3Store(writer_all)
                a = await create_pod(writer, prefix, "a")
                await c.cacher.wait_until_fresh(a.resource_version)
                live = await c.watch(c.cacher.resource_prefix, opts(str(a.resource_version)))
                gen = c.cacher.ready.generation

                await asyncio.to_thread(etcd_cluster3.stop_member, 0)
                side = EtcdClient([m.client_url for m in others])
                await side.connect()
                try:
                    side_store = Etcd3Store(side)
                    b = await create_pod(side_store, prefix, "b")
                    await create_pod(side_store, prefix, "c")
                    await side.compact(b.resource_version + 1)
                finally:
                    await side.close()
                await asyncio.to_thread(etcd_cluster3.start_member, 0)

                assert await until_end(live, seconds=30) == []
                assert isinstance(live, CacheWatcher) and live.closed is CloseReason.REPLACED
                assert await c.cacher.wait_ready(30)
                assert c.cacher.ready.generation == gen + 1
                assert c.cacher.reflector.initializations == 2
                listed = await c.get_list(c.cacher.resource_prefix, opts("0"))
                assert [s.obj["metadata"]["name"] for s in listed.items] == ["a", "b", "c"]
                relist_rv = c.cacher.history.list_resource_version
                old = await c.watch(c.cacher.resource_prefix, opts(str(a.resource_version)))
                events = await until_end(old)
                assert [e.type for e in events] == ["ERROR"]
                status = orjson.loads(events[0].data)
                assert status["code"] == 410 and status["reason"] == "Expired"
                assert status["message"] == (
                    f"too old resource version: {a.resource_version} ({relist_rv})"
                )
        finally:
            await cache_client.close()


@pytest.mark.cluster
async def test_leader_loss_no_relist_no_missed_event(etcd_cluster3: EtcdCluster) -> None:
    prefix = new_prefix()
    async with (
        etcd_client(etcd_cluster3, request_timeout=3.0, dial_timeout=1.0) as client,
        etcd_client(etcd_cluster3, request_timeout=3.0, dial_timeout=1.0) as writer_client,
        cached_store(client, prefix) as c,
    ):
        writer = Etcd3Store(writer_client, request_timeout=3.0)
        start = await create_pod(writer, prefix, "start")
        watcher = await c.watch(c.cacher.resource_prefix, opts(str(start.resource_version)))
        before = [await create_pod(writer, prefix, f"b{i}") for i in range(10)]
        statuses = [await client.status(m.client_url) for m in etcd_cluster3.members]
        leader_id = statuses[0].leader
        leader = next(i for i, s in enumerate(statuses) if s.member_id == leader_id)
        await asyncio.to_thread(etcd_cluster3.kill_member, leader)
        after = [await create_pod(writer, prefix, f"a{i}") for i in range(10)]
        events = await next_events(watcher, 20, seconds=30)
        assert [view(e) for e in events] == [
            ("ADDED", s.obj["metadata"]["name"], s.resource_version) for s in before + after
        ]
        assert c.cacher.reflector.initializations == 1
        await watcher.stop()
