"""The kubelet's side of ``kubectl port-forward``: the ``portforward.k8s.io`` protocol
over SPDY, tunnelled in WebSocket binary messages (subprotocol
``SPDY/3.1+portforward.k8s.io``, kubectl's default since 1.31).

For every connection kubectl accepts locally it opens two streams with the same
``requestID``: ``streamType: error`` and ``streamType: data`` for ``port``. A port one of
the pod's containers declares answers as a tiny HTTP server would (one response, then
the connection closes): it says which pod, container and port answered. Any other port
gets the kubelet's error on the error stream (``connection refused``), as a pod with
nothing listening there would. No real socket is opened to anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt

import aiohttp
from aiohttp import web

from lab.sim.client import JSON
from lab.sim.spdy import Session, Stream

__all__ = ["PROTOCOL", "declared_container", "http_response", "serve_port_forward"]

PROTOCOL = "SPDY/3.1+portforward.k8s.io"
_REQUEST_END = b"\r\n\r\n"
_MAX_REQUEST = 64 * 1024


def declared_container(pod: JSON, port: int) -> str | None:
    """The container that declares ``port`` (None: none does)."""
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("containerPort") == port:
                return str(c.get("name"))
    return None


def http_response(pod: JSON, container: str, port: int, request: bytes) -> bytes:
    meta = pod.get("metadata") or {}
    line = request.split(b"\r\n", 1)[0].decode("latin-1", "replace")
    body = (f"Hello from {meta.get('namespace')}/{meta.get('name')}, container {container}, "
            f"port {port} (a simulated responder of the watchcache lab)\n"
            f"You sent: {line}\n").encode()  # fmt: skip
    when = dt.datetime.now(dt.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nDate: {when}\r\n"
            "Connection: close\r\n\r\n")  # fmt: skip
    return head.encode() + body


class _Forwarder:
    """The streams of one session, paired by requestID."""

    def __init__(self, pod: JSON) -> None:
        self.pod = pod
        self.errors: dict[str, Stream] = {}
        self.error_seen: dict[str, asyncio.Event] = {}

    def _seen(self, request_id: str) -> asyncio.Event:
        return self.error_seen.setdefault(request_id, asyncio.Event())

    async def on_stream(self, stream: Stream) -> None:
        request_id = stream.headers.get("requestid", "")
        if stream.headers.get("streamtype") == "error":
            self.errors[request_id] = stream
            self._seen(request_id).set()
            return
        with contextlib.suppress(TimeoutError):  # kubectl opens the error stream first
            await asyncio.wait_for(self._seen(request_id).wait(), 5)
        error = self.errors.pop(request_id, None)
        try:
            await self._serve(stream, error)
        finally:
            await stream.close()
            if error is not None:
                await error.close()

    async def _serve(self, data: Stream, error: Stream | None) -> None:
        port_text = data.headers.get("port", "")
        port = int(port_text) if port_text.isdigit() else 0
        container = declared_container(self.pod, port)
        meta = self.pod.get("metadata") or {}
        if container is None:
            if error is not None:
                await error.write(
                    f"error forwarding port {port} to pod {meta.get('uid')}, uid : failed to "
                    f"connect to localhost:{port} inside namespace {meta.get('name')}: dial "
                    f"tcp4 127.0.0.1:{port}: connect: connection refused".encode()
                )  # fmt: skip
            return
        request = b""
        while _REQUEST_END not in request and len(request) < _MAX_REQUEST:
            chunk = await data.read()
            if not chunk:
                break
            request += chunk
        await data.write(http_response(self.pod, container, port, request))


async def serve_port_forward(request: web.Request, pod: JSON) -> web.StreamResponse:
    """Upgrade ``request`` to the tunnelled SPDY session and serve its streams."""
    ws = web.WebSocketResponse(protocols=(PROTOCOL,), max_msg_size=0)
    await ws.prepare(request)

    async def send(frame: bytes) -> None:
        if not ws.closed:
            with contextlib.suppress(ConnectionResetError):
                await ws.send_bytes(frame)

    session = Session(send, _Forwarder(pod).on_stream)
    try:
        async for message in ws:
            if message.type == aiohttp.WSMsgType.BINARY:
                await session.feed(message.data)
    finally:
        session.end()
        for task in list(session.tasks):
            task.cancel()
        await ws.close()
    return ws
