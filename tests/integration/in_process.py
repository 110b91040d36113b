"""A real server in the test's own process (the app over a real etcd, listening on a free
loopback port, its post-start hooks started as ``serve`` starts them), for tests that
reach inside it: inject a fault, add a hook, read its context."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from etcdclient import EtcdClient
from lab.etcd import free_port
from proxy.app.server import LOOPBACK_TOKEN, build_app, start_post_start_hooks
from proxy.loopback.config import LoopbackConfig
from proxy.options.settings import Settings
from proxy.registry.storage_factory import StorageContext

READY_TIMEOUT = 30.0


@dataclass
class InProcessServer:
    app: web.Application
    url: str  # http://127.0.0.1:PORT (the plain port)
    token: str  # the loopback token (system:apiserver)


@contextlib.asynccontextmanager
async def in_process_server(
    settings: Settings, before_start: Callable[[web.Application], None] = lambda app: None
) -> AsyncIterator[InProcessServer]:
    """Serve ``settings`` (its plain port is replaced by a free one); ``before_start`` may
    add post-start hooks before they start."""
    async with EtcdClient(list(settings.etcd_servers)) as client:
        app = build_app(settings, StorageContext(settings=settings, client=client))
        before_start(app)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        loopback = None
        try:
            await web.TCPSite(runner, "127.0.0.1", port).start()
            url = f"http://127.0.0.1:{port}"
            token = app[LOOPBACK_TOKEN].token
            loopback = start_post_start_hooks(app, LoopbackConfig(url, token), port)
            yield InProcessServer(app, url, token)
        finally:
            await runner.cleanup()
            if loopback is not None:
                await loopback.close()


async def wait_ready(http: aiohttp.ClientSession) -> None:
    """Until /readyz answers 200 (every post-start hook up), or TimeoutError (30 s)."""
    async with asyncio.timeout(READY_TIMEOUT):
        while True:
            async with http.get("/readyz") as resp:
                if resp.status == 200:
                    return
            await asyncio.sleep(0.05)
