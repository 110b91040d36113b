"""A watch cache that heals itself and never holds the event loop for long, over a real
etcd: an unexpected error in a cache's tasks restarts that cache (metric, readiness
names it), a re-list yields between decoded slices, a filtered etcd list keeps its
batches within a byte bound, and a streaming list "from now" that etcd cannot date is
an ERROR event (kube-apiserver's error watcher), not the cache's state as if current."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson
import pytest
from prometheus_client import REGISTRY

import cacher.cacher as cacher_module
from cacher import CacheDelegator, CacherConfig, metrics, new_cached_storage
from etcdclient import EtcdClient
from lab.etcd import EtcdCluster
from storage import codec
from storage.errors import NotReady
from storage.etcd3 import Etcd3Store, lister, lister_watcher
from storage.fields import attrs_func
from storage.interfaces import JSONObject, StoredObject
from tests.integration.test_cacher_support import (
    cached_store,
    etcd_client,
    next_events,
    opts,
    pod,
    until_end,
)
from tests.integration.test_etcd3_store import _PagedClient

pytestmark = pytest.mark.etcd

POD_ATTRS = attrs_func("pods")


@pytest.fixture
async def client(etcd: EtcdCluster) -> AsyncIterator[EtcdClient]:
    async with etcd_client(etcd) as c:
        yield c


def exploding_attrs(obj: JSONObject) -> tuple[Mapping[str, str], Mapping[str, str]]:
    """Pods' attrs, except that a pod labelled ``explode`` trips a bug (not a decode
    error: an unexpected exception the cache's supervisor must handle)."""
    labels, fields = POD_ATTRS(obj)
    if "explode" in labels:
        raise RuntimeError("a bug in attrs")
    return labels, fields


@contextlib.asynccontextmanager
async def exploding_cache(client: EtcdClient, prefix: str) -> AsyncIterator[CacheDelegator]:
    cached = new_cached_storage(
        Etcd3Store(client), resource="pods", resource_prefix=f"{prefix}/pods/",
        attrs=exploding_attrs, kind="Pod", api_version="v1", config=CacherConfig(),
    )  # fmt: skip
    try:
        assert await cached.cacher.wait_ready(15)
        yield cached
    finally:
        await cached.close()


