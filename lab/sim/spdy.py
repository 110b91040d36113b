"""The server side of a SPDY/3.1 session (the framing of the SPDY/3 draft, as
``moby/spdystream`` speaks it to kubectl), enough for the kubelet's port-forward
protocol: the client opens streams (SYN_STREAM with headers), each is answered
(SYN_REPLY) and carries DATA both ways until FIN or RST_STREAM; PINGs are echoed;
SETTINGS and WINDOW_UPDATE are read and ignored (the streams here carry a few kilobytes,
under SPDY's initial 64 KB window).

Header blocks are zlib-compressed, one stream per direction for the whole session,
with the SPDY/3 dictionary (:data:`DICTIONARY`, built from the draft's word list).
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DICTIONARY", "Session", "Stream"]

_VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = (
    1, 2, 3, 4, 6, 7, 8, 9)  # fmt: skip
FLAG_FIN = 0x01
_CANCEL = 5  # RST_STREAM status

# The SPDY/3 draft's header dictionary: its words, each after its 32-bit length, then
# the tail of status codes, reason phrases, dates and common values.
_WORDS = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
    "accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
    "cache-control", "connection", "content-base", "content-encoding", "content-language",
    "content-length", "content-location", "content-md5", "content-range", "content-type",
    "date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
    "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
    "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent",
    "vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK",
    "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin",
)  # fmt: skip
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502"
    "504505203 Non-Authoritative Information204 No Content301 Moved Permanently"
    "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error"
    "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct "
    "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,"
    "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8"
    "charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()


@dataclass
class Stream:
    """One stream the client opened: its ``headers`` (names lowercased), what it sent
    (``read``: b"" at its end) and ``write``/``close`` towards it."""

    id: int
    headers: dict[str, str]
    session: Session
    _inbox: asyncio.Queue[bytes] = field(default_factory=asyncio.Queue)
    closed: bool = False

    async def read(self) -> bytes:
        return await self._inbox.get()

    async def write(self, data: bytes) -> None:
        if data and not self.closed:
            await self.session.send_data(self.id, data, fin=False)

    async def close(self) -> None:
        """Half-close: FIN (nothing more from this side)."""
        if not self.closed:
            self.closed = True
            await self.session.send_data(self.id, b"", fin=True)


StreamHandler = Callable[[Stream], Coroutine[Any, Any, None]]


class Session:
    """Frames in through :meth:`feed`, frames out through ``send``; ``on_stream`` runs
    (as a task) for every stream the client opens."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]], on_stream: StreamHandler) -> None:
        self._send = send
        self._on_stream = on_stream
        self._buffer = b""
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)
        self._streams: dict[int, Stream] = {}
        self._lock = asyncio.Lock()
        self.tasks: set[asyncio.Task[None]] = set()
        self.gone = False

    async def feed(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= 8:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < 8 + length:
                return
            frame, self._buffer = self._buffer[: 8 + length], self._buffer[8 + length :]
            await self._frame(frame)

    def end(self) -> None:
        """The connection is gone: every stream's reader sees its end."""
        self.gone = True
        for stream in self._streams.values():
            stream._inbox.put_nowait(b"")

    async def _frame(self, frame: bytes) -> None:
        flags, payload = frame[4], frame[8:]
        if not frame[0] & 0x80:  # a data frame
            stream = self._streams.get(int.from_bytes(frame[0:4], "big") & 0x7FFFFFFF)
            if stream is not None:
                if payload:
                    stream._inbox.put_nowait(payload)
                if flags & FLAG_FIN:
                    stream._inbox.put_nowait(b"")
            return
        kind = int.from_bytes(frame[2:4], "big")
        if kind == SYN_STREAM:
            await self._syn_stream(flags, payload)
        elif kind == RST_STREAM:
            stream = self._streams.pop(int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF, None)
            if stream is not None:
                stream.closed = True
                stream._inbox.put_nowait(b"")
        elif kind == PING:
            await self._write(_control(PING, 0, payload))
        elif kind == GOAWAY:
            self.end()

    async def _syn_stream(self, flags: int, payload: bytes) -> None:
        stream_id = int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF
        headers = _decode_headers(self._inflate.decompress(payload[10:]))
        stream = self._streams[stream_id] = Stream(stream_id, headers, self)
        if flags & FLAG_FIN:
            stream._inbox.put_nowait(b"")
        empty = struct.pack(">I", 0)  # no headers in the reply
        block = self._deflate.compress(empty) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        await self._write(_control(SYN_REPLY, 0, struct.pack(">I", stream_id) + block))
        task = asyncio.create_task(self._on_stream(stream))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def send_data(self, stream_id: int, data: bytes, fin: bool) -> None:
        header = struct.pack(">I", stream_id) + bytes([FLAG_FIN if fin else 0])
        await self._write(header + len(data).to_bytes(3, "big") + data)

    async def reset(self, stream_id: int) -> None:
        await self._write(_control(RST_STREAM, 0, struct.pack(">II", stream_id, _CANCEL)))

    async def _write(self, frame: bytes) -> None:
        if self.gone:
            return
        async with self._lock:  # frames go out whole, never interleaved
            await self._send(frame)


def _control(kind: int, flags: int, payload: bytes) -> bytes:
    return (struct.pack(">HH", 0x8000 | _VERSION, kind) + bytes([flags])
            + len(payload).to_bytes(3, "big") + payload)  # fmt: skip


def _decode_headers(block: bytes) -> dict[str, str]:
    """A name/value header block: a 32-bit count, then length-prefixed names and values
    (a value's several values joined by NUL; the first kept)."""
    (count,), at, out = struct.unpack_from(">I", block), 4, {}
    for _ in range(count):
        (n,) = struct.unpack_from(">I", block, at)
        name = block[at + 4 : at + 4 + n].decode("latin-1").lower()
        at += 4 + n
        (v,) = struct.unpack_from(">I", block, at)
        value = block[at + 4 : at + 4 + v].decode("latin-1").split("\0")[0]
        at += 4 + v
        out[name] = value
    return out
