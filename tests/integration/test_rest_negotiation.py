"""Response negotiation: Tables (as kubectl asks), PartialObjectMetadata, aggregated
discovery, 406 for nothing acceptable."""

from __future__ import annotations

import aiohttp
import pytest

from tests.integration.conftest import create, pod_body

pytestmark = pytest.mark.etcd

KUBECTL_TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)


async def test_list_and_get_as_table(http: aiohttp.ClientSession, namespace: str) -> None:
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("t1"))
    headers = {"Accept": KUBECTL_TABLE}
    async with http.get(f"/api/v1/namespaces/{namespace}/pods", headers=headers) as resp:
        assert resp.headers["Content-Type"].startswith("application/json;as=Table;v=v1")
        tbl = await resp.json()
    assert tbl["kind"] == "Table"
    assert [c["name"] for c in tbl["columnDefinitions"]][:3] == ["Name", "Ready", "Status"]
    assert tbl["rows"][0]["cells"][0] == "t1"
    assert tbl["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    async with http.get(f"/api/v1/namespaces/{namespace}/pods/t1", headers=headers) as resp:
        one = await resp.json()
    assert one["kind"] == "Table" and len(one["rows"]) == 1


async def test_partial_object_metadata(http: aiohttp.ClientSession, namespace: str) -> None:
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("pm"))
    accept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    async with http.get(f"/api/v1/namespaces/{namespace}/pods", headers={"Accept": accept}) as resp:
        lst = await resp.json()
    assert lst["kind"] == "PartialObjectMetadataList"
    assert lst["items"][0]["metadata"]["name"] == "pm"
    assert "spec" not in lst["items"][0]


async def test_not_acceptable_is_406(http: aiohttp.ClientSession, namespace: str) -> None:
    async with http.get(
        f"/api/v1/namespaces/{namespace}/pods", headers={"Accept": "text/html"}
    ) as resp:
        status = await resp.json()
        assert resp.status == 406
    assert status["reason"] == "NotAcceptable"


async def test_aggregated_discovery(http: aiohttp.ClientSession) -> None:
    for path in ("/api", "/apis"):
        async with http.get(path, headers={"Accept": AGGREGATED}) as resp:
            assert resp.status == 200
            assert "as=APIGroupDiscoveryList" in resp.headers["Content-Type"]
            etag = resp.headers["ETag"]
            doc = await resp.json()
        assert doc["kind"] == "APIGroupDiscoveryList"
        async with http.get(path, headers={"Accept": AGGREGATED, "If-None-Match": etag}) as resp:
            assert resp.status == 304
    async with http.get("/apis", headers={"Accept": "application/json"}) as resp:
        assert (await resp.json())["kind"] == "APIGroupList"


async def test_openapi_v3_index_and_document(http: aiohttp.ClientSession) -> None:
    async with http.get("/openapi/v3") as resp:
        index = await resp.json()
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    async with http.get(url) as resp:
        assert resp.status == 200
        assert "immutable" in resp.headers["Cache-Control"]
        doc = await resp.json()
    assert any(path.endswith("/deployments/{name}") for path in doc["paths"])
    async with http.get("/openapi/v3/apis/nope/v1") as resp:
        assert resp.status == 404
