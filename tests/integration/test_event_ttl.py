"""``--event-ttl``: Events are written under an etcd lease, so etcd deletes them that long
after their last write (kube-apiserver's events TTLFunc and etcd3 lease manager); no other
resource is."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from etcdclient import EtcdClient
from storage.etcd3.lease_manager import LeaseManager
from tests.integration.conftest import JSON, ServerFactory, create

TTL = 3


def _event(name: str, ns: str) -> JSON:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
            "reason": "Started", "message": "Started container c", "type": "Normal",
            "count": 1}  # fmt: skip


async def test_events_expire_with_their_lease_and_nothing_else_does(
    server_factory: ServerFactory, client: EtcdClient
) -> None:
    server = server_factory(f"--event-ttl={TTL}s")
    prefix = server.prefix
    async with aiohttp.ClientSession(base_url=server.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "ttl"}})
        await create(http, "/api/v1/namespaces/ttl/events", _event("a", "ttl"))
        await create(http, "/api/v1/namespaces/ttl/events", _event("b", "ttl"))
        await create(http, "/api/v1/namespaces/ttl/configmaps", {"metadata": {"name": "cm"}})
        a = (await client.get(f"{prefix}/events/ttl/a".encode())).kv
        b = (await client.get(f"{prefix}/events/ttl/b".encode())).kv
        cm = (await client.get(f"{prefix}/configmaps/ttl/cm".encode())).kv
        assert a is not None and b is not None and cm is not None
        assert a.lease != 0 and b.lease != 0
        assert cm.lease == 0
        # an update is a write too: it goes under a current lease (an etcd put without
        # one would detach the key and keep the Event for ever)
        await asyncio.sleep(TTL / 2)
        async with http.patch("/api/v1/namespaces/ttl/events/a", json={"count": 2},
                              headers={"Content-Type": "application/merge-patch+json"}) as r:
            assert r.status == 200, await r.text()
        updated = time.monotonic()
        a2 = (await client.get(f"{prefix}/events/ttl/a".encode())).kv
        assert a2 is not None and a2.lease != 0 and a2.lease != a.lease
        deadline = time.monotonic() + TTL + 5
        while (await client.get(f"{prefix}/events/ttl/b".encode())).kv is not None:
            assert time.monotonic() < deadline, "event b outlived its TTL"
            await asyncio.sleep(0.2)
        assert (await client.get(f"{prefix}/events/ttl/a".encode())).kv is not None
        while (await client.get(f"{prefix}/events/ttl/a".encode())).kv is not None:
            assert time.monotonic() < deadline + TTL, "event a outlived its TTL"
            await asyncio.sleep(0.2)
        assert time.monotonic() - updated >= TTL - 1  # counted from its last write
        async with http.get("/api/v1/namespaces/ttl/events/a") as r:
            assert r.status == 404
        assert (await client.get(f"{prefix}/configmaps/ttl/cm".encode())).kv is not None


async def test_the_lease_manager_shares_a_lease_within_its_reuse_window(
    client: EtcdClient,
) -> None:
    """A TTL of 1 h grants 1 h + 60 s and hands it out until it would outlive a new
    write's TTL by more than the 60 s (upstream's 5 %, at most 60 s); a 3 s TTL has no
    reuse window, every write gets its own lease."""
    leases = LeaseManager(client)
    first = await leases.get_lease(3600)
    assert await leases.get_lease(3600) == first
    assert LeaseManager.reuse_seconds(3600) == 60 and LeaseManager.reuse_seconds(3) == 0
    short = LeaseManager(client)
    assert await short.get_lease(3) != await short.get_lease(3)
