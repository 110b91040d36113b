"""EtcdClient against a real etcd: reads, guarded writes, compaction, progress, many
watches on one stream, lagging watches, and bad endpoints."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from etcdclient import (
    Compacted,
    DeadlineExceeded,
    EtcdClient,
    Event,
    EventType,
    FutureRevision,
    NotFound,
    Unavailable,
    WatchBatch,
    prefix_end,
)
from lab.etcd import EtcdCluster

pytestmark = pytest.mark.etcd


async def next_batch(watch: AsyncIterator[WatchBatch], wait: float = 10) -> WatchBatch:
    async with asyncio.timeout(wait):
        return await anext(watch)


async def test_range_pagination_at_fixed_revision_is_a_snapshot(
    client: EtcdClient, etcd_prefix: str
) -> None:
    p = etcd_prefix.encode() + b"/pods/"
    for i in range(60):
        await client.put(p + b"%03d" % i, b"v0-%d" % i)
    snapshot = await client.list_prefix(p)
    rev = snapshot.revision

    async def churn() -> None:
        n = 0
        while True:
            await client.put(p + b"%03d" % (n % 60), b"changed")
            await client.put(p + b"new-%d" % n, b"x")
            await client.delete(p + b"%03d" % ((n * 7) % 60))
            n += 1

    writer = asyncio.create_task(churn())
    try:
        pages, key, end = [], p, prefix_end(p)
        while True:
            page = await client.range(key, end, limit=7, revision=rev)
            assert page.revision >= rev  # header: the store's current revision
            pages.append(page)
            if not page.more:
                break
            key = page.kvs[-1].key + b"\x00"
            await asyncio.sleep(0.01)  # let the writer move the store on between pages
    finally:
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)
    got = [kv for page in pages for kv in page.kvs]
    assert got == snapshot.kvs
    assert pages[-1].revision > rev, "the store moved on while we paginated"
    assert (await client.list_prefix(p, revision=rev, count_only=True)).count == 60


async def test_get_missing_and_serializable(client: EtcdClient, etcd_prefix: str) -> None:
    key = etcd_prefix.encode() + b"/x"
    missing = await client.get(key)
    assert missing.kv is None and missing.revision > 0
    rev = await client.put(key, b"1")
    got = await client.get(key, serializable=True)
    assert got.kv is not None and got.kv.mod_revision == rev and got.kv.value == b"1"
    keys = await client.list_prefix(etcd_prefix.encode(), keys_only=True)
    assert [kv.key for kv in keys.kvs] == [key] and keys.kvs[0].value == b""


async def test_guarded_writes(client: EtcdClient, etcd_prefix: str) -> None:
    key = etcd_prefix.encode() + b"/cm"
    created = await client.create(key, b"a")
    assert created.succeeded and created.kv is not None
    assert created.kv.version == 1 and created.kv.mod_revision == created.revision

    again = await client.create(key, b"b")
    assert not again.succeeded and again.kv == created.kv

    upd = await client.optimistic_put(key, b"c", created.kv.mod_revision)
    assert upd.succeeded and upd.kv is not None
    assert (upd.kv.version, upd.kv.create_revision) == (2, created.kv.create_revision)
    assert upd.kv == (await client.get(key)).kv

    stale = await client.optimistic_put(key, b"d", created.kv.mod_revision)
    assert not stale.succeeded and stale.kv == upd.kv and stale.revision >= upd.revision

    stale_del = await client.optimistic_delete(key, created.kv.mod_revision)
    assert not stale_del.succeeded and stale_del.kv == upd.kv
    deleted = await client.optimistic_delete(key, upd.kv.mod_revision)
    assert deleted.succeeded and deleted.kv == upd.kv
    gone = await client.optimistic_put(key, b"e", upd.kv.mod_revision)
    assert not gone.succeeded and gone.kv is None
    rev, n = await client.delete(key)
    assert n == 0 and rev >= deleted.revision


async def test_compacted_range_and_watch_raise_compacted(etcd_own: EtcdCluster) -> None:
    async with EtcdClient(etcd_own.endpoints) as c:
        first = await c.put(b"/k", b"1")
        for i in range(5):
            last = await c.put(b"/k", b"%d" % i)
        await c.compact(last)
        with pytest.raises(Compacted) as e:
            await c.get(b"/k", revision=first)
        assert e.value.compact_revision == last
        with pytest.raises(Compacted) as e:
            await c.range(b"/", b"0", revision=first)
        assert e.value.compact_revision == last
        with pytest.raises(Compacted) as e:
            async for _ in c.watch(b"/k", start_revision=first):
                pytest.fail("no event may come from a compacted revision")
        assert e.value.compact_revision == last
        with pytest.raises(FutureRevision):
            await c.get(b"/k", revision=last + 100)
        with pytest.raises(Compacted):
            await c.compact(first)
        # the compact revision itself is still readable, and watchable
        assert (await c.get(b"/k", revision=last)).kv is not None
        async with c.watch(b"/k", start_revision=last) as w:
            assert (await next_batch(w)).events[0].kv.mod_revision == last


async def test_watch_events_prev_kv_filters_and_deletes(
    client: EtcdClient, etcd_prefix: str
) -> None:
    p = etcd_prefix.encode() + b"/"
    async with (
        client.watch(p, prefix_end(p), prev_kv=True) as all_events,
        client.watch(p, prefix_end(p), filters=["NOPUT"]) as deletes,
    ):
        r1 = await client.put(p + b"a", b"1")
        r2 = await client.put(p + b"a", b"2")
        r3, _ = await client.delete(p + b"a")
        seen: list[Event] = []
        while len(seen) < 3:
            seen.extend((await next_batch(all_events)).events)
        assert [(e.type, e.kv.mod_revision) for e in seen] == [
            (EventType.PUT, r1), (EventType.PUT, r2), (EventType.DELETE, r3),
        ]  # fmt: skip
        assert seen[0].prev_kv is None
        assert seen[1].prev_kv is not None and seen[1].prev_kv.value == b"1"
        assert seen[2].prev_kv is not None and seen[2].prev_kv.value == b"2"
        assert seen[2].kv.value == b""
        only = await next_batch(deletes)
        assert [e.type for e in only.events] == [EventType.DELETE]
        assert only.revision == r3


async def test_idle_watch_gets_progress_after_request_progress(
    client: EtcdClient, etcd_prefix: str
) -> None:
    key = etcd_prefix.encode() + b"/idle"
    async with client.watch(key) as w:
        rev = (await client.get(b"/")).revision
        await client.request_progress()
        batch = await next_batch(w)
        assert batch.progress_notify and batch.events == ()
        assert batch.revision >= rev


BACKLOG = 15_000  # revisions: etcd syncs a catching-up watch 1,000 a round (100 ms)


async def _progress_while_catching_up(
    client: EtcdClient, prefix: bytes, quiet_stream: str, busy_stream: str
) -> bool:
    """Write a backlog, start a watch catching it up on ``busy_stream``, and ask for
    progress on ``quiet_stream`` until an idle watch there gets it: True when it got it
    while the busy watch was still behind."""
    busy, quiet = prefix + b"/busy/", prefix + b"/quiet/"
    limit = asyncio.Semaphore(64)

    async def put(i: int) -> int:
        async with limit:
            return await client.put(busy + b"%05d" % i, b"v")

    revs = await asyncio.gather(*(put(i) for i in range(BACKLOG)))
    first, last = min(revs), max(revs)
    async with client.watch(quiet, prefix_end(quiet), stream=quiet_stream) as idle:
        backlog = client.watch(busy, prefix_end(busy), start_revision=first,
                               stream=busy_stream, buffer_size=BACKLOG)  # fmt: skip
        async with backlog:
            async with asyncio.timeout(30):
                while True:
                    await client.request_progress(quiet_stream)
                    try:
                        async with asyncio.timeout(0.05):
                            batch = await anext(idle)
                    except TimeoutError:
                        continue
                    assert batch.progress_notify
                    return backlog.next_revision <= last


async def test_a_watch_catching_up_denies_progress_to_its_own_stream_only(
    client: EtcdClient, etcd_prefix: str
) -> None:
    """Issue 23 §9: etcd drops a stream-wide progress request while any watch of the
    stream is unsynced, and a watch catching up a backlog stays unsynced for rounds.
    When every cache's watch shared one stream, one resource catching up (a lagging
    watch re-created under load, a new CRD's cache) denied progress to all of them:
    every consistent read of every resource waited 3 s and went to etcd. Each cache's
    watch now has a stream of its own: an idle watch gets progress while another
    stream's watch is still behind."""
    prefix = etcd_prefix.encode()
    assert await _progress_while_catching_up(client, prefix + b"/own", "quiet", "busy")


