"""The lab's live page, served by ``watchcache lab`` (``python -m lab.page --server URL``
alone).

``/`` is one hand-written HTML page (``index.html``: no framework, no CDN, a canvas
chart); ``/events`` is a stream of server-sent events, one a second, that this process
builds by polling the API server's ``/debug/watchcache`` and ``/debug/requests``: each
watch cache (objects, resourceVersion vs etcd's revision, history window, watchers and
their lag, events dispatched, index), the requests since the last tick, and rates —
LISTs served from the cache and from etcd per second, etcd writes per second (revision
growth) and watch events dispatched per second.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from importlib import resources
from typing import Any

import aiohttp
import orjson
from aiohttp import web

__all__ = ["LabPage", "main"]

JSON = dict[str, Any]
TICK_SECONDS = 1.0


class _Poller:
    """Turns successive polls of the server into per-tick updates with rates."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.seq = 0
        self.last: tuple[float, int, int] | None = None  # (time, revision, dispatched)

    async def tick(self, session: aiohttp.ClientSession) -> JSON:
        async with session.get(f"{self.server}/debug/watchcache") as r:
            caches: JSON = await r.json()
        async with session.get(f"{self.server}/debug/requests?since={self.seq}") as r:
            recent: JSON = await r.json()
        items = list(recent.get("items") or [])
        self.seq = int(recent.get("seq") or self.seq)
        now = time.monotonic()
        revision = int(caches.get("etcdRevision") or 0)
        dispatched = sum(int(c.get("dispatched") or 0) for c in caches.get("caches") or [])
        rates = {"cache": 0.0, "etcd": 0.0, "writes": 0.0, "events": 0.0}
        if self.last is not None:
            seconds = max(now - self.last[0], 1e-3)
            for e in items:
                where = e.get("servedFrom")
                if where in ("cache", "etcd"):
                    rates[str(where)] += 1 / seconds
            rates["writes"] = max(revision - self.last[1], 0) / seconds
            rates["events"] = max(dispatched - self.last[2], 0) / seconds
        self.last = (now, revision, dispatched)
        return {"server": self.server, "at": time.time(), "etcdRevision": revision,
                "caches": caches.get("caches") or [], "requests": items[-100:],
                "rates": {k: round(v, 2) for k, v in rates.items()}}  # fmt: skip


class LabPage:
    """The page's web server for the API server at ``server``."""

    def __init__(self, server: str, port: int = 0, host: str = "127.0.0.1") -> None:
        self.server = server
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self._index)
        app.router.add_get("/events", self._events)
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app(), handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        for address in self._runner.addresses:
            if isinstance(address, tuple):
                self.port = int(address[1])

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _index(self, request: web.Request) -> web.Response:
        html = resources.files("lab.page").joinpath("index.html").read_text(encoding="utf-8")
        return web.Response(text=html, content_type="text/html")

    async def _events(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-cache"})  # fmt: skip
        await response.prepare(request)
        poller = _Poller(self.server)
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                try:
                    update = await poller.tick(session)
                except (aiohttp.ClientError, TimeoutError, ValueError) as e:
                    update = {"error": f"{type(e).__name__}: {e}"}
                await response.write(b"data: " + orjson.dumps(update) + b"\n\n")
                await asyncio.sleep(TICK_SECONDS)


async def _run(server: str, port: int) -> None:
    page = LabPage(server, port)
    await page.start()
    print(f"lab page on {page.url}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await page.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.page", description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True, help="the API server's URL")
    p.add_argument("--port", type=int, default=0, help="port of the page (0: any free)")
    a = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_run(a.server, a.port))
    return 0
