"""What the fuzz suite (``test_fuzz.py``) found, each pinned as kube-apiserver answers it."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from tests.integration.conftest import ServerProcess, create

pytestmark = pytest.mark.etcd

JSON_TYPE = {"Content-Type": "application/json"}


async def _exchange(url: str, data: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(data)
    await writer.drain()
    try:
        async with asyncio.timeout(5):
            return await reader.read()
    finally:
        writer.close()


async def test_head_on_a_resource_is_405_without_a_body(server: ServerProcess) -> None:
    """go-restful routes no HEAD. A LIST body written after HEAD's headers corrupted the
    keep-alive connection: the next request read it as its status line."""
    two = (
        b"HEAD /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    answer = await _exchange(server.url, two)
    first, _, rest = answer.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 405 ")
    assert rest.startswith(b"HTTP/1.1 200 OK"), answer


async def test_connect_closes_the_connection(server: ServerProcess) -> None:
    """Bytes after a CONNECT's headers are not read as the next request."""
    data = (
        b"CONNECT /api/v1/namespaces/x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
        b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    answer = await _exchange(server.url, data)
    assert answer.count(b"HTTP/1.") == 1, answer


@pytest.mark.parametrize(
    ("value", "problem"),
    [("99999999999999999999", "value out of range"), (" 1", "invalid syntax"),
     ("1_0", "invalid syntax"), ("\u0663", "invalid syntax")],
)  # fmt: skip
async def test_integer_parameters_parse_as_go_int64(
    http: aiohttp.ClientSession, namespace: str, value: str, problem: str
) -> None:
    async with http.get(f"/api/v1/namespaces/{namespace}/pods", params={"limit": value}) as r:
        status = await r.json()
        assert r.status == 400, status
    assert status["message"] == f'strconv.ParseInt: parsing "{value}": {problem}'


async def test_yaml_anchor_inside_itself_is_400(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    headers = {"Content-Type": "application/yaml"}
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    async with http.post(path, data=b"a: &a [*a, *a]", headers=headers) as resp:
        status = await resp.json()
        assert resp.status == 400, status
    assert status["message"] == (  # as kube-apiserver words it
        "the object provided is unrecognized (must be of type ConfigMap): yaml: anchor 'a' "
        "value contains itself (613a202661205b2a612c202a615d)"
    )


async def test_json_patch_with_a_malformed_pointer_is_422(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(http, path, {"metadata": {"name": "jp"}})
    headers = {"Content-Type": "application/json-patch+json"}
    async with http.patch(
        f"{path}/jp", data=b'[{"op":"add","path":"~","value":1}]', headers=headers
    ) as r:
        status = await r.json()
        assert r.status == 422, status
    assert status["reason"] == "Invalid"


async def test_null_map_values_decode_as_go_zero_values(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """A null label value became a stored null that killed the watch cache's reflector;
    Go's decoder makes it the string's zero value, and drops null struct fields."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = {"metadata": {"name": "nul", "labels": {"a": None}, "annotations": None},
            "data": {"k": None}}  # fmt: skip
    obj = await create(http, path, body)
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    assert meta["labels"] == {"a": ""} and "annotations" not in meta
    assert obj["data"] == {"k": ""}


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (b"{}", 400, "error decoding patch: json: cannot unmarshal object into Go value of "
         "type []handlers.jsonPatchOp"),
        (b"[1]", 400, "error decoding patch: json: cannot unmarshal number into Go value of "
         "type handlers.jsonPatchOp"),
        (b'[{"op":1}]', 400, "error decoding patch: json: cannot unmarshal number into Go "
         "struct field jsonPatchOp.op of type string"),
        (b'[{"op":"x","path":"/a"}]', 422,
         "the server rejected our request due to an error in our request"),
        (b'[{"path":"/a"}]', 422, "the server rejected our request due to an error in our request"),
        (b"null", 200, ""),
    ],
)  # fmt: skip
async def test_json_patch_decoding_as_kube_apiserver(
    http: aiohttp.ClientSession, namespace: str, body: bytes, code: int, message: str
) -> None:
    """Measured: under the default fieldValidation (Warn) the operations decode as
    kube's []jsonPatchOp first; an operation that cannot be applied is a 422 with
    empty details."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(http, path, {"metadata": {"name": "jd"}})
    headers = {"Content-Type": "application/json-patch+json"}
    async with http.patch(f"{path}/jd", data=body, headers=headers) as resp:
        answer = await resp.json()
        assert resp.status == code, answer
    if code != 200:
        assert answer["message"] == message
    if code == 422:
        assert answer["details"] == {}


@pytest.mark.parametrize(
    ("patch_type", "body", "code", "message"),
    [
        ("merge-patch", b"[]", 400, "error decoding patch: json: cannot unmarshal array into "
         "Go value of type map[string]interface {}"),
        ("merge-patch", b"null", 400, "Invalid JSON Patch"),
        ("strategic-merge-patch", b'"x"', 400, "json: cannot unmarshal string into Go value "
         "of type map[string]interface {}"),
        ("strategic-merge-patch", b"null", 200, ""),
        ("merge-patch", b'{"metadata":null}', 400, "the name of the object (mp based on URL) "
         "was undeterminable: name must be provided"),
    ],
)  # fmt: skip
async def test_merge_patch_decoding_as_kube_apiserver(
    http: aiohttp.ClientSession, namespace: str, patch_type: str, body: bytes, code: int,
    message: str,
) -> None:  # fmt: skip
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(http, path, {"metadata": {"name": "mp"}})
    headers = {"Content-Type": f"application/{patch_type}+json"}
    async with http.patch(f"{path}/mp", data=body, headers=headers) as resp:
        answer = await resp.json()
        assert resp.status == code, answer
    if code != 200:
        assert answer["message"] == message


async def test_a_watch_whose_events_cannot_be_converted_ends_cleanly(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """A Table watch with an invalid includeObject: the 200 is out before the first event
    is converted, so the stream ends; no second response is written into it."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(http, path, {"metadata": {"name": "tw"}})
    table = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    async with http.get(path + "?watch=1&includeObject=x", headers=table) as resp:
        assert resp.status == 200
        async with asyncio.timeout(10):
            assert await resp.read() == b""


@pytest.mark.timeout(90)
async def test_a_connection_trickling_its_headers_is_closed_after_32_s(
    server: ServerProcess,
) -> None:
    """Go's ReadHeaderTimeout (32 s in kube-apiserver): connections that sent one header
    byte every 5 s stayed open forever (issue 23 §8)."""
    host, port = server.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    start = asyncio.get_running_loop().time()
    writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\n")
    try:
        closed_after = None
        for _ in range(12):  # a byte every 4 s, for up to 48 s
            writer.write(b"X")
            await writer.drain()
            try:
                async with asyncio.timeout(4):
                    data = await reader.read(1024)
            except TimeoutError:
                continue
            assert data == b"", data  # no answer: the connection is closed
            closed_after = asyncio.get_running_loop().time() - start
            break
    except ConnectionError:
        closed_after = asyncio.get_running_loop().time() - start
    finally:
        writer.close()
    assert closed_after is not None and 30 <= closed_after <= 40, closed_after


async def test_a_namespace_without_a_name_is_422(server: ServerProcess) -> None:
    """``{"metadata": {}}`` was a 500 (``KeyError: 'name'`` in the namespace strategy's
    preparation); upstream's validation answers it."""
    async with (
        aiohttp.ClientSession(base_url=server.url) as http,
        http.post("/api/v1/namespaces", json={"metadata": {}}) as resp,
    ):
        status = await resp.json()
    assert resp.status == 422, status
    assert status["details"]["causes"][0]["field"] == "metadata.name"
    assert "name or generateName is required" in status["message"]


@pytest.mark.parametrize("metadata", ["[1]", '"x"', "7", "true"])
async def test_a_named_create_whose_metadata_is_no_object_is_400(
    http: aiohttp.ClientSession, namespace: str, metadata: str
) -> None:
    """A subresource create with a kind of its own (an Eviction, a Binding) whose
    ``metadata`` was an array reached admission as it was: 500 AttributeError (FUZZ_SEED
    1796199856). Go's decoder refuses it while unmarshalling into the kind."""
    pod = {"metadata": {"name": "p0"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod)
    cases = (
        ("pods/p0/eviction", "Eviction", "policy/v1"),
        ("pods/p0/binding", "Binding", "v1"),
    )
    for path, kind, api_version in cases:
        body = f'{{"apiVersion": "{api_version}", "kind": "{kind}", "metadata": {metadata}}}'
        url = f"/api/v1/namespaces/{namespace}/{path}"
        async with http.post(url, data=body.encode(), headers=JSON_TYPE) as resp:
            status = await resp.json()
            assert resp.status == 400, status
        go_type = {"[1]": "array", '"x"': "string", "7": "number", "true": "bool"}[metadata]
        assert status["message"] == (
            f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal '
            f"{go_type} into Go struct field {kind}.metadata of type v1.ObjectMeta"
        )
