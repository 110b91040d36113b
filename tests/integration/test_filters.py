"""The handler chain (``proxy.server.filters``) on a loopback aiohttp server with test
handlers (no etcd): timeouts, long-running requests, max in flight, panics, and that a
started response is never overwritten, read byte for byte from a raw socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from proxy.authentication.loopback import LoopbackToken
from proxy.endpoints import responsewriter
from proxy.endpoints.filters.authentication import plain_port_authentication
from proxy.options.settings import Settings, load_settings
from proxy.request.request_info import request_info_of
from proxy.server.filters import handler_chain, parse_go_duration

REQUEST_TIMEOUT = 0.5


async def _stream(request: web.Request, lines: int, pause: float) -> web.StreamResponse:
    """A chunked 200 writing ``lines`` lines ``pause`` seconds apart (a LIST, a Table or
    a watch, as the mode says)."""
    response = web.StreamResponse(status=200)
    response.content_type = "application/json"
    response.enable_chunked_encoding()
    await response.prepare(request)
    for i in range(lines):
        await response.write(b'{"line":%d}\n' % i)
        await asyncio.sleep(pause)
    await response.write_eof()
    return response


class Handlers:
    """Test handlers by ``?mode=``; ``release`` lets blocked handlers finish."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        mode = request.query.get("mode", "")
        if request_info_of(request).verb == "watch" or mode == "stream-slow":
            # a watch (or a LIST/Table stream) that outlives --request-timeout
            return await _stream(request, 6, REQUEST_TIMEOUT / 4)
        if mode == "slow":
            await asyncio.sleep(10 * REQUEST_TIMEOUT)
        if mode == "block":
            self.entered.set()
            await self.release.wait()
        if mode == "panic":
            raise KeyError("metadata")
        if mode == "panic-after-start":
            response = web.StreamResponse(status=200)
            response.enable_chunked_encoding()
            await response.prepare(request)
            await response.write(b'{"kind":"PodList","items":[')
            raise KeyError("metadata")
        return web.json_response({"kind": "Status", "status": "Success"})


@pytest.fixture
async def served() -> AsyncIterator[tuple[TestServer, Handlers]]:
    settings = Settings(
        etcd_servers=("http://127.0.0.1:1",),
        request_timeout=REQUEST_TIMEOUT,
        max_requests_inflight=0,
        max_mutating_requests_inflight=1,
    )
    app = web.Application(middlewares=handler_chain(settings))
    responsewriter.install(app)
    handlers = Handlers()
    app.router.add_route("*", "/api/{tail:.+}", handlers.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield server, handlers
    finally:
        handlers.release.set()
        await server.close()


async def _raw(server: TestServer, method: str, target: str, wait: float = 10.0) -> bytes:
    """Everything the server sends for one request until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        request = f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        writer.write(request.encode() + b"Content-Length: 0\r\n\r\n")
        async with asyncio.timeout(wait):
            return await reader.read(-1)
    finally:
        writer.close()


def _head_and_body(raw: bytes) -> tuple[bytes, bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return head, body


def _status_of(raw: bytes) -> dict[str, object]:
    decoded: dict[str, object] = orjson.loads(_head_and_body(raw)[1])
    return decoded


PODS = "/api/v1/namespaces/ns/pods"


async def test_a_started_stream_is_ended_at_the_timeout_never_overwritten(
    served: tuple[TestServer, Handlers],
) -> None:
    """A stream (LIST, Table) whose headers are out when --request-timeout passes is
    cut (the connection closes before the chunked terminator), never followed by a
    504 written into it, as upstream's timeout writer aborts a started response."""
    server, _ = served
    raw = await _raw(server, "GET", f"{PODS}?mode=stream-slow")
    head, body = _head_and_body(raw)
    assert head.startswith(b"HTTP/1.1 200 ") and raw.count(b"HTTP/1.1 ") == 1
    assert b"Timeout" not in body and b"504" not in body
    assert not body.endswith(b"0\r\n\r\n"), "a cut stream must not look complete"


@pytest.mark.parametrize("watch", ["t", "T", "True", "yes", ""])
async def test_a_watch_is_long_running_whatever_true_it_says(
    served: tuple[TestServer, Handlers], watch: str
) -> None:
    """Every spelling upstream reads as true makes a watch, and a watch outlives
    --request-timeout: all its events, then a clean end."""
    server, _ = served
    raw = await _raw(server, "GET", f"{PODS}?watch={watch}")
    head, body = _head_and_body(raw)
    assert head.startswith(b"HTTP/1.1 200 ") and raw.count(b"HTTP/1.1 ") == 1
    assert body.count(b'{"line":') == 6 and body.endswith(b"0\r\n\r\n")


async def test_a_request_that_has_not_started_gets_the_timeout_status(
    served: tuple[TestServer, Handlers],
) -> None:
    server, _ = served
    raw = await _raw(server, "GET", f"{PODS}/p?mode=slow")
    assert raw.startswith(b"HTTP/1.1 504 ") and b"Retry-After" not in raw
    status = _status_of(raw)
    assert (status["code"], status["reason"], status["message"]) == (
        504,
        "Timeout",
        "Timeout: request did not complete within the allotted timeout",
    )


async def test_the_timeout_parameter_shortens_the_deadline_and_is_validated(
    served: tuple[TestServer, Handlers],
) -> None:
    server, _ = served
    loop = asyncio.get_running_loop()
    started = loop.time()
    raw = await _raw(server, "GET", f"{PODS}/p?mode=slow&timeout=100ms")
    assert raw.startswith(b"HTTP/1.1 504 ")
    assert loop.time() - started < REQUEST_TIMEOUT
    raw = await _raw(server, "GET", f"{PODS}/p?timeout=abc")
    status = _status_of(raw)
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        'invalid timeout specified in the request URL - time: invalid duration "abc"'
    )


