"""The listening sockets of a serving process: its plain port, its secure port, and a
worker's private port (``--workers`` N > 1: where its own loopback client and the tests
reach that one process). Each prints its "serving on" line once it listens."""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import ssl

from aiohttp import web

from proxy.loopback.config import loopback_host
from proxy.server.port_in_use import PortInUse
from proxy.server.settings import Settings
from proxy.server.worker import WorkerIdentity

__all__ = ["is_loopback", "start_private_site", "start_site"]

log = logging.getLogger("watchcache.proxy")


async def start_site(
    runner: web.AppRunner,
    host: str,
    settings: Settings,
    port: int,
    ssl_context: ssl.SSLContext | None,
    *,
    reuse_port: bool = False,
    label: str = "",
) -> int:
    """Listen on ``host``:``port``; the port bound (``port`` may be 0), or
    :class:`PortInUse` (not a bare OSError) when the port is taken. ``reuse_port``:
    share it with the other workers (SO_REUSEPORT); ``label`` goes before "serving on"
    (a worker's private port, which launchers waiting for "serving on" must not take
    for the server's)."""
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context, reuse_port=reuse_port or None)
    try:
        await site.start()
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            flag = "--port" if ssl_context is None else "--secure-port"
            raise PortInUse.of(e, host, port, flag) from e
        raise
    bound = port
    server = site._server  # aiohttp exposes the bound port only through the server
    sockets = getattr(server, "sockets", None)  # asyncio's Server or uvloop's
    if sockets:
        bound = int(sockets[0].getsockname()[1])
    scheme = "https" if ssl_context is not None else "http"
    print(f"{label} serving on {scheme}://{host}:{bound}".lstrip(), flush=True)
    log.info(
        "serving on %s://%s:%d (etcd %s, prefix %s)",
        scheme, host, bound, ",".join(settings.etcd_servers), settings.etcd_prefix,
    )  # fmt: skip
    return bound


async def start_private_site(
    runner: web.AppRunner,
    settings: Settings,
    worker: WorkerIdentity,
    ssl_context: ssl.SSLContext | None,
) -> int:
    """A free port on loopback, of the kind the API is served on (HTTPS with the same
    authentication when there is a secure port), for this worker alone."""
    if ssl_context is not None:
        address = settings.bind_address
    else:
        address = settings.insecure_bind_address or settings.bind_address
    host = loopback_host(address).strip("[]")
    label = f"worker {worker.index} (pid {os.getpid()})"
    return await start_site(runner, host, settings, 0, ssl_context, label=label)


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"
