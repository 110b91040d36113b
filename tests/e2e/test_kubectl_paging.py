"""The real kubectl's paged LIST (``--chunk-size``: RV unset, ``limit``, then ``continue``)
against a server with ``ConsistentListFromCache``: the pages after the first come from
the watch cache's snapshot, and on an etcd that answers progress requests the first too,
so the listing reads no list from etcd (kube-apiserver 1.34+ with its default gates).
Counted by the server's own metrics: ``apiserver_storage_list_total`` (etcd) against
``apiserver_cache_list_total`` (the cache)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from lab.etcd import EtcdCluster
from lab.metrics import scrape
from storage.etcd3.feature import progress_requests_supported
from tests.e2e.conftest import KUBECTL, write_kubeconfig
from tests.integration.conftest import JSON, create, pod_body, start_server

pytestmark = pytest.mark.etcd

PODS = "/api/v1/namespaces/paging/pods"


async def test_kubectl_chunked_get_reads_pages_from_the_cache(
    etcd: EtcdCluster, tmp_path: Path
) -> None:
    flags = ("--watch-cache=true", "--feature-gates=ConsistentListFromCache=true")
    with start_server(etcd.endpoints, None, *flags) as srv:
        await _chunked_get(srv.url, etcd, write_kubeconfig(tmp_path / "kubeconfig", srv.url))


async def _chunked_get(url: str, etcd: EtcdCluster, kubeconfig: Path) -> None:
    async with aiohttp.ClientSession() as http:
        await create(http, f"{url}/api/v1/namespaces", {"metadata": {"name": "paging"}})
        last: JSON = {}
        for i in range(7):
            last = await create(http, url + PODS, pod_body(f"p{i}"))
        rv = last["metadata"]["resourceVersion"]
        async with http.get(f"{url}{PODS}?resourceVersion={rv}") as r:
            assert r.status == 200  # the cache has every pod
        before = await scrape(http, url)
        proc = await asyncio.create_subprocess_exec(
            str(KUBECTL), f"--kubeconfig={kubeconfig}", "get", "pods", "-n", "paging",
            "--chunk-size=2", "-o", "name",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, err
        assert out.decode().split() == [f"pod/p{i}" for i in range(7)]
        after = await scrape(http, url)
    from_etcd = after.since(before, "apiserver_storage_list_total", resource="pods")
    from_cache = after.since(before, "apiserver_cache_list_total", resource="pods")
    assert from_cache >= 3  # pages 2..4 (7 pods, 2 a page) from the snapshot
    # the first page: from the cache when etcd can prove it fresh; else it may go to etcd
    assert from_etcd == 0 if progress_requests_supported(etcd.version) else from_etcd <= 1
    assert from_cache + from_etcd == 4