async def test_an_unexpected_task_error_restarts_the_cache(
    client: EtcdClient, etcd_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the reflector task died (``task ... died``) and the cache stayed frozen
    and "ready" until the server restarted."""
    monkeypatch.setattr(cacher_module, "RESTART_BACKOFF_INITIAL", 0.05)
    restarts = metrics.RESTARTS.labels("pods", "reflector")
    before = restarts._value.get()
    async with exploding_cache(client, etcd_prefix) as c:
        prefix = c.cacher.resource_prefix
        a = await c.create(f"{prefix}ns/a", pod("a"))
        await c.cacher.wait_until_fresh(a.resource_version)
        w = await c.watch(prefix, opts(str(a.resource_version)))
        await c.create(f"{prefix}ns/boom", pod("boom", labels={"explode": "1"}))
        assert await until_end(w) == []  # closed by the restart (clients re-watch)
        with pytest.raises(NotReady) as err:
            c.readiness_check()
        assert err.value.message == (
            "watch cache of pods is restarting after reflector failed: "
            "RuntimeError: a bug in attrs"
        )
        assert c.cacher.restarts >= 1 and restarts._value.get() > before
        # Every re-list meets the same object: the cache keeps restarting (backing off)
        # until it is gone, then it is whole again.
        await c.delete(f"{prefix}ns/boom")
        b = await c.create(f"{prefix}ns/b", pod("b"))
        assert await c.cacher.wait_ready(10)
        await c.cacher.wait_until_fresh(b.resource_version)
        c.readiness_check()
        listed = await c.get_list(prefix, opts("0"))
        assert [orjson.loads(s.data)["metadata"]["name"] for s in listed.items] == ["a", "b"]
        assert c.cacher.failure == ""


async def test_a_relist_yields_to_the_loop_between_slices(
    client: EtcdClient, etcd_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a re-list decoded each page of 10,000 keys in one synchronous step; now
    the loop runs other work after every DECODE_SLICE values. A ticker task counts the
    values decoded between two of its turns."""
    monkeypatch.setattr(lister_watcher, "DECODE_SLICE", 50)
    prefix = f"{etcd_prefix}/pods/"
    for i in range(400):
        await client.put(f"{prefix}ns/p{i:04}".encode(), orjson.dumps(pod(f"p{i:04}")))
    decoded = 0
    real_decode = codec.decode

    def counting_decode(*args: Any, **kw: Any) -> StoredObject:
        nonlocal decoded
        decoded += 1
        return real_decode(*args, **kw)

    async with cached_store(client, etcd_prefix) as c:
        most, stop = 0, asyncio.Event()

        async def ticker() -> None:
            nonlocal decoded, most
            while not stop.is_set():
                most, decoded = max(most, decoded), 0
                await asyncio.sleep(0)

        monkeypatch.setattr(codec, "decode", counting_decode)
        task = asyncio.create_task(ticker())
        rev = await c.cacher.reflector._list()  # the re-list the reflector runs
        stop.set()
        await task
        assert len(c.cacher.cache) == 400 and rev >= 400
        assert 0 < most <= 50


async def test_filtered_etcd_list_batches_are_bounded_by_bytes(
    etcd: EtcdCluster, etcd_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a selector LIST doubled its batch up to 10,000 keys whatever their size."""
    monkeypatch.setattr(lister, "PAGE_BYTES", 20_000)
    client = _PagedClient(list(etcd.endpoints))
    await client.connect()
    try:
        store = Etcd3Store(client)
        prefix = f"{etcd_prefix}/pods/"
        big = "x" * 2_000
        for i in range(200):
            obj = pod(f"p{i:03}", labels={"pad": "a", "last": "yes" if i == 199 else "no"})
            obj["spec"]["padding"] = big
            await client.put(f"{prefix}ns/p{i:03}".encode(), orjson.dumps(obj))
        client.ranges.clear()
        res = await store.get_list(prefix, opts(label="last=yes", limit=1))
        assert [orjson.loads(s.data)["metadata"]["name"] for s in res.items] == ["p199"]
        limits = [limit for limit, _ in client.ranges]
        assert max(limits) <= 20_000 // 2_000 + 1, limits
    finally:
        await client.close()


async def test_streaming_list_from_now_without_etcd_is_one_error_event(
    etcd_own: EtcdCluster, etcd_prefix: str
) -> None:
    """Before: when etcd could not give its current revision, the cache's own state was
    sent as if current. Upstream (cacher.Watch → getWatchCacheResourceVersion) answers
    with an error watcher: one ERROR event, 500 InternalError."""
    async with (
        etcd_client(etcd_own, request_timeout=1.0, dial_timeout=1.0) as client,
        cached_store(client, etcd_prefix, request_timeout=1.0) as c,
    ):
        prefix = c.cacher.resource_prefix
        a = await c.create(f"{prefix}ns/a", pod("a"))
        await c.cacher.wait_until_fresh(a.resource_version)
        c.cacher.progress.supported = True  # as on an etcd with the progress fixes
        await asyncio.to_thread(etcd_own.stop_member, 0)
        try:
            w = await c.watch(prefix, opts("", "NotOlderThan", send_initial_events=True))
            events = await until_end(w)
        finally:
            await asyncio.to_thread(etcd_own.start_member, 0)
        assert [e.type for e in events] == ["ERROR"]
        status = orjson.loads(events[0].data)
        assert (status["code"], status["reason"]) == (500, "InternalError")
        assert status["message"].startswith("etcd")
        # etcd back: the streaming list is served again
        await asyncio.sleep(0)
        w = await c.watch(prefix, opts("", "NotOlderThan", send_initial_events=True))
        assert [e.type for e in await next_events(w, 1, seconds=20)] == ["ADDED"]
        await w.stop()


async def test_the_cache_reads_etcd_through_the_store_and_its_metric(
    client: EtcdClient, etcd_prefix: str
) -> None:
    """Before: the reflector, the progress requester and the consistent-read probe called
    the etcd client directly: no etcd_request_duration_seconds, no error translation."""
    label = f"pods-{etcd_prefix[3:15]}"  # this test's own series

    def count(operation: str) -> float:
        labels = {"operation": operation, "group": "", "resource": label}
        return REGISTRY.get_sample_value("etcd_request_duration_seconds_count", labels) or 0.0

    store = Etcd3Store(client, group="", resource=label)
    cached = new_cached_storage(
        store, resource="pods", resource_prefix=f"{etcd_prefix}/pods/", attrs=POD_ATTRS,
        kind="Pod", api_version="v1", config=CacherConfig(consistent_list_from_cache=True),
    )  # fmt: skip
    try:
        assert await cached.cacher.wait_ready(15)
        assert count("list") >= 1  # the reflector's LIST
        probes = count("getCurrentResourceVersion")
        await cached.get_list(f"{etcd_prefix}/pods/", opts())  # a consistent LIST
        assert count("getCurrentResourceVersion") == probes + 1  # the revision probe
    finally:
        await cached.close()
