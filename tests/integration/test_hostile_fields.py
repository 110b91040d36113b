"""Field names no header can carry (issue 23 §4): an unknown field whose name holds a
control character is reported in a ``Warning`` header. aiohttp refused to write that
header and dropped the connection after the object was in etcd: the client never knew
the write happened, and its retry got 409. Upstream quotes the path as Go's ``%q``
(``unknown field "\\x00"``); every write answers, whatever its field names."""

from __future__ import annotations

import aiohttp
import orjson
import pytest

from tests.integration.conftest import ServerProcess, create
from tests.integration.raw_http import exchange, request_bytes

pytestmark = pytest.mark.etcd

NAMES = ["\u0000", "a\nb", "\r", "\t", "\x7f", "\x1b[31m", "\u2028", '"', "\\", "é\u0085"]
GO_QUOTED = {"\u0000": "\\x00", "a\nb": "a\\nb", "\r": "\\r", "\t": "\\t", "\x7f": "\\x7f",
             "\x1b[31m": "\\x1b[31m", "\u2028": "\\u2028", '"': '\\"', "\\": "\\\\",
             "é\u0085": "é\\u0085"}  # fmt: skip
# each as the Warning header carries it (the quoted text quoted again, as upstream)
IN_HEADER = {n: q.replace("\\", "\\\\").replace('"', '\\"') for n, q in GO_QUOTED.items()}


def _warnings(resp: aiohttp.ClientResponse) -> list[str]:
    return resp.headers.getall("Warning", [])


@pytest.mark.parametrize("name", NAMES)
async def test_every_write_with_a_hostile_field_name_is_answered(
    http: aiohttp.ClientSession, namespace: str, name: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    expected = f'299 - "unknown field \\"{IN_HEADER[name]}\\""'
    body = {"metadata": {"name": "cm"}, "data": {"k": "v"}, name: "x"}
    async with http.post(path, data=orjson.dumps(body),
                         headers={"Content-Type": "application/json"}) as resp:  # fmt: skip
        assert resp.status == 201, await resp.text()
        assert _warnings(resp) == [expected]
    body["data"] = {"k": "w"}
    async with http.put(f"{path}/cm", data=orjson.dumps(body),
                        headers={"Content-Type": "application/json"}) as resp:  # fmt: skip
        assert resp.status == 200, await resp.text()
        assert _warnings(resp) == [expected]
    for patch_type in ("merge-patch", "strategic-merge-patch"):
        patch = orjson.dumps({name: "y", "data": {"k": patch_type}})
        headers = {"Content-Type": f"application/{patch_type}+json"}
        async with http.patch(f"{path}/cm", data=patch, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            assert _warnings(resp) == [expected]
    ops = orjson.dumps([{"op": "add", "path": "/" + name.replace("~", "~0").replace("/", "~1"),
                         "value": "z"}])  # fmt: skip
    headers = {"Content-Type": "application/json-patch+json"}
    async with http.patch(f"{path}/cm", data=ops, headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        assert _warnings(resp) == [expected]
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ap"}, name: "x"}
    headers = {"Content-Type": "application/apply-patch+yaml"}
    async with http.patch(f"{path}/ap?fieldManager=m", data=orjson.dumps(applied),
                          headers=headers) as resp:  # fmt: skip
        status = await resp.json()
    # apply refuses a field its schema lacks as upstream does: a 500 without a reason
    assert resp.status == 500 and "reason" not in status, status
    assert status["message"].endswith(f".{name}: field not declared in schema")


async def test_a_strict_write_quotes_the_field_in_its_status(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps?fieldValidation=Strict"
    body = orjson.dumps({"metadata": {"name": "s"}, "\u0000": "x"})
    async with http.post(path, data=body, headers={"Content-Type": "application/json"}) as r:
        status = await r.json()
        assert r.status == 400, status
    assert status["message"].endswith('strict decoding error: unknown field "\\x00"')


async def test_a_yaml_body_with_escaped_control_characters_in_keys(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = b'metadata: {name: y}\n"\\x01\\n": x\n'
    async with http.post(path, data=body, headers={"Content-Type": "application/yaml"}) as r:
        assert r.status == 201, await r.text()
        assert _warnings(r) == ['299 - "unknown field \\"\\\\x01\\\\n\\""']
    await create(http, path, {"metadata": {"name": "after"}})  # the server still serves


async def test_a_bearer_token_that_is_not_utf8_on_the_plain_port(server: ServerProcess) -> None:
    """The plain port reads a bearer token too (the loopback client's): one with a byte
    that is not UTF-8 matched nothing but encoding it was a 500."""
    data = request_bytes("GET", "/api/v1/namespaces", {"Authorization": b"Bearer tok\xff"})
    answer = await exchange(server.url, data)
    assert answer.status == 200, answer
