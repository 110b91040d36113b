"""The real kubectl's paged LIST (``--chunk-size``: RV unset, ``limit``, then ``continue``)
against a server with ``ConsistentListFromCache`` reads no list from etcd (kube-apiserver
1.34+ with its default gates): the first page is a consistent read the cache serves once
it is at etcd's revision (made so by a progress request where etcd answers them), the
pages after it come from the cache's snapshot at that revision. Counted by the server's
own metrics: ``apiserver_storage_list_total`` (etcd) against ``apiserver_cache_list_total``
(the cache)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from etcdclient.client import EtcdClient
from lab.etcd import EtcdCluster
from lab.metrics import scrape
from storage.etcd3.feature import progress_requests_supported
from tests.e2e.conftest import KUBECTL, write_kubeconfig
from tests.integration.conftest import create, pod_body, start_server

pytestmark = pytest.mark.etcd

PODS = "/api/v1/namespaces/paging/pods"
ATTEMPTS = 5


async def test_kubectl_chunked_get_reads_pages_from_the_cache(
    etcd: EtcdCluster, tmp_path: Path
) -> None:
    flags = ("--watch-cache=true", "--feature-gates=ConsistentListFromCache=true")
    with start_server(etcd.endpoints, None, *flags) as srv:
        await _chunked_get(srv.url, etcd, write_kubeconfig(tmp_path / "kubeconfig", srv.url))


async def _chunked_get(url: str, etcd: EtcdCluster, kubeconfig: Path) -> None:
    async with aiohttp.ClientSession() as http, EtcdClient(etcd.endpoints) as client:
        await create(http, f"{url}/api/v1/namespaces", {"metadata": {"name": "paging"}})
        for i in range(7):
            await create(http, url + PODS, pod_body(f"p{i}"))
        for attempt in range(ATTEMPTS):
            rv = await _touch(http, url, attempt)
            before = await scrape(http, url)
            revisions = [(await client.status()).revision]
            proc = await asyncio.create_subprocess_exec(
                str(KUBECTL), f"--kubeconfig={kubeconfig}", "get", "pods", "-n", "paging",
                "--chunk-size=2", "-o", "name",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            out, err = await asyncio.wait_for(proc.communicate(), 60)
            assert proc.returncode == 0, err
            assert out.decode().split() == [f"pod/p{i}" for i in range(7)]
            revisions.append((await client.status()).revision)
            after = await scrape(http, url)
            # On an etcd without progress requests the cache can prove itself current only
            # while etcd's revision is the pods' own: any other write in between (this
            # server's own controllers, e.g. APF's FlowSchema status) sends every page to
            # etcd, as upstream's delegator does. Such a run tells nothing: run again.
            if progress_requests_supported(etcd.version) or revisions == [rv, rv]:
                break
        else:
            pytest.fail(f"etcd was written to during each of {ATTEMPTS} kubectl runs")
    from_etcd = after.since(before, "apiserver_storage_list_total", resource="pods")
    from_cache = after.since(before, "apiserver_cache_list_total", resource="pods")
    # the first page is a consistent read the cache serves once it is at etcd's revision
    # (or made so by a progress request); pages 2..4 come from its snapshot at that revision
    assert (from_cache, from_etcd) == (4, 0)


async def _touch(http: aiohttp.ClientSession, url: str, attempt: int) -> int:
    """Write a pod (the pods' cache then sits at etcd's newest revision, which is this
    write's, once it saw it) and wait until the cache has it; its resourceVersion."""
    patch = {"metadata": {"labels": {"attempt": str(attempt)}}}
    headers = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{url}{PODS}/p6", json=patch, headers=headers) as r:
        assert r.status == 200, await r.text()
        rv = int((await r.json())["metadata"]["resourceVersion"])
    async with http.get(f"{url}{PODS}?resourceVersion={rv}") as r:
        assert r.status == 200  # the cache has every pod, at rv or later
    return rv
