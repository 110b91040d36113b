"""The cache path's floor: a trivial aiohttp handler that serves fixed bytes.

``python -m lab.bench_floor --port P --file BODY``: every GET answers the file's bytes
(read once into memory) as ``application/json``. Serving a cached LIST can hardly be
cheaper than this, so the benchmark reports the cached LIST relative to it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aiohttp import web


def app(body: bytes) -> web.Application:
    async def handler(_: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

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
