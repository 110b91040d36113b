"""/readyz names a watch cache that restarts after an unexpected error in its tasks, in
process over a real etcd (the fault is injected into the pods cache's attrs function)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import aiohttp
import pytest
from aiohttp import web

import cacher.cacher as cacher_module
from etcdclient import EtcdClient
from lab.etcd import EtcdCluster, free_port
from proxy.app.server import build_app
from proxy.registry.storage_factory import StorageContext
from proxy.server.context import API_CONTEXT
from proxy.server.settings import load_settings
from storage.interfaces import JSONObject, ListOptions
from tests.integration.conftest import create, pod_body

pytestmark = pytest.mark.etcd


def exploding(obj: JSONObject) -> tuple[Mapping[str, str], Mapping[str, str]]:
    raise RuntimeError("a bug in attrs")


async def test_readyz_names_a_restarting_watch_cache(
    etcd: EtcdCluster, etcd_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the dead cache went unnoticed (readyz 200, no check names it)."""
    monkeypatch.setattr(cacher_module, "RESTART_BACKOFF_INITIAL", 0.05)
    settings = load_settings(
        [f"--etcd-servers={','.join(etcd.endpoints)}", f"--etcd-prefix={etcd_prefix}"]
    )
    async with EtcdClient(list(etcd.endpoints)) as client:
        app = build_app(settings, StorageContext(settings=settings, client=client))
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            ctx = app[API_CONTEXT]
            pods = ctx.registry.lookup("", "pods")
            assert pods is not None
            delegator = ctx.storages.for_resource(pods).store
            assert await delegator.cacher.wait_ready(15)  # type: ignore[attr-defined]
            async with aiohttp.ClientSession(base_url=f"http://127.0.0.1:{port}") as http:
                async with http.get("/readyz?verbose") as resp:
                    assert "[+]watch-cache ok" in await resp.text()
                cacher = delegator.cacher  # type: ignore[attr-defined]
                watch = await delegator.watch(
                    cacher.resource_prefix, ListOptions(str(cacher.resource_version))
                )
                cacher.cache._attrs._attrs = exploding
                await create(http, "/api/v1/namespaces/default/pods", pod_body("p"))
                async with asyncio.timeout(10):  # the restart closes every watcher
                    assert [e async for e in watch] == []
                async with http.get("/readyz?verbose") as resp:
                    text = await resp.text()
                    assert resp.status == 500
                assert (
                    "[-]watch-cache failed: watch cache of pods is restarting after "
                    "reflector failed: RuntimeError: a bug in attrs\n"
                ) in text
                async with http.get("/readyz/watch-cache") as resp:
                    assert resp.status == 500
        finally:
            await runner.cleanup()
