"""ListFromCacheSnapshot over HTTP, a real server with its watch cache over a real etcd:
which page came from where (the ``X-Watchcache-Served-From`` header), and what each
page holds. Pages after the first are read from the cache's snapshot at the token's
revision (changes made meanwhile are not in them); ``resourceVersionMatch=Exact`` is
served from the cache while it holds that revision and from etcd otherwise (older than
the cache, or a snapshot expired); a revision etcd compacted is not served from the
cache either, so etcd's 410 answers it."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from etcdclient import EtcdClient
from lab.etcd import EtcdCluster
from storage.etcd3.feature import progress_requests_supported
from tests.integration.conftest import ServerFactory, create, pod_body

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
NS = "snap"
PODS = f"/api/v1/namespaces/{NS}/pods"


async def get(http: aiohttp.ClientSession, query: str, code: int = 200) -> tuple[JSON, str]:
    """A LIST of the namespace's pods: (the answer, where it was served from)."""
    async with http.get(f"{PODS}?{query}") as resp:
        data: JSON = await resp.json()
        assert resp.status == code, data
        return data, resp.headers.get("X-Watchcache-Served-From", "")


def names(lst: JSON) -> list[str]:
    return [item["metadata"]["name"] for item in lst["items"]]


def rv(obj: JSON) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def setup(http: aiohttp.ClientSession, count: int) -> list[JSON]:
    await create(http, "/api/v1/namespaces", {"metadata": {"name": NS}})
    return [await create(http, PODS, pod_body(f"p{i}")) for i in range(count)]


async def cache_reached(http: aiohttp.ClientSession, revision: int) -> None:
    """Wait until the pods' watch cache has seen ``revision`` (a LIST not older than it
    waits for that)."""
    async with http.get(f"{PODS}?resourceVersion={revision}") as resp:
        assert resp.status == 200, await resp.text()


async def all_pages(http: aiohttp.ClientSession, query: str) -> list[tuple[JSON, str]]:
    pages = [await get(http, query)]
    while token := pages[-1][0]["metadata"].get("continue"):
        pages.append(await get(http, f"limit=2&continue={token}"))
    return pages


async def test_continue_pages_come_from_the_snapshot_at_the_tokens_revision(
    server_factory: ServerFactory,
) -> None:
    srv = server_factory("--watch-cache=true")
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await setup(http, 5)
        first, where = await get(http, "limit=2")
        assert where == "etcd"  # RV unset: etcd (ConsistentListFromCache off, the default)
        assert names(first) == ["p0", "p1"] and first["metadata"]["remainingItemCount"] == 3
        listed_at = rv(first)
        # changes after page 1 must not show on the next pages
        async with http.delete(f"{PODS}/p2") as resp:
            assert resp.status == 200
        late = await create(http, PODS, pod_body("p9"))
        await cache_reached(http, rv(late))
        token = first["metadata"]["continue"]
        second, where = await get(http, f"limit=2&continue={token}")
        assert where == "cache"
        assert names(second) == ["p2", "p3"] and rv(second) == listed_at
        assert second["metadata"]["remainingItemCount"] == 1
        third, where = await get(http, f"limit=2&continue={second['metadata']['continue']}")
        assert (where, names(third), rv(third)) == ("cache", ["p4"], listed_at)
        assert "continue" not in third["metadata"]
        # etcd's answer for the same pages is the same (the uncached path, as reference)
        async with http.get(f"{PODS}?limit=2&continue={token}&resourceVersion=0") as resp:
            assert resp.headers["X-Watchcache-Served-From"] == "cache"  # RV 0: ignored
        # a listing that starts at a revision the cache reached: every page from it
        pages = await all_pages(http, f"limit=2&resourceVersion={rv(late)}")
        assert [w for _, w in pages] == ["cache", "cache", "cache"]
        assert [n for p, _ in pages for n in names(p)] == ["p0", "p1", "p3", "p4", "p9"]
        assert {rv(p) for p, _ in pages} == {rv(late)}  # legacy exact: at that revision


