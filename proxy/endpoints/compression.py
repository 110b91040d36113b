"""Response compression as kube-apiserver does it (``APIResponseCompression``, on by
default; upstream: ``responsewriters/writers.go``).

A response is gzip-encoded when the request's ``Accept-Encoding`` lists the token
``gzip`` (upstream compares each comma-separated token, trimmed, with ``gzip``
exactly: ``gzip;q=0`` is not it) and its body is larger than 128 KiB
(``defaultGzipThresholdBytes``); it then carries ``Content-Encoding: gzip`` and
``Vary: Accept-Encoding``. Watches are never compressed (upstream's watch server
writes its frames to the connection as they come). One-object responses are
compressed whole (:func:`compress_response`, by aiohttp, off the loop for big bodies).

Streamed lists keep the cache's advantage, **compress each object version at most
once**: a gzip member is a header, deflate data, then the CRC-32 and length of the
uncompressed bytes; deflate data may be a run of independent segments, each ending on
a byte boundary with a non-final block (a sync flush), closed by one empty final
block. A JSON LIST from the cache is such a run: the list's head with the first item,
then per item ``,`` + its bytes, then ``]}``. An item's segment is compressed with the
previous item's bytes as the preset dictionary (objects of one list are alike: that is
where gzip's ratio on a list comes from; alone, a pod compresses to ~40%, after its
neighbour to ~4%). That is valid in the stream because, when the client inflates
the segment, exactly those bytes precede it in its window. So the segment is kept with
the version together with which version it followed (two such neighbours at most:
the full list's and one selector's), and a LIST from the cache joins kept segments;
only the head, the first item and the tail are compressed per request. The CRC-32 is
computed over the uncompressed pieces as they are joined (zlib's crc32 runs at
several GB/s: ~10 ms for 58 MB), the length summed.

Other streamed bodies (Tables, YAML, protobuf, metadata lists) are compressed as they
are produced, in writes of at least 64 KiB, by ISA-L's deflate (the ``isal`` package)
at its level 1: on a page of ``kubectl get pods`` (500 Table rows, 1.6 MB) it takes
0.8 ms where zlib's level 1 (upstream's ``defaultGzipContentEncodingLevel``) took
6.4 ms, and writes 58 KB where zlib wrote 75 KB. Where ``isal`` is not installed, zlib
at level 1. The head and first item of a JSON LIST are compressed the same way; the
kept segments by zlib at level 6 (made once, with a preset dictionary).
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Handler
from aiohttp.web import ContentCoding

from storage.interfaces import StoredObject

try:
    from isal import isal_zlib
except ImportError:  # no wheel for this platform: zlib's deflate, ~8x slower
    isal_zlib = None  # type: ignore[assignment]

__all__ = [
    "COMPRESSION_ENABLED",
    "GZIP_THRESHOLD",
    "accepts_gzip",
    "compress_if_large",
    "compress_response",
    "gzip_chunks",
    "gzip_joined_list",
    "mark_compressed",
    "stream_compressor",
    "with_compression",
]

GZIP_THRESHOLD = 128 * 1024  # upstream's defaultGzipThresholdBytes: compress above this
STREAM_LEVEL = 1  # upstream's defaultGzipContentEncodingLevel, for per-request bytes
WRITE_BYTES = 64 * 1024  # compressed bytes per write of a streamed gzip body
ISAL_STREAM_LEVEL = 1  # ISA-L's (0-3): at the speed of its 0, zlib level 6's ratio
KEPT_LEVEL = 6  # a kept segment is compressed once: a better ratio is worth it
KEPT_NEIGHBOURS = 2
COMPRESSION_ENABLED = web.AppKey("watchcache_api_response_compression", bool)
"""The ``APIResponseCompression`` gate (absent: on, as upstream's default)."""

_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # gzip, deflate, no name/mtime, OS unknown
_FINAL_BLOCK = b"\x03\x00"  # an empty final block (fixed Huffman): the end of the deflate data
_KEPT = "gzip-after"  # StoredObject.derived key: {previous version's key: (its rv, segment)}


def accepts_gzip(request: web.Request) -> bool:
    """Whether the response may be gzip: the gate is on and ``Accept-Encoding`` has a
    ``gzip`` token (upstream's ``negotiateContentEncoding``)."""
    if not request.app.get(COMPRESSION_ENABLED, True):
        return False
    header = request.headers.get("Accept-Encoding", "")
    return any(token.strip() == "gzip" for token in header.split(","))


def mark_compressed(response: web.StreamResponse) -> None:
    response.headers["Content-Encoding"] = "gzip"
    response.headers.add("Vary", "Accept-Encoding")


def compress_response(request: web.Request, response: web.StreamResponse) -> None:
    """Have aiohttp gzip a not-yet-sent one-body response larger than the threshold
    when the client accepts it (a streamed response compresses itself)."""
    if not isinstance(response, web.Response) or response.prepared:
        return
    body = response.body
    if not isinstance(body, bytes | bytearray) or len(body) <= GZIP_THRESHOLD:
        return
    if "Content-Encoding" in response.headers or not accepts_gzip(request):
        return
    response.enable_compression(ContentCoding.gzip)
    response.headers.add("Vary", "Accept-Encoding")


class _Compressor(Protocol):
    def compress(self, data: bytes, /) -> bytes: ...
    def flush(self, mode: int = zlib.Z_FINISH, /) -> bytes: ...


def stream_compressor(wbits: int) -> _Compressor:
    """A deflate stream for per-request bytes (``wbits`` as zlib's: 31 gzip, -15 raw):
    ISA-L's when installed (the module docstring), else zlib's at upstream's level."""
    if isal_zlib is not None:
        return isal_zlib.compressobj(ISAL_STREAM_LEVEL, isal_zlib.DEFLATED, wbits)
    return zlib.compressobj(STREAM_LEVEL, zlib.DEFLATED, wbits)


def _segment(raw: bytes, zdict: bytes | None = None, level: int = STREAM_LEVEL) -> bytes:
    """``raw`` as deflate blocks ending byte-aligned and not final (a sync flush),
    back-references reaching at most into ``zdict`` (the bytes that precede it); at
    ``STREAM_LEVEL`` without ``zdict`` (per request), by :func:`stream_compressor`."""
    c: _Compressor
    if zdict:
        c = zlib.compressobj(level, zlib.DEFLATED, -15, zdict=zdict)
    elif level == STREAM_LEVEL:
        c = stream_compressor(-15)
    else:
        c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(raw) + c.flush(zlib.Z_SYNC_FLUSH)


def _kept_segment(stored: StoredObject, separator: bytes, previous: StoredObject) -> bytes:
    """``separator + stored.data`` deflated after ``previous.data``: made once per
    (version, previous version) and kept with the version."""
    kept: dict[str, tuple[int, bytes]] = stored.derived(_KEPT, lambda _: {})
    found = kept.get(previous.key)
    if found is not None and found[0] == previous.resource_version:
        return found[1]
    segment = _segment(separator + stored.data, previous.data, KEPT_LEVEL)
    kept.pop(previous.key, None)
    if len(kept) >= KEPT_NEIGHBOURS:
        del kept[next(iter(kept))]  # the oldest neighbour
    kept[previous.key] = (previous.resource_version, segment)
    return segment


class _Member:
    """One gzip member being written: its CRC-32 and length so far."""

    def __init__(self) -> None:
        self.crc = 0
        self.size = 0

    def add(self, raw: bytes) -> None:
        self.crc = zlib.crc32(raw, self.crc)
        self.size += len(raw)

    def trailer(self) -> bytes:
        return _FINAL_BLOCK + struct.pack("<II", self.crc, self.size & 0xFFFFFFFF)


def gzip_joined_list(
    head: bytes,
    items: Iterable[StoredObject],
    separator: bytes,
    tail: bytes,
    *,
    chunk_bytes: int,
    step_seconds: float,
    clock: Callable[[], float] = time.perf_counter,
) -> Iterator[bytes]:
    """The gzip body of ``head + separator.join(item.data ...) + tail``, from kept
    segments (see the module docstring), in pieces of about ``chunk_bytes``
    compressed bytes or ``step_seconds`` of work."""
    member = _Member()
    buffer: list[bytes] = [_HEADER]
    size = 0
    started = clock()
    previous: StoredObject | None = None
    for stored in items:
        if previous is None:
            raw = head + stored.data
            segment = _segment(raw)
        else:
            raw = separator + stored.data
            segment = _kept_segment(stored, separator, previous)
        member.add(raw)
        buffer.append(segment)
        size += len(segment)
        previous = stored
        if size >= chunk_bytes or clock() - started >= step_seconds:
            yield b"".join(buffer)
            buffer, size = [], 0
            started = clock()
    last = tail if previous is not None else head + tail
    member.add(last)
    buffer += [_segment(last), member.trailer()]
    yield b"".join(buffer)


async def gzip_chunks(
    chunks: AsyncIterable[bytes], *, write_bytes: int = WRITE_BYTES
) -> AsyncIterator[bytes]:
    """``chunks`` as one gzip stream, compressed as they come
    (:func:`stream_compressor`), in pieces of at least ``write_bytes`` (but the last).
    Each piece is one write: a send and its TLS records. A page of 500 Table rows
    (1.6 MB in seven 256 KiB chunks, 58 KB compressed) went in seven writes, each
    after a sync flush; now in one, the compressor flushed once, at the end."""
    c = stream_compressor(31)
    pending: list[bytes] = []
    size = 0
    async for chunk in chunks:
        out = c.compress(chunk)
        if out:
            pending.append(out)
            size += len(out)
        if size >= write_bytes:
            yield b"".join(pending)
            pending, size = [], 0
    pending.append(c.flush(zlib.Z_FINISH))
    yield b"".join(pending)


async def compress_if_large(
    chunks: AsyncIterator[bytes],
) -> tuple[bool, AsyncIterator[bytes]]:
    """Whether a body of ``chunks`` goes compressed (more than the threshold), and the
    body to send: the chunks are read until the threshold is passed or they end (a
    body that ends below it goes as it is, as upstream's deferred writer does)."""
    first: list[bytes] = []
    size = 0
    async for chunk in chunks:
        first.append(chunk)
        size += len(chunk)
        if size > GZIP_THRESHOLD:
            return True, gzip_chunks(_chain(first, chunks))
    return False, _chain(first, chunks)


async def _chain(first: list[bytes], rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in first:
        yield chunk
    async for chunk in rest:
        yield chunk


@web.middleware
async def with_compression(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The filter that gzips one-body responses (:func:`compress_response`)."""
    response = await handler(request)
    compress_response(request, response)
    return response
