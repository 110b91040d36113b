"""The lab's control socket: lets a demo stop and restart the lab's own etcd.

The lab process owns every process it started (it alone stops them, by PID, on exit),
so a demo that needs etcd down asks the lab over a unix socket in the lab directory
instead of signalling etcd itself. ``POST /etcd/stop`` stops every member (SIGTERM,
by PID); ``POST /etcd/start`` starts them again on the same ports and data dirs and
answers once they are healthy. Both answer ``{"pids": [...]}``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import aiohttp
from aiohttp import web

from lab.etcd import EtcdCluster

__all__ = ["ControlServer", "etcd_start", "etcd_stop"]


class ControlServer:
    """Serves the control socket for ``cluster``; ``on_change`` runs after each change
    (the lab rewrites its state file with the new PIDs)."""

    def __init__(
        self, socket_path: Path, cluster: EtcdCluster, on_change: Callable[[], None]
    ) -> None:
        self.socket_path = socket_path
        self.cluster = cluster
        self.on_change = on_change
        self._lock = asyncio.Lock()  # one stop/start at a time
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/etcd/stop", self._stop)
        app.router.add_post("/etcd/start", self._start)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self.socket_path.unlink(missing_ok=True)
        await web.UnixSite(self._runner, str(self.socket_path)).start()

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.socket_path.unlink(missing_ok=True)

    def _pids(self) -> list[int]:
        return [m.pid for m in self.cluster.members if m.pid is not None]

    async def _stop(self, _: web.Request) -> web.Response:
        async with self._lock:
            for m in self.cluster.members:
                await asyncio.to_thread(self.cluster.stop_member, m)
            self.on_change()
            return web.json_response({"pids": self._pids()})

    async def _start(self, _: web.Request) -> web.Response:
        async with self._lock:
            for m in self.cluster.members:
                await asyncio.to_thread(self.cluster.start_member, m, wait=False)
            for m in self.cluster.members:
                await asyncio.to_thread(self.cluster.wait_healthy, m)
            self.on_change()
            return web.json_response({"pids": self._pids()})


async def _post(socket_path: str, path: str, within: float) -> list[int]:
    connector = aiohttp.UnixConnector(path=socket_path)
    async with (
        aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=within)
        ) as s,
        s.post("http://lab" + path) as r,
    ):
        r.raise_for_status()
        data = await r.json()
        return [int(p) for p in data["pids"]]


async def etcd_stop(socket_path: str, within: float = 30.0) -> list[int]:
    """Ask the lab to stop its etcd; returns the PIDs still running (none)."""
    return await _post(socket_path, "/etcd/stop", within)


async def etcd_start(socket_path: str, within: float = 60.0) -> list[int]:
    """Ask the lab to start its etcd again; returns the new PIDs once healthy."""
    return await _post(socket_path, "/etcd/start", within)
