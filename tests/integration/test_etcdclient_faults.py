"""EtcdClient under faults: an etcd restart mid-watch, and the leader of a 3-member
cluster killed under write load."""

from __future__ import annotations

import asyncio

import pytest

from etcdclient import DeadlineExceeded, EtcdClient, Unavailable, Watch, prefix_end
from lab.etcd import EtcdCluster

pytestmark = pytest.mark.etcd


async def collect_until(watch: Watch, last_revision: int) -> list[int]:
    """Event revisions from ``watch`` until one reaches ``last_revision``."""
    revs: list[int] = []
    async with asyncio.timeout(30):
        async for batch in watch:
            revs.extend(e.kv.mod_revision for e in batch.events)
            if revs and revs[-1] >= last_revision:
                return revs
    raise AssertionError("watch ended")


async def test_watch_survives_etcd_restart(etcd_own: EtcdCluster) -> None:
    p = b"/restart/"
    async with EtcdClient(etcd_own.endpoints, request_timeout=3, dial_timeout=3) as c:
        start = await c.put(b"/start", b"")
        watch = c.watch(p, prefix_end(p), start_revision=start + 1)
        await watch.created()
        halfway = asyncio.Event()
        written: list[int] = []

        async def write(i: int) -> int:
            # create() is guarded, so retrying it until it answers applies it exactly once;
            # a retry that finds our own earlier write returns it as the current value.
            while True:
                try:
                    res = await c.create(p + b"%04d" % i, b"v")
                    assert res.kv is not None
                    return res.kv.mod_revision
                except (Unavailable, DeadlineExceeded):
                    await asyncio.sleep(0.05)

        async def writer() -> None:
            for i in range(200):
                written.append(await write(i))
                if i == 60:
                    halfway.set()

        task = asyncio.create_task(writer())
        await halfway.wait()
        await asyncio.to_thread(etcd_own.restart_member, 0)
        written_before_back = len(written)
        await task
        got = await collect_until(watch, written[-1])
        await watch.cancel()
    assert 60 < written_before_back < 200, "the restart happened in the middle of the writes"
    assert got == written  # every write exactly once, in revision order
    assert got == list(range(start + 1, start + 201))


@pytest.mark.cluster
async def test_leader_killed_under_write_load(etcd_cluster3: EtcdCluster) -> None:
    cluster = etcd_cluster3
    p = b"/failover/"
    async with EtcdClient(cluster.endpoints, request_timeout=3, dial_timeout=3) as c:
        statuses = [await c.status(ep) for ep in cluster.endpoints]
        leader = next(i for i, s in enumerate(statuses) if s.member_id == s.leader)
        start = await c.put(b"/start", b"")
        watch = c.watch(p, prefix_end(p), start_revision=start + 1)
        await watch.created()
        acked: dict[bytes, int] = {}
        killed = asyncio.Event()

        async def writer() -> None:
            i = 0
            after_kill = 0
            while after_kill < 100:
                key = p + b"%05d" % i
                i += 1
                try:
                    acked[key] = await c.put(key, b"v")
                except (Unavailable, DeadlineExceeded):
                    await asyncio.sleep(0.02)  # unacknowledged: may or may not be applied
                    continue
                if i == 50:
                    await asyncio.to_thread(cluster.kill_member, leader)
                    killed.set()
                if killed.is_set():
                    after_kill += 1

        await writer()
        final = await c.list_prefix(p)
        got = await collect_until(watch, max(acked.values()))
        await watch.cancel()
        survivors = [s for i, s in enumerate(cluster.endpoints) if i != leader]
        new_leader = (await c.status(survivors[0])).leader
        assert (await c.status()).endpoint in survivors  # fails over like a read
        with pytest.raises(Unavailable):
            await c.status(cluster.endpoints[leader])  # that member, and only it: dead
    assert new_leader != statuses[leader].member_id
    # No acknowledged write lost.
    stored = {kv.key: kv.mod_revision for kv in final.kvs}
    assert all(stored.get(k) == rev for k, rev in acked.items())
    # The watch resumed without a gap or a duplicate: our writes are the only ones, so
    # every revision from the start to the last write appears exactly once, in order.
    assert got == list(range(start + 1, got[-1] + 1))
    assert set(acked.values()) <= set(got)
