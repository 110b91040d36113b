"""Requests written as bytes (headers aiohttp's client would refuse to send: bytes that
are not UTF-8, control characters), over plain TCP or TLS, and their answers parsed."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from yarl import URL

__all__ = ["Answer", "exchange", "request_bytes"]


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        found = [v for k, v in self.headers if k.lower() == name.lower()]
        return found[0] if found else None


def request_bytes(
    method: str, path: str, headers: Mapping[str, bytes | str], body: bytes = b""
) -> bytes:
    """One HTTP/1.1 request that closes its connection; header values are sent as they
    are (bytes) or UTF-8."""
    lines = [f"{method} {path} HTTP/1.1".encode(), b"Host: hostile", b"Connection: close"]
    for name, value in headers.items():
        raw = value if isinstance(value, bytes) else value.encode()
        lines.append(name.encode() + b": " + raw)
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def exchange(url: str, data: bytes, patience: float = 20.0) -> Answer:
    """Send ``data`` to the server at ``url`` (http or https, certificate not checked)
    and read the answer until the server closes; ``status`` 0 when none came."""
    target = URL(url)
    context = None
    if target.scheme == "https":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    reader, writer = await asyncio.open_connection(target.host, target.port, ssl=context)
    try:
        writer.write(data)
        await writer.drain()
        async with asyncio.timeout(patience):
            raw = await reader.read()
    finally:
        writer.close()
    return _parse(raw)


def _parse(raw: bytes) -> Answer:
    head, _, body = raw.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1."):
        return Answer(0, [], raw)
    status_line, *lines = head.decode("utf-8", "replace").split("\r\n")
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines)]
    if any(k.lower() == "transfer-encoding" and "chunked" in v for k, v in headers):
        body = _dechunk(body)
    return Answer(int(status_line.split(" ")[1]), headers, body)


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return bytes(out)
