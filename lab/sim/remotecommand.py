"""The kubelet's side of ``kubectl exec``/``attach``/``cp`` over WebSocket: the
``v5.channel.k8s.io`` subprotocol (and ``v4``, without the close signal).

Every message is binary, its first byte the stream: 0 stdin, 1 stdout, 2 stderr,
3 error (the Status that ends the session), 4 resize (the terminal's size, JSON).
v5 adds 255: ``[255, N]`` says the client closed stream N (stdin's end: ``kubectl cp``
sends it after the tar stream). The session ends with the error stream's Status:
``Success``, or ``Failure`` with reason ``NonZeroExitCode`` and the exit code as the
cause kubectl exits with.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import aiohttp
import orjson
from aiohttp import web

from lab.sim.shell import StdIO

__all__ = ["PROTOCOLS", "exit_status", "serve_stream"]

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


def exit_status(code: int, command: list[str]) -> dict[str, object]:
    """The error stream's Status for exit ``code`` (the CRI's ``CodeExitError``)."""
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing "
                       f"command [{' '.join(command)}], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}  # fmt: skip


async def serve_stream(
    request: web.Request,
    run: Callable[[StdIO], Awaitable[int]],
    command: list[str],
    *,
    stdin: bool,
    tty: bool,
) -> web.StreamResponse:
    """Upgrade ``request`` and run ``run`` with the session's streams until it ends."""
    ws = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=0)
    await ws.prepare(request)
    inbox: asyncio.Queue[bytes] = asyncio.Queue()
    if not stdin:
        inbox.put_nowait(b"")
    reader = asyncio.create_task(_read(ws, inbox))

    async def send(stream: int, data: bytes) -> None:
        if data and not ws.closed:
            if tty:  # the terminal's output processing (onlcr)
                data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
            with contextlib.suppress(ConnectionResetError):
                await ws.send_bytes(bytes([stream]) + data)

    async def out(data: bytes) -> None:
        await send(STDOUT, data)

    async def err(data: bytes) -> None:
        await send(STDOUT if tty else STDERR, data)

    try:
        code = await run(StdIO(inbox.get, out, err, tty))
        if not ws.closed:
            status = orjson.dumps(exit_status(code, command))
            with contextlib.suppress(ConnectionResetError):
                await ws.send_bytes(bytes([ERROR]) + status)
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await ws.close()
    return ws


async def _read(ws: web.WebSocketResponse, inbox: asyncio.Queue[bytes]) -> None:
    """The client's messages: stdin's bytes into ``inbox``, b"" when stdin ends (v5's
    close signal, or the connection's end)."""
    try:
        async for message in ws:
            if message.type != aiohttp.WSMsgType.BINARY or not message.data:
                continue
            data: bytes = message.data
            if data[0] == STDIN and len(data) > 1:
                inbox.put_nowait(data[1:])
            elif data[0] == CLOSE and data[1:2] == bytes([STDIN]):
                inbox.put_nowait(b"")
    finally:
        inbox.put_nowait(b"")
