"""gzip bodies joined from per-version deflate segments are valid gzip (CRC-32 and
length checked by the decoders) and inflate to the plain body; the kept segments are
reused, and are right again after a neighbour changes."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from lab import seed
from proxy.endpoints import compression
from proxy.endpoints.encoders import json_list, list_chunks
from storage.interfaces import StoredObject

META = {"resourceVersion": "77"}


def versions(count: int, rv: int = 1) -> list[StoredObject]:
    return [StoredObject(f"/registry/pods/n/p-{i:05}", orjson.dumps(seed.pod(i, 10, 2)), rv + i)
            for i in range(count)]  # fmt: skip


def gzip_body(items: list[StoredObject], **kw: Any) -> bytes:
    encoder = json_list("PodList", "v1", META)
    chunks = compression.gzip_joined_list(encoder.head, items, encoder.separator, encoder.tail,
                                          chunk_bytes=kw.get("chunk_bytes", 1 << 20),
                                          step_seconds=10)  # fmt: skip
    return b"".join(chunks)


def kept(stored: StoredObject) -> dict[str, Any]:
    """The deflate segments kept with a version, by the previous version's key."""
    found: dict[str, Any] = stored.derived("gzip-after", lambda _: {})
    return found


def plain_body(items: list[StoredObject]) -> bytes:
    return b"".join(list_chunks(json_list("PodList", "v1", META), items))


def inflate_streaming(body: bytes) -> bytes:
    """As a client that inflates as bytes arrive (urllib3, aiohttp): in small pieces."""
    d = zlib.decompressobj(31)
    out = b"".join(d.decompress(body[i : i + 1000]) for i in range(0, len(body), 1000))
    assert d.eof and not d.unused_data
    return out + d.flush()


@pytest.mark.parametrize("count", [0, 1, 2, 40])
@pytest.mark.parametrize("chunk_bytes", [1, 1 << 20])
def test_joined_segments_are_one_valid_gzip_member(count: int, chunk_bytes: int) -> None:
    items = versions(count)
    body = gzip_body(items, chunk_bytes=chunk_bytes)
    assert gzip.decompress(body) == plain_body(items)  # checks CRC-32 and ISIZE
    assert inflate_streaming(body) == plain_body(items)


def test_a_corrupted_crc_is_refused_by_the_decoder() -> None:
    """The trailer is checked: the test above would fail on a wrong CRC."""
    body = bytearray(gzip_body(versions(3)))
    body[-8] ^= 1
    with pytest.raises(gzip.BadGzipFile):
        gzip.decompress(bytes(body))


def test_segments_are_kept_and_reused_and_right_after_a_neighbour_changes() -> None:
    items = versions(30)
    first = gzip_body(items)
    segments = [kept(i) for i in items[1:]]
    assert all(len(k) == 1 for k in segments)
    made = [next(iter(k.values()))[1] for k in segments]
    assert gzip_body(items) == first  # joined from the kept segments, not made again:
    assert all(next(iter(kept(i).values()))[1] is m for i, m in zip(items[1:], made, strict=True))
    # item 10 changes (a new version): 10 and 11 compress again, the others are reused
    items[10] = StoredObject(items[10].key, items[10].data.replace(b"Running", b"Pending"), 999)
    assert gzip.decompress(gzip_body(items)) == plain_body(items)
    # a selector's list: other neighbours; the full list's segments stay kept too
    every_third = items[::3]
    assert gzip.decompress(gzip_body(every_third)) == plain_body(every_third)
    assert len(kept(items[3])) == 2
    assert gzip.decompress(gzip_body(items)) == plain_body(items)


def test_a_list_of_similar_objects_compresses_like_one_stream() -> None:
    items = versions(200)
    plain = plain_body(items)
    assert len(gzip_body(items)) < 0.1 * len(plain)


@pytest.mark.parametrize(
    ("header", "accepted"),
    [("gzip", True), ("gzip, deflate", True), ("deflate, gzip, br, zstd", True),
     (" identity , gzip ", True), ("deflate", False), ("gzip;q=1", False), ("", False),
     ("x-gzip", False), ("GZIP", False)],
)  # fmt: skip
def test_the_gzip_token_as_upstream_reads_it(header: str, accepted: bool) -> None:
    app = web.Application()
    request = make_mocked_request("GET", "/api/v1/pods", headers={"Accept-Encoding": header},
                                  app=app)  # fmt: skip
    assert compression.accepts_gzip(request) is accepted
    app[compression.COMPRESSION_ENABLED] = False  # --feature-gates=APIResponseCompression=false
    assert compression.accepts_gzip(request) is False


async def _chunks(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def _joined(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in chunks])


async def test_a_body_below_the_threshold_goes_as_it_is() -> None:
    small = [b"x" * 1000] * 10
    compressed, body = await compression.compress_if_large(_chunks(small))
    assert not compressed and await _joined(body) == b"".join(small)
    big = [bytes(range(256)) * 100] * 10
    compressed, body = await compression.compress_if_large(_chunks(big))
    assert compressed and gzip.decompress(await _joined(body)) == b"".join(big)


async def test_a_streamed_body_is_written_in_pieces_of_at_least_write_bytes() -> None:
    """Many chunks in, few writes out: each piece (but the last) at least
    ``write_bytes`` of compressed bytes; together one gzip member of the chunks."""
    chunks = [orjson.dumps(seed.pod(i, 10, 2)) * 3 for i in range(300)]
    pieces = [p async for p in compression.gzip_chunks(_chunks(chunks), write_bytes=4096)]
    assert all(len(p) >= 4096 for p in pieces[:-1])
    assert len(pieces) < len(chunks) // 4
    assert inflate_streaming(b"".join(pieces)) == b"".join(chunks)
    default = [p async for p in compression.gzip_chunks(_chunks(chunks))]
    assert all(len(p) >= compression.WRITE_BYTES for p in default[:-1])
    assert gzip.decompress(b"".join(default)) == b"".join(chunks)