async def test_a_bug_is_a_500_status_or_ends_a_started_response(
    served: tuple[TestServer, Handlers],
) -> None:
    server, _ = served
    status = _status_of(await _raw(server, "GET", f"{PODS}/p?mode=panic"))
    assert (status["code"], status["reason"]) == (500, "InternalError")
    raw = await _raw(server, "GET", f"{PODS}?mode=panic-after-start")
    head, body = _head_and_body(raw)
    assert head.startswith(b"HTTP/1.1 200 ") and raw.count(b"HTTP/1.1 ") == 1
    assert b"InternalError" not in body and not body.endswith(b"0\r\n\r\n")


async def test_max_mutating_requests_in_flight_answers_429_as_upstream(
    served: tuple[TestServer, Handlers],
) -> None:
    """Beyond --max-mutating-requests-inflight: 429, ``Retry-After: 1`` and upstream's
    plain-text body; reads and watches are not counted against the mutating limit."""
    server, handlers = served
    first = asyncio.create_task(_raw(server, "POST", f"{PODS}?mode=block"))
    await handlers.entered.wait()
    raw = await _raw(server, "POST", PODS)
    head, body = _head_and_body(raw)
    assert head.startswith(b"HTTP/1.1 429 ") and b"\r\nRetry-After: 1\r\n" in head
    assert body == b"Too many requests, please try again later.\n"
    assert (await _raw(server, "GET", f"{PODS}/p")).startswith(b"HTTP/1.1 200 ")
    handlers.release.set()
    assert (await first).startswith(b"HTTP/1.1 200 ")
    assert (await _raw(server, "POST", PODS)).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("1s", 1.0), ("1m30s", 90.0), ("250ms", 0.25), ("1.5h", 5400.0), ("-2s", -2.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "10", "1x", "s", "+-1s", "-"])
def test_bad_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="time: "):
        parse_go_duration(text)


def test_max_in_flight_flags_and_their_defaults() -> None:
    """kube-apiserver's flags and defaults (400 read-only, 200 mutating; 0 is no limit:
    the filter is left out of the chain)."""
    defaults = load_settings(["--etcd-servers=http://127.0.0.1:2379"])
    assert (defaults.max_requests_inflight, defaults.max_mutating_requests_inflight) == (400, 200)
    flags = ["--max-requests-inflight=0", "--max-mutating-requests-inflight=0"]
    off = load_settings(["--etcd-servers=http://127.0.0.1:2379", *flags])
    assert len(handler_chain(off)) == len(handler_chain(defaults)) - 1


async def test_max_in_flight_always_answers_system_masters() -> None:
    """Upstream's WithMaxInFlightLimit serves a system:masters user beyond the limit (a
    super-admin, or the server's own loopback client): the plain port's users are."""
    settings = Settings(etcd_servers=("http://127.0.0.1:1",), max_requests_inflight=0,
                        max_mutating_requests_inflight=1)  # fmt: skip
    plain = plain_port_authentication(LoopbackToken())
    app = web.Application(middlewares=handler_chain(settings, authentication=[plain]))
    responsewriter.install(app)
    handlers = Handlers()
    app.router.add_route("*", "/api/{tail:.+}", handlers.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        first = asyncio.create_task(_raw(server, "POST", f"{PODS}?mode=block"))
        await handlers.entered.wait()
        assert (await _raw(server, "POST", PODS)).startswith(b"HTTP/1.1 200 ")
        handlers.release.set()
        assert (await first).startswith(b"HTTP/1.1 200 ")
    finally:
        await server.close()
