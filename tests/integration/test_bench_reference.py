"""``watchcache bench --reference``, against a second watchcache standing in for a
kube-apiserver (reached through a kubeconfig): a short
run yields every scenario on both servers with ratios, the small requests go through
the native load generator (wrk, fetched from Debian into the cache when not on PATH) to
the reference and to a watchcache of each ``--workers`` value, the outputs are written,
and the reference is left as it was (the bench namespace is gone)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from lab.bench_reference import (
    Endpoint,
    ReferenceConfig,
    _seed,
    _time,
    reference_endpoint,
    run_reference,
)
from lab.bench_reference_load import FLOOR
from lab.etcd import EtcdCluster
from lab.kubeconfig import write_kubeconfig
from tests.integration.conftest import ServerFactory

pytestmark = pytest.mark.etcd


async def _namespaces(url: str) -> list[str]:
    async with aiohttp.ClientSession() as s, s.get(f"{url}/api/v1/namespaces") as r:
        return [n["metadata"]["name"] for n in (await r.json())["items"]]


# four servers, seeding, every read, wrk on each: a minute of benchmark runs
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_short_reference_run_against_a_second_watchcache(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    reference = server_factory("--watch-cache=true")
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", reference.url)
    cfg = ReferenceConfig(reference="", kubeconfig=kubeconfig, reference_pid=reference.pid,
                          pods=12, nodes=3, runs=1, warmup=0, connections=2, load_seconds=1,
                          load_rounds=1, workers=(1, 2), watchers=2, writes=2,
                          out=tmp_path / "out", quiet=True)  # fmt: skip
    result = run_reference(cfg)

    names = {row["name"] for row in result["reads"]}
    assert {"list_cache", "list_etcd", "table_cache", "table_etcd", "list_cache_gzip",
            "table_gzip_kubectl", "get_etcd", "get_cache"} <= names  # fmt: skip
    for row in result["reads"]:
        assert row["ratio"] > 0 and row["reference"]["bytes"] > 0
    list_bytes = next(r for r in result["reads"] if r["name"] == "list_cache")
    # the same pods: only resourceVersions (each server's etcd has its own revision count)
    # and timestamps may differ in length
    ours, theirs = list_bytes["watchcache"]["bytes"], list_bytes["reference"]["bytes"]
    assert abs(ours - theirs) <= 0.02 * ours
    for side in ("watchcache", "reference"):
        assert result["fanout"][side]["events"] == 4  # 2 watchers x 2 writes, all seen
    native = {row["name"]: row for row in result["native_load"]["scenarios"]}
    assert set(native) == {"get_cache_c1", "get_etcd_c1", "get_cache_c2"}
    for row in native.values():
        servers = row["servers"]
        assert set(servers) == {"reference", "watchcache --workers 1", "watchcache --workers 2",
                                FLOOR}
        for figures in servers.values():
            # every request answered 200 (wrk counts any other status as an error), and
            # the server's CPU was found (a --workers supervisor's is its workers')
            assert figures["requests"] > 0 and figures["errors"] == 0
            assert figures["server_cpu_ms_per_request"] > 0
        assert set(row["ratios"]) == {"watchcache --workers 1", "watchcache --workers 2", FLOOR}
        # the floor is aiohttp alone: it answers faster than a whole API server
        floor, own = servers[FLOOR], servers["watchcache --workers 1"]
        assert floor["server_cpu_ms_per_request"] < own["server_cpu_ms_per_request"]
    assert result["load"] == {}  # the Python client's load only without wrk
    memory = result["memory"]
    assert memory["reference_rss"] and memory["watchcache_rss_after_restart"]
    assert memory["cache_after_writes"]["json_bytes"] == memory["json_bytes"]  # the 12 pods
    for filled in ("cache_after_writes", "cache_after_reads", "cache_after_restart"):
        # (the fan-out's label patches made one pod a little larger after the writes)
        assert memory[filled]["held_bytes"] > memory[filled]["json_bytes"] >= memory["json_bytes"]
    assert result["meta"]["reference_version"]["gitVersion"]
    assert result["meta"]["etcd"].count(".") == 2  # which etcd the figures used
    # the watchcaches ran on the image's loop (uvloop: the suite installs it) and say so
    assert result["meta"]["event_loop"] == "uvloop"
    assert "on the uvloop event loop" in (tmp_path / "out" / "reference.md").read_text()
    for name in ("reference.json", "reference.md", "reference-reads.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0
    # the reference is left as it was
    assert result["meta"]["namespace"] not in asyncio.run(_namespaces(reference.url))


def test_the_kubeconfig_gives_server_token_and_tls(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: a\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443/', "
        "insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: secret}}]\n"
        "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
    )
    ep = reference_endpoint("", path, tmp_path)
    assert ep.url == "https://127.0.0.1:6443"
    assert ep.headers == {"Authorization": "Bearer secret"}
    assert not isinstance(ep.ssl, bool) and not ep.ssl.check_hostname
    assert reference_endpoint("http://other:8080", path, tmp_path).url == "http://other:8080"


def test_a_paged_read_follows_every_continue_token(server_factory: ServerFactory) -> None:
    """table_gzip_kubectl pages as kubectl does: the timed read is every page, not the
    first (12 pods in pages of 5: three pages, the last of 2)."""
    server = server_factory("--watch-cache=true")
    ep = Endpoint("watchcache", server.url)
    asyncio.run(_seed(ep, "paged", ReferenceConfig(reference="", pods=12, nodes=3), None))
    pods = f"{server.url}/api/v1/namespaces/paged/pods?limit=5"

    async def go() -> tuple[int, int]:
        async with aiohttp.ClientSession() as s:
            async with s.get(pods) as r:
                first = len(await r.read())
            _, walked = await _time(s, pods, {"Accept-Encoding": "identity"})
        return first, walked

    first, walked = asyncio.run(go())
    assert walked > 2 * first  # 5 + 5 + 2 pods, not the first page's 5 alone


def test_pods_seeded_through_etcd_are_in_the_watch_cache_when_seeding_returns(
    server_factory: ServerFactory, etcd: EtcdCluster
) -> None:
    """``--seed-via etcd`` (the 100,000-pod side-by-side run): the pods are put into the
    server's etcd as kube-apiserver stores them, and seeding returns only once the
    server's watch cache holds them all — an RV=0 LIST right after counts every one."""
    server = server_factory("--watch-cache=true")
    ep = Endpoint("watchcache", server.url)
    cfg = ReferenceConfig(reference="", pods=300, nodes=3, seed_via="etcd")
    asyncio.run(_seed(ep, "direct", cfg, etcd.endpoints, server.prefix))

    async def cached() -> list[str]:
        url = f"{server.url}/api/v1/namespaces/direct/pods?resourceVersion=0"
        async with aiohttp.ClientSession() as s, s.get(url) as r:
            return [p["metadata"]["uid"] for p in (await r.json())["items"]]

    uids = asyncio.run(cached())
    assert len(uids) == 300 and all(uids)  # uids as a create gives them
