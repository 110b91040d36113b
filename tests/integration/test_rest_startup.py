"""Start-up as kube-apiserver: every served resource's watch cache is built when the
server starts (an RV=0 LIST right after /readyz is served from memory, no warm-up
request), and the server owns the etcd compactor whatever ``--watch-cache`` says."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from etcdclient import EtcdClient
from etcdclient.errors import Compacted
from lab.etcd import EtcdCluster
from tests.integration.conftest import ServerFactory, create, pod_body

pytestmark = pytest.mark.etcd


async def test_rv0_list_right_after_readyz_is_served_from_cache(
    server_factory: ServerFactory,
) -> None:
    first = server_factory()
    async with aiohttp.ClientSession(base_url=first.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "warm"}})
        await create(http, "/api/v1/namespaces/warm/pods", pod_body("p0"))
    first.stop()
    # a new server on the same prefix: its first request of all is the RV=0 LIST
    second = server_factory(prefix=first.prefix)
    async with aiohttp.ClientSession(base_url=second.url) as http:
        for path, expected in (
            ("/api/v1/pods?resourceVersion=0", ["p0"]),
            ("/apis/apps/v1/deployments?resourceVersion=0", []),
            ("/api/v1/podtemplates?resourceVersion=0", []),
        ):
            async with http.get(path) as resp:
                assert resp.status == 200, path
                assert resp.headers["X-Watchcache-Served-From"] == "cache", path
                body = await resp.json()
            assert [i["metadata"]["name"] for i in body["items"]] == expected
        async with http.get("/readyz?verbose") as resp:
            assert "[+]poststarthook/storage-readiness ok" in await resp.text()


async def _wait_compacted(client: EtcdClient, revision: int, deadline: float) -> None:
    while True:
        try:
            await client.get(b"/any", revision=revision)
        except Compacted:
            return
        assert time.monotonic() < deadline, "etcd was never compacted"
        await asyncio.sleep(0.1)  # compaction is etcd's, there is no event to await


@pytest.mark.parametrize("watch_cache", ["true", "false"])
async def test_compactor_runs_with_and_without_watch_cache(
    server_factory: ServerFactory, etcd_own: EtcdCluster, watch_cache: str
) -> None:
    started = time.monotonic()
    srv = server_factory(
        f"--watch-cache={watch_cache}", "--etcd-compaction-interval=1s", etcd=etcd_own
    )
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "c"}})
        written = await create(http, "/api/v1/namespaces/c/pods", pod_body("p0"))
    revision = int(written["metadata"]["resourceVersion"])
    async with EtcdClient(list(etcd_own.endpoints)) as client:
        await _wait_compacted(client, revision, time.monotonic() + 20)
        key = await client.get(b"compact_rev_key")
        elapsed = time.monotonic() - started
    assert key.kv is not None
    # one compactor per etcd client: at most one round (one write of the key) a second
    assert key.kv.version <= int(elapsed) + 1
    assert "etcd compaction failed" not in srv.log()


@pytest.mark.parametrize("watch_cache", ["true", "false"])
async def test_one_compactor_per_client_owned_by_the_storage_context(
    etcd: EtcdCluster, watch_cache: str
) -> None:
    """In process: after start-up every resource has its storage, and the storage
    context owns the client's one compactor (running), stopped at shutdown."""
    from aiohttp import web

    from proxy.app.server import build_app
    from proxy.kube.resources import REVIEW_GROUPS
    from proxy.registry.storage_factory import StorageContext
    from proxy.server.context import API_CONTEXT
    from proxy.server.settings import load_settings

    settings = load_settings(
        [
            f"--etcd-servers={','.join(etcd.endpoints)}",
            f"--etcd-prefix=/t-compactor-{watch_cache}/registry",
            f"--watch-cache={watch_cache}",
            "--system-namespaces=false",
        ]
    )
    async with EtcdClient(list(etcd.endpoints)) as client:
        storage_ctx = StorageContext(settings=settings, client=client)
        app = build_app(settings, storage_ctx)
        runner = web.AppRunner(app)
        await runner.setup()
        try:
            ctx = app[API_CONTEXT]
            # the review APIs (served with the default secure port) and the virtual
            # resources (bindings, componentstatuses) are never stored
            served = [r for r in ctx.registry if r.has_storage]
            assert all(r.group not in REVIEW_GROUPS for r in served)
            assert len(ctx.storages._by_resource) == len(served)
            compactor = storage_ctx.compactor
            assert compactor is not None and compactor.running
            cached = sum(getattr(rs.store, "cacher", None) is not None
                         for rs in ctx.storages._by_resource.values())  # fmt: skip
            assert cached == (len(served) if watch_cache == "true" else 0)
        finally:
            await runner.cleanup()
        assert storage_ctx.compactor is None and not compactor.running  # stopped at shutdown
