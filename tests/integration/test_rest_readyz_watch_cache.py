"""/readyz names a watch cache that restarts after an unexpected error in its tasks, in
process over a real etcd (the fault is injected into the pods cache's attrs function)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import aiohttp
import pytest

import cacher.cacher as cacher_module
from lab.etcd import EtcdCluster
from proxy.endpoints.context import API_CONTEXT
from proxy.options.settings import load_settings
from storage.interfaces import JSONObject, ListOptions
from tests.integration.conftest import create, pod_body
from tests.integration.in_process import in_process_server, wait_ready

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
    async with in_process_server(settings) as server:
        ctx = server.app[API_CONTEXT]
        pods = ctx.registry.lookup("", "pods")
        assert pods is not None
        delegator = ctx.storages.for_resource(pods).store
        assert await delegator.cacher.wait_ready(15)  # type: ignore[attr-defined]
        async with aiohttp.ClientSession(base_url=server.url) as http:
            await wait_ready(http)  # the default namespace exists
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
