"""WATCH served by the cache, against a real etcd (behaviours of kube-apiserver's
cacher_test.go, watcher_tests.go and watch_cache_test.go)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
import pytest

from cacher import CacheDelegator
from cacher.cache_watcher import CacheWatcher, CloseReason
from etcdclient import EtcdClient, prefix_end
from storage.errors import TooLargeResourceVersion
from storage.interfaces import JSONObject, StoredObject
from tests.integration.test_cacher_support import (
    cached_store,
    next_events,
    opts,
    pod,
    until_end,
    view,
)

pytestmark = pytest.mark.etcd


@pytest.fixture
async def cached(client: EtcdClient, etcd_prefix: str) -> AsyncIterator[CacheDelegator]:
    async with cached_store(client, etcd_prefix, bookmark_interval=0.2) as c:
        yield c


def key(c: CacheDelegator, name: str, ns: str = "ns") -> str:
    return f"{c.cacher.resource_prefix}{ns}/{name}"


async def create(c: CacheDelegator, obj: JSONObject) -> StoredObject:
    meta = obj["metadata"]
    return await c.create(key(c, meta["name"], meta["namespace"]), obj)


async def update(c: CacheDelegator, name: str, ns: str = "ns", **changes: object) -> StoredObject:
    async def apply(obj: JSONObject) -> JSONObject:
        if "labels" in changes:
            obj["metadata"]["labels"] = changes["labels"]
        if "node" in changes:
            obj["spec"]["nodeName"] = changes["node"]
        return obj

    return await c.guaranteed_update(key(c, name, ns), None, apply)


async def test_watch_unset_and_zero_send_current_state_then_changes(
    cached: CacheDelegator,
) -> None:
    existing = [await create(cached, pod("a")), await create(cached, pod("b"))]
    for rv in ("", "0"):
        await cached.cacher.wait_until_fresh(existing[-1].resource_version)
        w = await cached.watch(cached.cacher.resource_prefix, opts(rv))
        initial = await next_events(w, len(existing))
        assert [view(e) for e in initial] == [
            ("ADDED", s.obj["metadata"]["name"], s.resource_version) for s in existing
        ]
        c = await create(cached, pod(f"c{rv or 'unset'}"))
        assert [view(e) for e in await next_events(w, 1)] == [
            ("ADDED", f"c{rv or 'unset'}", c.resource_version)
        ]
        existing.append(c)
        await w.stop()


async def test_watch_from_rv_replays_history_in_order(cached: CacheDelegator) -> None:
    start = await create(cached, pod("a"))
    b = await create(cached, pod("b"))
    a2 = await update(cached, "a", node="n1")
    gone = await cached.delete(key(cached, "b"))
    w = await cached.watch(cached.cacher.resource_prefix, opts(str(start.resource_version)))
    events = await next_events(w, 3)
    await w.stop()
    assert [view(e) for e in events] == [
        ("ADDED", "b", b.resource_version),
        ("MODIFIED", "a", a2.resource_version),
        ("DELETED", "b", gone.resource_version),
    ]
    # DELETED carries the last state with the deletion revision
    deleted = orjson.loads(events[2].data)
    assert deleted["metadata"]["resourceVersion"] == str(gone.resource_version)
    assert deleted["metadata"]["uid"] == "uid-b"


async def test_watch_from_rv_newer_than_cache_delivers_only_later_events(
    cached: CacheDelegator,
) -> None:
    a = await create(cached, pod("a"))
    future = a.resource_version + 2
    w = await cached.watch(cached.cacher.resource_prefix, opts(str(future)))
    written = [await create(cached, pod(name)) for name in ("b", "c", "d")]
    expected = [x for x in written if x.resource_version > future]
    assert 0 < len(expected) < 3  # b is a.rv + 1 unless other tests wrote in between
    got = await next_events(w, len(expected))
    await w.stop()
    assert [e.resource_version for e in got] == [x.resource_version for x in expected]


async def test_too_old_resource_version_is_one_error_event(
    client: EtcdClient, etcd_prefix: str
) -> None:
    async with cached_store(client, etcd_prefix, default_watch_cache_size=3) as c:
        first = await create(c, pod("p0"))
        written = [await update(c, "p0", node=f"n{i}") for i in range(1, 6)]
        await c.cacher.wait_until_fresh(written[-1].resource_version)
        w = await c.watch(c.cacher.resource_prefix, opts(str(first.resource_version)))
        events = await until_end(w)
        assert [e.type for e in events] == ["ERROR"]
        status = orjson.loads(events[0].data)
        oldest_held = written[-3].resource_version
        assert status == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f"too old resource version: {first.resource_version} ({oldest_held - 1})",
            "reason": "Expired",
            "code": 410,
        }
        # the oldest resumable RV still works
        ok = await c.watch(c.cacher.resource_prefix, opts(str(oldest_held - 1)))
        assert [e.resource_version for e in await next_events(ok, 3)] == [
            w.resource_version for w in written[-3:]
        ]
        await ok.stop()


async def test_selector_transitions_and_real_delete(cached: CacheDelegator) -> None:
    start = await create(cached, pod("a", labels={"app": "y"}))
    w = await cached.watch(
        cached.cacher.resource_prefix, opts(str(start.resource_version), label="app=x")
    )
    enter = await update(cached, "a", labels={"app": "x"})
    stay = await update(cached, "a", labels={"app": "x", "v": "2"})
    leave = await update(cached, "a", labels={"app": "y"})
    await cached.delete(key(cached, "a"))  # did not match any more: nothing
    b = await create(cached, pod("b", labels={"app": "x"}))
    b_gone = await cached.delete(key(cached, "b"))
    events = await next_events(w, 5)
    await w.stop()
    assert [view(e) for e in events] == [
        ("ADDED", "a", enter.resource_version),
        ("MODIFIED", "a", stay.resource_version),
        ("DELETED", "a", leave.resource_version),
        ("ADDED", "b", b.resource_version),
        ("DELETED", "b", b_gone.resource_version),
    ]
    left = orjson.loads(events[2].data)
    assert left["metadata"]["labels"] == {"app": "x", "v": "2"}  # the old object...
    assert left["metadata"]["resourceVersion"] == str(leave.resource_version)  # ...new RV


async def test_namespace_and_name_scoped_watches(cached: CacheDelegator) -> None:
    start = await create(cached, pod("a", "ns1"))
    prefix = cached.cacher.resource_prefix
    in_ns = await cached.watch(f"{prefix}ns1/", opts(str(start.resource_version)))
    by_key = await cached.watch(
        key(cached, "a", "ns1"), opts(str(start.resource_version), recursive=False)
    )
    by_name = await cached.watch(prefix, opts(str(start.resource_version), field="metadata.name=b"))
    await create(cached, pod("b", "ns2"))
    a2 = await update(cached, "a", "ns1", node="n1")
    b1 = await create(cached, pod("b", "ns1"))
    assert [view(e) for e in await next_events(in_ns, 2)] == [
        ("MODIFIED", "a", a2.resource_version),
        ("ADDED", "b", b1.resource_version),
    ]
    assert [view(e) for e in await next_events(by_key, 1)] == [
        ("MODIFIED", "a", a2.resource_version)
    ]
    got = await next_events(by_name, 2)
    assert [e.type for e in got] == ["ADDED", "ADDED"]
    assert {orjson.loads(e.data)["metadata"]["namespace"] for e in got} == {"ns1", "ns2"}
    for w in (in_ns, by_key, by_name):
        await w.stop()


async def test_bookmarks_only_above_start_rv(cached: CacheDelegator) -> None:
    a = await create(cached, pod("a"))
    b = await create(cached, pod("b"))
    await cached.cacher.wait_until_fresh(b.resource_version)
    prefix = cached.cacher.resource_prefix
    behind = await cached.watch(prefix, opts(str(a.resource_version), bookmarks=True))
    current = await cached.watch(prefix, opts(str(b.resource_version), bookmarks=True))
    events = await next_events(behind, 3)  # b, then bookmarks every 0.2 s
    assert view(events[0]) == ("ADDED", "b", b.resource_version)
    assert [e.type for e in events[1:]] == ["BOOKMARK", "BOOKMARK"]
    assert orjson.loads(events[1].data) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(b.resource_version)},
    }
    # The same ticks passed for `current`: its start RV is the cache's RV, so nothing.
    assert isinstance(current, CacheWatcher) and current.buffered == 0
    c = await create(cached, pod("c"))
    got = await next_events(current, 2)
    assert [view(e)[0] for e in got] == ["ADDED", "BOOKMARK"]
    assert got[1].resource_version == c.resource_version
    await behind.stop()
    await current.stop()


async def test_timeout_ends_cleanly_after_a_pre_timeout_bookmark(
    client: EtcdClient, etcd_prefix: str
) -> None:
    async with cached_store(
        client, etcd_prefix, bookmark_interval=60, bookmark_pre_timeout=0.5
    ) as c:
        a = await create(c, pod("a"))
        b = await create(c, pod("b"))
        await c.cacher.wait_until_fresh(b.resource_version)
        w = await c.watch(
            c.cacher.resource_prefix, opts(str(a.resource_version), bookmarks=True, timeout=1.5)
        )
        events = await until_end(w, seconds=5)
        assert [e.type for e in events] == ["ADDED", "BOOKMARK"]
        assert isinstance(w, CacheWatcher) and w.closed is CloseReason.TIMEOUT
        plain = await c.watch(c.cacher.resource_prefix, opts(str(b.resource_version), timeout=0.3))
        assert await until_end(plain, seconds=5) == []


async def test_send_initial_events_with_end_bookmark(cached: CacheDelegator) -> None:
    a = await create(cached, pod("a"))
    b = await create(cached, pod("b", labels={"app": "x"}))
    prefix = cached.cacher.resource_prefix
    w = await cached.watch(
        prefix,
        opts(str(b.resource_version), "NotOlderThan", bookmarks=True, send_initial_events=True),
    )
    events = await next_events(w, 3)
    assert [view(e)[:2] for e in events] == [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", "")]
    end = orjson.loads(events[2].data)
    assert end["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(end["metadata"]["resourceVersion"]) >= b.resource_version
    c = await create(cached, pod("c"))
    assert view((await next_events(w, 1))[0]) == ("ADDED", "c", c.resource_version)
    await w.stop()
    # without bookmarks: no end marker; with a selector: only matches
    w2 = await cached.watch(
        prefix, opts("0", "NotOlderThan", label="app=x", send_initial_events=True)
    )
    assert [view(e)[:2] for e in await next_events(w2, 1)] == [("ADDED", "b")]
    d = await create(cached, pod("d", labels={"app": "x"}))
    assert view((await next_events(w2, 1))[0]) == ("ADDED", "d", d.resource_version)
    await w2.stop()
    assert a.resource_version < b.resource_version


async def test_send_initial_events_false_starts_from_now(cached: CacheDelegator) -> None:
    a = await create(cached, pod("a"))
    await cached.cacher.wait_until_fresh(a.resource_version)
    w = await cached.watch(cached.cacher.resource_prefix, opts("0", send_initial_events=False))
    b = await create(cached, pod("b"))
    assert [view(e) for e in await next_events(w, 1)] == [("ADDED", "b", b.resource_version)]
    await w.stop()


async def test_send_initial_events_waits_for_rv_then_504(
    client: EtcdClient, etcd_prefix: str
) -> None:
    async with cached_store(client, etcd_prefix, freshness_wait=0.3) as c:
        a = await create(c, pod("a"))
        with pytest.raises(TooLargeResourceVersion):
            await c.watch(
                c.cacher.resource_prefix,
                opts(str(a.resource_version + 10_000), "NotOlderThan", send_initial_events=True),
            )


async def test_node_scoped_watch_uses_the_index(cached: CacheDelegator) -> None:
    start = await create(cached, pod("a", node="n2"))
    prefix = cached.cacher.resource_prefix
    w = await cached.watch(prefix, opts(str(start.resource_version), field="spec.nodeName=n1"))
    assert isinstance(w, CacheWatcher) and cached.cacher.dispatcher._value_of.get(w) == "n1"
    await create(cached, pod("b", node="n2"))
    c = await create(cached, pod("c", node="n1"))
    moved = await update(cached, "a", node="n1")
    assert [view(e) for e in await next_events(w, 2)] == [
        ("ADDED", "c", c.resource_version),
        ("ADDED", "a", moved.resource_version),
    ]
    await w.stop()
    assert len(cached.cacher.dispatcher) == 0


async def test_watchers_closed_on_close(client: EtcdClient, etcd_prefix: str) -> None:
    async with cached_store(client, etcd_prefix) as c:
        w = await c.watch(c.cacher.resource_prefix, opts("0"))
    assert await until_end(w) == []


async def test_many_watchers_one_slow_is_closed(cached: CacheDelegator) -> None:
    """100 watchers receive every event while one that never reads is closed."""
    start = await create(cached, pod("seed"))
    prefix = cached.cacher.resource_prefix
    slow = await cached.watch(prefix, opts(str(start.resource_version)))
    fast = [await cached.watch(prefix, opts(str(start.resource_version))) for _ in range(100)]
    n = 2 * cached.cacher.config.watcher_buffer_size + 10
    received = [0] * len(fast)

    async def consume(i: int) -> None:
        async for _ in fast[i]:
            received[i] += 1
            if received[i] == n:
                return

    consumers = [asyncio.ensure_future(consume(i)) for i in range(len(fast))]
    written = [await create(cached, pod(f"p{i}")) for i in range(n)]
    async with asyncio.timeout(20):
        await asyncio.gather(*consumers)
    reasons = {getattr(w, "closed", None) for w in fast}
    cacher = cached.cacher
    why = (f"fast watchers closed: {reasons}; cache restarts {cacher.restarts}, "
           f"failure {cacher.failure!r}, initializations {cacher.reflector.initializations}, "
           f"reflector error {cacher.reflector.last_error!r}")  # fmt: skip
    assert received == [n] * len(fast), why
    assert isinstance(slow, CacheWatcher) and slow.closed is CloseReason.SLOW
    assert await until_end(slow) == []
    assert written[-1].resource_version > start.resource_version
    for w in fast:
        await w.stop()


async def test_a_burst_in_one_etcd_response_reaches_every_reading_watcher(
    client: EtcdClient, etcd_prefix: str
) -> None:
    """A range delete is one etcd revision: its events arrive in one watch response,
    more than twice a watcher's buffer. Before: the dispatcher pushed them all without
    letting the loop run, so every watcher hit the hard limit and was closed as slow
    although its client was reading (seen as a flaky many-watchers test late in the
    suite, when etcd batched the creates). Now it yields while a watcher is full."""
    async with cached_store(client, etcd_prefix) as cached:
        n = 2 * cached.cacher.config.watcher_buffer_size + 10
        last = [await create(cached, pod(f"p{i}")) for i in range(n)][-1]
        prefix = cached.cacher.resource_prefix
        rv = str(last.resource_version)  # the watches see the deletes only
        watchers = [await cached.watch(prefix, opts(rv)) for _ in range(20)]
        deleted = [0] * len(watchers)

        async def consume(i: int) -> None:
            async for event in watchers[i]:
                assert event.type == "DELETED"
                deleted[i] += 1
                if deleted[i] == n:
                    return

        consumers = [asyncio.ensure_future(consume(i)) for i in range(len(watchers))]
        await asyncio.sleep(0)  # every client is waiting for its first event
        await client.delete(prefix.encode(), prefix_end(prefix.encode()))
        async with asyncio.timeout(20):
            await asyncio.gather(*consumers)
        reasons = {getattr(w, "closed", None) for w in watchers}
        assert deleted == [n] * len(watchers), f"closed: {reasons}"
        for w in watchers:
            await w.stop()