async def test_lagging_watch_resumes_without_loss(client: EtcdClient, etcd_prefix: str) -> None:
    p = etcd_prefix.encode() + b"/lag/"
    async with client.watch(p, prefix_end(p), buffer_size=2) as slow:
        revs = [await client.put(p + b"%d" % i, b"v") for i in range(30)]
        # The watch overflowed (lagging, cancelled at etcd) and replays once drained.
        got: list[int] = []
        while len(got) < len(revs):
            got.extend(e.kv.mod_revision for e in (await next_batch(slow)).events)
        assert got == revs


async def test_thousand_watches_one_stream_one_stuck(client: EtcdClient, etcd_prefix: str) -> None:
    p = etcd_prefix.encode() + b"/many/"
    stuck = client.watch(p, prefix_end(p), buffer_size=1)
    watches = [client.watch(p, prefix_end(p), buffer_size=4) for _ in range(1000)]
    await stuck.created()
    await asyncio.gather(*(w.created() for w in watches))
    revs = [await client.put(p + b"%d" % i, b"v") for i in range(10)]

    async def drain(w: AsyncIterator[WatchBatch]) -> list[int]:
        seen: list[int] = []
        while len(seen) < len(revs):
            seen.extend(e.kv.mod_revision for e in (await next_batch(w, 30)).events)
        return seen

    results = await asyncio.gather(*(drain(w) for w in watches))
    assert all(r == revs for r in results)
    assert stuck.lagging, "the never-read watch overflowed and was cut off, not waited for"
    assert await drain(stuck) == revs  # and it loses nothing once it reads
    for w in [stuck, *watches]:
        await w.cancel()
    with pytest.raises(StopAsyncIteration):
        await anext(stuck)