async def test_exact_from_the_cache_while_held_else_from_etcd(
    server_factory: ServerFactory, client: EtcdClient
) -> None:
    # a revision before the cache's first list (which is at this one or later)
    before_start = (await client.get(b"/")).revision - 1
    srv = server_factory("--watch-cache=true", "--watch-cache-snapshot-retention=1s")
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        p0, p1 = await setup(http, 2)
        await cache_reached(http, rv(p1))
        exact = "resourceVersionMatch=Exact&resourceVersion="
        now, where = await get(http, f"{exact}{rv(p1)}")
        assert (where, names(now), rv(now)) == ("cache", ["p0", "p1"], rv(p1))
        # older than the cache's first list: not held, etcd answers (nothing then)
        old, where = await get(http, f"{exact}{before_start}")
        assert (where, names(old)) == ("etcd", [])
        # p0's state was superseded by p1 over a second ago: the snapshot expired
        await asyncio.sleep(3)  # retention 1 s, checked on the cache's ticks (1 s)
        gone, where = await get(http, f"{exact}{rv(p0)}")
        assert (where, names(gone), rv(gone)) == ("etcd", ["p0"], rv(p0))
        # the current state is kept however old it is
        kept, where = await get(http, f"{exact}{rv(p1)}")
        assert (where, names(kept)) == ("cache", ["p0", "p1"])


async def test_a_compacted_revision_is_not_served_from_the_cache(
    server_factory: ServerFactory, etcd_own: EtcdCluster
) -> None:
    """The server's own compactor compacts every second to the revision it saw a second
    earlier; a page whose revision etcd compacted gets etcd's 410, with a fresh token."""
    srv = server_factory("--watch-cache=true", "--etcd-compaction-interval=1s", etcd=etcd_own)
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await setup(http, 3)
        last = await create(http, PODS, pod_body("p3"))
        await cache_reached(http, rv(last))
        first, where = await get(http, f"limit=2&resourceVersion={rv(last)}")
        assert where == "cache"
        newer = await create(http, PODS, pod_body("p4"))  # a revision to compact up to
        token = first["metadata"]["continue"]
        status: JSON = {}
        for _ in range(300):  # until the compactor passed the listing's revision (<= 30 s)
            async with http.get(f"{PODS}?limit=2&continue={token}") as resp:
                status = await resp.json()
                if resp.status == 410:
                    break
                assert resp.status == 200 and resp.headers["X-Watchcache-Served-From"] == "cache"
            await asyncio.sleep(0.1)
        assert status["reason"] == "Expired", status
        assert status["message"].startswith(
            "The provided continue parameter is too old to display a consistent list result"
        )
        exact, where = await get(
            http, f"resourceVersionMatch=Exact&resourceVersion={rv(last)}", 410
        )
        assert exact["message"] == "The resourceVersion for the provided list is too old."
        resumed, _ = await get(http, f"limit=10&continue={status['metadata']['continue']}")
        assert names(resumed) == ["p2", "p3", "p4"] and rv(resumed) >= rv(newer)


async def test_with_consistent_reads_paged_lists_never_read_etcd(
    server_factory: ServerFactory, etcd: EtcdCluster
) -> None:
    """kubectl's paged LIST (RV unset, limit): with ConsistentListFromCache every page
    comes from the cache (the first once it reached etcd's revision; on an etcd without
    usable progress notifications the first may fall back to etcd)."""
    srv = server_factory("--watch-cache=true", "--feature-gates=ConsistentListFromCache=true")
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        created = await setup(http, 5)
        await cache_reached(http, rv(created[-1]))
        first, where = await get(http, "limit=2")
        if progress_requests_supported(etcd.version):
            assert where == "cache"
        # else: the cache if it happens to be at etcd's revision already, else etcd
        # a write after page 1 takes the cache past the listing's revision (etcd's, which
        # other resources' writes may have moved past this resource's last event)
        late = await create(http, PODS, pod_body("p9"))
        await cache_reached(http, rv(late))
        token = first["metadata"]["continue"]
        pages = [(first, where)] + await all_pages_from(http, token)
        assert [w for _, w in pages[1:]] == ["cache", "cache"]
        assert [n for p, _ in pages for n in names(p)] == [f"p{i}" for i in range(5)]
        assert len({rv(p) for p, _ in pages}) == 1


async def all_pages_from(http: aiohttp.ClientSession, token: str) -> list[tuple[JSON, str]]:
    pages = [await get(http, f"limit=2&continue={token}")]
    while token := pages[-1][0]["metadata"].get("continue"):
        pages.append(await get(http, f"limit=2&continue={token}"))
    return pages
