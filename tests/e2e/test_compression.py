"""Response compression (APIResponseCompression) as each real client meets it: kubectl,
the official Python client (urllib3), curl --compressed and aiohttp decode the gzip
LISTs (from the cache and from etcd, JSON and Table) and the big GETs; small bodies
and watches go uncompressed."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import aiohttp
import orjson
import pytest
import urllib3
from kubernetes import client

from lab import seed
from tests.e2e.conftest import KUBECTL
from tests.integration.conftest import ServerProcess

pytestmark = pytest.mark.etcd

NS = "gz"
PODS = 120  # ~480 KB of JSON, ~170 KB as a Table: over the 128 KiB threshold
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
BIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": NS},
       "data": {f"k{i}": "value " * 50 for i in range(600)}}  # fmt: skip


async def _seed(url: str) -> None:
    async with aiohttp.ClientSession(base_url=url) as s:
        await s.post("/api/v1/namespaces", json={"metadata": {"name": NS}})
        for i in range(PODS):
            pod = seed.pod(i, 5, 1)
            pod["metadata"]["namespace"] = NS
            for key in ("resourceVersion", "uid", "creationTimestamp"):
                pod["metadata"].pop(key, None)
            async with s.post(f"/api/v1/namespaces/{NS}/pods", json=pod) as r:
                assert r.status == 201, await r.text()
        async with s.post(f"/api/v1/namespaces/{NS}/configmaps", json=BIG) as r:
            assert r.status == 201, await r.text()
            last = await r.json()
        # the watch cache has seen every write before a test reads at resourceVersion=0
        # (a GET at the last write's resourceVersion waits for it)
        name, rv = last["metadata"]["name"], last["metadata"]["resourceVersion"]
        async with s.get(f"/api/v1/namespaces/{NS}/configmaps/{name}?resourceVersion={rv}") as r:
            assert r.status == 200, await r.text()


@pytest.fixture(scope="module")
def seeded(e2e_server: ServerProcess) -> Iterator[ServerProcess]:
    asyncio.run(_seed(e2e_server.url))
    yield e2e_server


def _raw(url: str, accept_encoding: str | None, accept: str = "application/json"
         ) -> tuple[dict[str, str], bytes]:  # fmt: skip
    headers = {"Accept": accept}
    if accept_encoding is not None:
        headers["Accept-Encoding"] = accept_encoding
    r = urllib3.request("GET", url, headers=headers, decode_content=False, preload_content=True)
    assert r.status == 200, r.data[:300]
    return dict(r.headers), r.data


def _names(doc: dict[str, object]) -> list[str]:
    items = doc.get("items") or doc.get("rows") or []
    assert isinstance(items, list)
    return sorted(str((i.get("metadata") or i["object"]["metadata"])["name"]) for i in items)


@pytest.mark.parametrize("rv", ["0", ""])
@pytest.mark.parametrize("accept", ["application/json", TABLE])
def test_big_lists_are_gzip_and_decode_to_the_plain_body(
    seeded: ServerProcess, rv: str, accept: str
) -> None:
    url = f"{seeded.url}/api/v1/namespaces/{NS}/pods?resourceVersion={rv}"
    headers, body = _raw(url, "gzip, deflate", accept)
    assert headers.get("Content-Encoding") == "gzip"
    assert "Accept-Encoding" in headers.get("Vary", "")
    assert len(body) < 0.3 * len(gzip.decompress(body))
    _, plain = _raw(url, None, accept)
    assert _names(json.loads(gzip.decompress(body))) == _names(json.loads(plain))
    assert len(_names(json.loads(plain))) == PODS


def test_small_bodies_watches_and_other_encodings_go_plain(seeded: ServerProcess) -> None:
    url = f"{seeded.url}/api/v1/namespaces/{NS}/pods"
    headers, body = _raw(f"{url}?limit=2", "gzip")
    assert "Content-Encoding" not in headers and json.loads(body)["items"]
    headers, _ = _raw(f"{url}?resourceVersion=0", "deflate")
    assert "Content-Encoding" not in headers
    r = urllib3.request("GET", f"{url}?watch=1&timeoutSeconds=1&resourceVersion=0",
                        headers={"Accept-Encoding": "gzip"}, decode_content=False)  # fmt: skip
    assert "Content-Encoding" not in r.headers and r.data.count(b'"ADDED"') == PODS + 0


def test_a_big_object_is_gzip(seeded: ServerProcess) -> None:
    headers, body = _raw(f"{seeded.url}/api/v1/namespaces/{NS}/configmaps/big", "gzip")
    assert headers.get("Content-Encoding") == "gzip"
    assert json.loads(gzip.decompress(body))["data"] == BIG["data"]


def test_aiohttp_decodes(seeded: ServerProcess) -> None:
    async def go() -> tuple[str | None, list[str]]:
        url = f"{seeded.url}/api/v1/pods?resourceVersion=0"
        # aiohttp sends Accept-Encoding: gzip, deflate and inflates the body
        async with aiohttp.ClientSession() as s, s.get(url) as r:
            return r.headers.get("Content-Encoding"), _names(orjson.loads(await r.read()))

    encoding, names = asyncio.run(go())
    assert encoding == "gzip" and len(names) == PODS


def test_the_official_python_client_decodes(seeded: ServerProcess) -> None:
    config = client.Configuration(host=seeded.url)
    with client.ApiClient(config) as api:
        api.default_headers["Accept-Encoding"] = "gzip"  # urllib3 inflates it
        core = client.CoreV1Api(api)
        pods = core.list_namespaced_pod(NS, resource_version="0")
        assert len(pods.items) == PODS
        raw = cast(urllib3.HTTPResponse, core.list_namespaced_pod(NS, _preload_content=False))
        assert raw.headers.get("Content-Encoding") == "gzip"
        assert core.read_namespaced_config_map("big", NS).data == BIG["data"]


def test_curl_compressed_decodes(seeded: ServerProcess, tmp_path: Path) -> None:
    out = subprocess.run(
        ["curl", "-sS", "--compressed", "-D", str(tmp_path / "h"),
         f"{seeded.url}/api/v1/namespaces/{NS}/pods?resourceVersion=0"],
        capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    assert "content-encoding: gzip" in (tmp_path / "h").read_text().lower()
    assert len(_names(json.loads(out.stdout))) == PODS


def test_kubectl_decodes(seeded: ServerProcess, kubeconfig: Path) -> None:
    """kubectl prints the Table and the JSON list. (Go's transport asks for gzip on its
    own — client-go leaves ``DisableCompression`` off — and, having inflated the body,
    drops ``Content-Encoding`` before kubectl sees the response, so kubectl cannot show
    it: a broken stream would fail here, an unasked one is covered by the tests above.)"""
    base = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "-n", NS]
    table = subprocess.run([*base, "get", "pods", "--chunk-size=0"], capture_output=True,
                           text=True, timeout=120, check=True)  # fmt: skip
    assert len(table.stdout.strip().splitlines()) == PODS + 1  # the header, then rows
    listed = subprocess.run([*base, "get", "pods", "-o", "json", "--chunk-size=0"],
                            capture_output=True,
                            timeout=120, check=True)  # fmt: skip
    assert len(_names(json.loads(listed.stdout))) == PODS