async def test_lease_grant_keepalive_revoke(client: EtcdClient, etcd_prefix: str) -> None:
    key = etcd_prefix.encode() + b"/leased"
    lease = await client.lease_grant(2)
    assert lease.ttl == 2
    await client.put(key, b"v", lease=lease.id)
    async with client.lease_keepalive(lease.id) as ka:
        assert ka.ttl == 2
        await asyncio.sleep(2.5)  # longer than the TTL: only the keep-alive saves the key
        assert (await client.get(key)).kv is not None
    await client.lease_revoke(lease.id)
    assert (await client.get(key)).kv is None
    with pytest.raises(NotFound):
        await client.lease_revoke(lease.id)


async def test_status_and_members(client: EtcdClient, etcd: EtcdCluster) -> None:
    st = await client.status(etcd.endpoints[0])
    assert st.version_tuple == etcd.version
    assert st.leader == st.member_id
    members = await client.member_list()
    assert [m.client_urls for m in members] == [(etcd.endpoints[0],)]


@pytest.mark.parametrize("call", ["connect", "get", "put", "watch"])
async def test_unreachable_endpoint_fails_fast(call: str) -> None:
    c = EtcdClient(["http://127.0.0.1:1"], dial_timeout=0.5, request_timeout=0.7)
    t0 = time.monotonic()
    try:
        with pytest.raises((Unavailable, DeadlineExceeded)):
            if call == "connect":
                await c.connect()
            elif call == "get":
                await c.get(b"/x")
            elif call == "put":
                await c.put(b"/x", b"v")
            else:
                await c.watch(b"/x").created()
    finally:
        await c.close()
    assert time.monotonic() - t0 < 2.0


async def test_lagging_watch_whose_history_was_compacted_raises_compacted(
    etcd_own: EtcdCluster,
) -> None:
    async with (
        EtcdClient(etcd_own.endpoints) as c,
        c.watch(b"/", b"0", buffer_size=1) as w,
        c.watch(b"/", b"0") as probe,
    ):
        revs = [await c.put(b"/lag/%d" % i, b"v") for i in range(5)]
        # etcd sends one stream's responses in revision order: once the probe has the
        # last write, the slow watch has had its second response and overflowed.
        seen: list[int] = []
        while revs[-1] not in seen:
            seen.extend(e.kv.mod_revision for e in (await next_batch(probe)).events)
        assert w.lagging
        await c.compact(revs[-1])
        assert [e.kv.mod_revision for e in (await next_batch(w)).events] == revs[:1]
        with pytest.raises(Compacted) as e:
            await next_batch(w)
        assert e.value.compact_revision == revs[-1]
