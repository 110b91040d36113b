"""The handler chain of a real ``watchcache serve`` over a real etcd: a watch however
its ``watch`` parameter is spelled outlives --request-timeout, a started response is
never overwritten, a client closing its watch is not a server error, and an
unreachable etcd answers what kube-apiserver's clients get (no Retry-After:
``test_rest_server.test_etcd_down_fails_bounded_then_recovers``)."""

from __future__ import annotations

import asyncio
import re
import socket
import time

import aiohttp
import orjson
import pytest

from tests.integration.conftest import ServerFactory, ServerProcess, create, pod_body

pytestmark = pytest.mark.etcd

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def _server_with_a_pod(
    server_factory: ServerFactory, namespace: str, *flags: str
) -> ServerProcess:
    """A private server whose ``namespace`` holds one pod, ``p1``."""
    srv = server_factory(*flags)
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": namespace}})
        await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("p1"))
    return srv


async def _raw_get(
    srv: ServerProcess, target: str, accept: str = "application/json", pause: float = 0.0
) -> bytes:
    """Everything the server sends for one GET until it closes the connection, read
    through a small receive buffer; after the headers the reader pauses ``pause``
    seconds, so a large body fills the buffers and the server's writes wait."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", srv.port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
    try:
        request = f"GET {target} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n"
        writer.write(request.encode() + b"Connection: close\r\n\r\n")
        async with asyncio.timeout(60):
            head = await reader.readuntil(b"\r\n\r\n")
            await asyncio.sleep(pause)
            return head + await reader.read(-1)
    finally:
        writer.close()


def _dechunk(body: bytes) -> tuple[bytes, bool]:
    """The payload of a chunked body and whether it ended with the last chunk."""
    out, pos = bytearray(), 0
    while True:
        end = body.find(b"\r\n", pos)
        if end < 0:
            return bytes(out), False
        size = int(body[pos:end].split(b";")[0], 16)
        if size == 0:
            return bytes(out), True
        if end + 2 + size > len(body):
            out += body[end + 2 :]
            return bytes(out), False
        out += body[end + 2 : end + 2 + size]
        pos = end + 2 + size + 2


def _errors_in_log(srv: ServerProcess) -> list[str]:
    return [
        line for line in srv.log().splitlines() if " ERROR " in line or line.startswith("Traceback")
    ]


async def test_a_watch_spelled_t_outlives_the_request_timeout(
    server_factory: ServerFactory,
) -> None:
    """``?watch=t`` is a watch for every part of the server, so --request-timeout does
    not cut it: its events, then a clean end at timeoutSeconds. (It was cut at the
    request timeout by a 504 written into the open chunked 200.)"""
    srv = await _server_with_a_pod(server_factory, "w", "--request-timeout=1s")
    started = time.monotonic()
    raw = await _raw_get(srv, "/api/v1/namespaces/w/pods?watch=t&timeoutSeconds=3")
    assert time.monotonic() - started >= 2.5
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and raw.count(b"HTTP/1.1 ") == 1
    payload, complete = _dechunk(body)
    assert complete, "the watch must end cleanly"
    events = [orjson.loads(line) for line in payload.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "p1")]


@pytest.mark.parametrize("accept", ["application/json", TABLE])
async def test_a_list_cut_by_the_request_timeout_is_never_overwritten(
    server_factory: ServerFactory, accept: str
) -> None:
    """A LIST (streamed JSON, or a Table) to a reader too slow to take it within
    --request-timeout: one status line, and the body either complete and valid or
    cut before its end (connection closed); never a second response inside it, and
    no error in the server log."""
    srv = server_factory("--request-timeout=1s")
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "big"}})
        value = "x" * 900_000
        for i in range(12):
            configmap: dict[str, object] = {"metadata": {"name": f"cm{i}"}, "data": {"v": value}}
            await create(http, "/api/v1/namespaces/big/configmaps", configmap)
    raw = await _raw_get(srv, "/api/v1/namespaces/big/configmaps", accept, pause=2.5)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and raw.count(b"HTTP/1.1 ") == 1, head
    if b"\r\nTransfer-Encoding: chunked" in head:
        payload, complete = _dechunk(body)
    else:
        length = re.search(rb"\r\nContent-Length: (\d+)", head)
        assert length is not None
        payload, complete = body, len(body) == int(length.group(1))
    if complete:
        assert len(orjson.loads(payload)["items" if accept != TABLE else "rows"]) == 12
    assert b"Timeout" not in payload[-2000:]
    assert _errors_in_log(srv) == []


def _sample(text: str, code: str, verb: str) -> float:
    pattern = (
        r'apiserver_request_total\{code="' + code + r'",component="apiserver",dry_run="",'
        r'group="",resource="pods",scope="namespace",subresource="",verb="' + verb
        + r'",version="v1"\} ([0-9.e+]+)'
    )  # fmt: skip
    found = re.search(pattern, text)
    return float(found.group(1)) if found else 0.0


async def test_a_client_closing_its_watch_counts_200_not_500(
    server_factory: ServerFactory,
) -> None:
    """As upstream's ResponseWriterDelegator records it: the watch's status was 200."""
    srv = await _server_with_a_pod(server_factory, "m")
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        async with http.get("/api/v1/namespaces/m/pods?watch=1") as resp:
            assert resp.status == 200
            assert b"ADDED" in await resp.content.readline()
        deadline = time.monotonic() + 10
        while True:
            async with http.get("/metrics") as resp:
                text = await resp.text()
            if _sample(text, "200", "WATCH") >= 1 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)  # the server notices the closed connection
    assert _sample(text, "200", "WATCH") == 1
    assert _sample(text, "500", "WATCH") == 0 and _sample(text, "0", "WATCH") == 0


async def test_request_info_edges_as_upstream_routes_them(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """A named GET with ``watch`` true is a GET (upstream turns only a nameless GET
    into list/watch); ``watch=false`` in any case is a LIST; the deprecated ``/proxy/``
    prefix and a bare ``/watch`` have no route (404)."""
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("p1"))
    async with http.get(f"/api/v1/namespaces/{namespace}/pods/p1?watch=true") as resp:
        assert resp.status == 200 and (await resp.json())["kind"] == "Pod"
    async with http.get(f"/api/v1/namespaces/{namespace}/pods?watch=FALSE") as resp:
        assert resp.status == 200 and (await resp.json())["kind"] == "PodList"
    for path in (f"/api/v1/proxy/namespaces/{namespace}/pods/p1", "/api/v1/watch"):
        async with http.get(path) as resp:
            status = await resp.json()
            assert (resp.status, status["reason"]) == (404, "NotFound"), path


async def test_a_table_watch_event_that_cannot_be_converted_ends_the_stream(
    server: ServerProcess, http: aiohttp.ClientSession, namespace: str
) -> None:
    """Once a watch's headers are out, an event the Table printer cannot convert ends
    the stream cleanly, as upstream's WatchServer does; never a 400 written into it."""
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("p1"))
    target = f"/api/v1/namespaces/{namespace}/pods?watch=1&timeoutSeconds=5&includeObject=Bad"
    raw = await _raw_get(server, target, TABLE)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and raw.count(b"HTTP/1.1 ") == 1
    payload, complete = _dechunk(body)
    assert complete and b"BadRequest" not in payload
