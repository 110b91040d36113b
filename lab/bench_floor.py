"""The cache path's floor: a trivial aiohttp handler that serves fixed bytes.

``python -m lab.bench_floor --port P --file BODY``: every GET answers the file's bytes
(read once into memory) as ``application/json``, with a Content-Length, written in
256 KiB slices of one buffer (no copy, no encoding). Serving a cached LIST can hardly be
cheaper than this, so the benchmark reports the cached LIST relative to it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aiohttp import web

CHUNK = 256 * 1024


def app(body: bytes) -> web.Application:
    view = memoryview(body)

    async def handler(request: web.Request) -> web.StreamResponse:
        # Slices rather than one write: aiohttp's single huge write is slower for the
        # reader (measured), and the floor must be the fastest way to move these bytes.
        r = web.StreamResponse(headers={"Content-Type": "application/json"})
        r.content_length = len(body)
        await r.prepare(request)
        for i in range(0, len(body), CHUNK):
            await r.write(view[i : i + CHUNK])
        await r.write_eof()
        return r

    a = web.Application()
    a.router.add_get("/{tail:.*}", handler)
    return a


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.bench_floor", description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--file", type=Path, required=True)
    a = p.parse_args(argv)
    web.run_app(app(a.file.read_bytes()), host="127.0.0.1", port=a.port, print=None,
                access_log=None)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
