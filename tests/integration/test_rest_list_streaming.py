"""Converted LISTs (YAML, Table, PartialObjectMetadataList, protobuf) stream in bounded
steps: other requests are answered while one is being written, and the streamed body is
exactly the whole list converted at once."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import aiohttp
import orjson
import psutil  # type: ignore[import-untyped]
import pytest
import yaml

from lab.metrics import parse
from proxy.endpoints import protobuf
from proxy.endpoints.yaml_encoding import dump_yaml
from tests.integration.conftest import ServerProcess, create, pod_body

pytestmark = pytest.mark.etcd

KUBECTL_TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
METADATA_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
YAML_TABLE = "application/yaml;as=Table;v=v1;g=meta.k8s.io"
YAML_METADATA_LIST = "application/yaml;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
PROTOBUF_METADATA_LIST = f"{protobuf.MEDIA_TYPE};as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"


async def _seed(
    http: aiohttp.ClientSession, namespace: str, count: int, keys: int, size: int
) -> None:
    """``count`` pods, each with ``keys`` annotations of ``size`` bytes."""
    path = f"/api/v1/namespaces/{namespace}/pods"
    annotations = {f"example.com/key-{k}": f"{k} " + "v" * size for k in range(keys)}
    bodies = [pod_body(f"p{i:04d}") for i in range(count)]
    for i, body in enumerate(bodies):
        body["metadata"] = {"name": f"p{i:04d}", "annotations": annotations}
    for start in range(0, count, 50):
        await asyncio.gather(*(create(http, path, b) for b in bodies[start : start + 50]))


async def _lists_completed(http: aiohttp.ClientSession) -> float:
    async with http.get("/metrics") as resp:
        scrape = parse(await resp.text())
    return scrape.value("apiserver_request_total", verb="LIST", resource="pods", code="200")


def _small_window(addr_info: Any) -> socket.socket:
    """A client socket with a tiny receive buffer: what it does not read, the server
    cannot write, so a LIST the client holds back cannot end."""
    family, type_, proto, _, _ = addr_info
    sock = socket.socket(family, type_, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return sock


async def test_readyz_is_answered_while_a_big_yaml_list_streams(
    server: ServerProcess, http: aiohttp.ClientSession, namespace: str
) -> None:
    # ~7 MB of YAML: more than the server's socket buffer (4 MiB at most) and its
    # write buffer hold, so the handler cannot finish while the client reads nothing
    await _seed(http, namespace, 300, 100, 200)
    before = await _lists_completed(http)
    path = f"{server.url}/api/v1/namespaces/{namespace}/pods"
    connector = aiohttp.TCPConnector(socket_factory=_small_window)
    async with (
        aiohttp.ClientSession(connector=connector) as slow,
        slow.get(path, headers={"Accept": "application/yaml"}) as listing,
    ):
        # The headers are in and the body is held back, so the LIST cannot end yet. A
        # server that converts the whole list in one step has already finished the
        # handler by now, and answered nothing else meanwhile.
        assert listing.status == 200
        async with http.get("/readyz") as ready:
            assert ready.status == 200
        assert await _lists_completed(http) == before, "the LIST ended before /readyz"
        body = await listing.read()
    assert await _lists_completed(http) == before + 1
    doc = yaml.safe_load(body)
    assert doc["kind"] == "PodList"
    assert len(doc["items"]) == 300


async def _get(http: aiohttp.ClientSession, path: str, accept: str) -> tuple[str, bytes]:
    async with http.get(path, headers={"Accept": accept}) as resp:
        assert resp.status == 200, await resp.text()
        return resp.headers["Content-Type"], await resp.read()


async def test_streamed_conversions_equal_the_whole_list_converted(
    server: ServerProcess, http: aiohttp.ClientSession, namespace: str
) -> None:
    """Each format's streamed body decodes to the same document as the JSON list's items
    converted whole (kube's Table cells, PartialObjectMetadata, the List as YAML); the
    YAML list, written by the server's child process, is byte for byte the whole list
    dumped at once."""
    await _seed(http, namespace, 120, 3, 10)
    path = f"/api/v1/namespaces/{namespace}/pods"
    _, raw = await _get(http, path + "?includeObject=Object", "application/json")
    listing: dict[str, Any] = orjson.loads(raw)
    rv = listing["metadata"]["resourceVersion"]
    at_rv = f"{path}?resourceVersion={rv}&resourceVersionMatch=Exact"

    _, yaml_body = await _get(http, at_rv, "application/yaml")
    assert yaml_body == dump_yaml(listing)
    children = psutil.Process(server.pid).children()
    assert any("proxy.endpoints.yaml_encoding" in c.cmdline() for c in children)

    ctype, meta_body = await _get(http, at_rv, METADATA_LIST)
    assert ctype == METADATA_LIST
    metadata_list = orjson.loads(meta_body)
    assert metadata_list["metadata"] == listing["metadata"]
    assert [i["metadata"] for i in metadata_list["items"]] == [
        i["metadata"] for i in listing["items"]
    ]

    _, table_body = await _get(http, at_rv + "&includeObject=Object", KUBECTL_TABLE)
    table = orjson.loads(table_body)
    assert table["metadata"] == listing["metadata"]
    assert [r["object"] for r in table["rows"]] == listing["items"]
    assert [r["cells"][0] for r in table["rows"]] == [
        i["metadata"]["name"] for i in listing["items"]
    ]
    # from etcd (resourceVersion unset), its rows printed as the pages were read: the
    # same Table (the ages aside, printed at another now)
    _, etcd_body = await _get(http, path + "?includeObject=Object", KUBECTL_TABLE)
    etcd_table = orjson.loads(etcd_body)
    assert etcd_table["metadata"] == listing["metadata"]
    assert etcd_table["columnDefinitions"] == table["columnDefinitions"]
    assert [r["object"] for r in etcd_table["rows"]] == listing["items"]
    age = [c["name"] for c in table["columnDefinitions"]].index("Age")
    assert [r["cells"][:age] + r["cells"][age + 1 :] for r in etcd_table["rows"]] == [
        r["cells"][:age] + r["cells"][age + 1 :] for r in table["rows"]
    ]

    # the converted documents as YAML are the same documents (not JSON sent as YAML)
    _, yaml_table_body = await _get(http, at_rv + "&includeObject=Object", YAML_TABLE)
    assert not yaml_table_body.startswith(b"{")
    yaml_table = yaml.safe_load(yaml_table_body)
    assert yaml_table["columnDefinitions"] == table["columnDefinitions"]
    assert [r["object"] for r in yaml_table["rows"]] == listing["items"]
    _, yaml_meta_body = await _get(http, at_rv, YAML_METADATA_LIST)
    assert not yaml_meta_body.startswith(b"{")
    assert yaml.safe_load(yaml_meta_body) == metadata_list

    # protobuf: the List and the PartialObjectMetadataList decode to the same documents
    serializer = protobuf.serializer()
    assert serializer is not None
    ctype, pb_body = await _get(http, at_rv, protobuf.MEDIA_TYPE)
    assert ctype == protobuf.MEDIA_TYPE
    assert [i["metadata"]["name"] for i in serializer.decode(pb_body)["items"]] == [
        i["metadata"]["name"] for i in listing["items"]
    ]
    ctype, pb_meta = await _get(http, at_rv, PROTOBUF_METADATA_LIST)
    assert ctype == protobuf.MEDIA_TYPE
    decoded = serializer.decode(pb_meta)
    assert decoded["kind"] == "PartialObjectMetadataList"
    assert [i["metadata"]["name"] for i in decoded["items"]] == [
        i["metadata"]["name"] for i in listing["items"]
    ]


async def test_bad_table_option_is_a_status_before_streaming(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("one"))
    path = f"/api/v1/namespaces/{namespace}/pods?includeObject=Bogus"
    async with http.get(path, headers={"Accept": KUBECTL_TABLE}) as resp:
        status = await resp.json()
        assert resp.status == 400
    assert status["reason"] == "BadRequest"
    assert status["message"] == 'unrecognized includeObject value: "Bogus"'
