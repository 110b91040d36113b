"""A DELETE reads etcd once, as kube-apiserver's ``Store.Delete``: it decides on the object
its read returned and removes it from the watch cache's copy, guarded by etcd's
compare-and-swap. The decision holds only while etcd still has the version it was made
on: an object changed between the read and the delete (here a finalizer added by another
writer) is decided again on its current state. In process over a real etcd."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from lab.etcd import EtcdCluster
from proxy.endpoints.context import API_CONTEXT
from proxy.options.settings import load_settings
from storage.interfaces import GetOptions, StoredObject
from tests.integration.conftest import create
from tests.integration.in_process import InProcessServer, in_process_server, wait_ready

pytestmark = pytest.mark.etcd

CMS = "/api/v1/namespaces/default/configmaps"


async def _etcd_requests(http: aiohttp.ClientSession, operation: str) -> float:
    """How many etcd requests of ``operation`` the server made for ConfigMaps so far."""
    async with http.get("/metrics") as resp:
        text = await resp.text()
    wanted = f'operation="{operation}",resource="configmaps"'
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("etcd_request_duration_seconds_count") and wanted in line)


async def _cached(http: aiohttp.ClientSession, name: str, rv: str) -> None:
    """Until the watch cache holds ``name`` at ``rv`` (a read not older than it waits)."""
    query = f"resourceVersion={rv}&resourceVersionMatch=NotOlderThan"
    async with http.get(f"{CMS}?{query}&fieldSelector=metadata.name%3D{name}") as resp:
        assert resp.status == 200


@contextlib.asynccontextmanager
async def _serving(
    etcd: EtcdCluster, etcd_prefix: str
) -> AsyncIterator[tuple[InProcessServer, aiohttp.ClientSession]]:
    """A server in this process on ``etcd``, ready, and a client of it."""
    settings = load_settings(
        [f"--etcd-servers={','.join(etcd.endpoints)}", f"--etcd-prefix={etcd_prefix}"]
    )
    async with in_process_server(settings) as server, aiohttp.ClientSession(
        base_url=server.url
    ) as http:
        await wait_ready(http)
        yield server, http


async def test_a_delete_nothing_keeps_reads_etcd_once(
    etcd: EtcdCluster, etcd_prefix: str
) -> None:
    async with _serving(etcd, etcd_prefix) as (_, http):
        made = await create(http, CMS, {"metadata": {"name": "once"}, "data": {"a": "b"}})
        await _cached(http, "once", made["metadata"]["resourceVersion"])
        gets, deletes = await _etcd_requests(http, "get"), await _etcd_requests(http, "delete")
        async with http.delete(f"{CMS}/once") as resp:
            body = await resp.json()
            assert resp.status == 200, body
        assert body["metadata"]["name"] == "once"
        assert await _etcd_requests(http, "get") - gets == 1  # upstream's Get, no other
        assert await _etcd_requests(http, "delete") - deletes == 1
        async with http.get(f"{CMS}/once") as resp:
            assert resp.status == 404


async def test_an_object_given_a_finalizer_after_the_delete_read_it_is_kept(
    etcd: EtcdCluster, etcd_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _serving(etcd, etcd_prefix) as (server, http):
        made = await create(http, CMS, {"metadata": {"name": "raced"}})
        await _cached(http, "raced", made["metadata"]["resourceVersion"])
        ctx = server.app[API_CONTEXT]
        configmaps = ctx.registry.lookup("", "configmaps")
        assert configmaps is not None
        storage = ctx.storages.for_resource(configmaps).store
        real_get = storage.get

        async def hold(obj: dict[str, Any]) -> dict[str, Any]:
            obj["metadata"]["finalizers"] = ["example.com/hold"]
            return obj

        async def another_writer_after_the_read(key: str, opts: GetOptions) -> StoredObject:
            read = await real_get(key, opts)
            if key.endswith("/raced"):  # the DELETE's read, then another client's update
                monkeypatch.setattr(storage, "get", real_get)
                await storage.guaranteed_update(key, None, hold)
            return read

        monkeypatch.setattr(storage, "get", another_writer_after_the_read)
        async with http.delete(f"{CMS}/raced") as resp:
            body = await resp.json()
            assert resp.status == 200, body
        # decided again on etcd's current state: kept by the finalizer, marked deleted
        assert body["metadata"]["finalizers"] == ["example.com/hold"]
        assert body["metadata"].get("deletionTimestamp")
        async with http.get(f"{CMS}/raced") as resp:
            kept = await resp.json()
            assert resp.status == 200, kept
        assert kept["metadata"]["finalizers"] == ["example.com/hold"]
