"""The simulated cluster's network egress for the API server: what konnectivity-server
in ``--mode=http-connect`` with ``--uds-name`` is to kube-apiserver (the ``cluster``
egress of its ``--egress-selector-config-file``), so that ``pods/proxy`` and
``services/proxy`` reach pod IPs that exist nowhere on this host.

On a UNIX socket it answers ``CONNECT IP:PORT HTTP/1.1``:

- an IP that a running simulated pod holds (``status.podIP``, from the pods informer)
  and a port one of its containers declares: ``200 Connection established``, and the
  tunnel is that container's tiny HTTP responder (the one ``kubectl port-forward``
  reaches, :mod:`lab.sim.portforward`): one answer naming the pod, container and port
  and echoing the request line, then the connection closes;
- anything else: ``503`` with the dial's error as its reason, as a proxy whose agent
  could not connect (nothing listens there). No real socket is ever opened towards an
  address: nothing of the lab host is reachable through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

from lab.sim.client import JSON
from lab.sim.portforward import declared_container, http_response

__all__ = ["KonnectivityServer", "egress_selector_config"]

log = logging.getLogger("watchcache.sim")

_MAX_HEAD = 64 * 1024
_MAX_BODY = 1 << 20
_READ_TIMEOUT = 30.0


def egress_selector_config(path: Path, uds: Path) -> Path:
    """Write the API server's ``--egress-selector-config-file`` at ``path``: its cluster
    egress through the socket ``uds``; ``path``."""
    path.write_text(
        "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n"
        "egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n"
        f"    transport:\n      uds:\n        udsName: {uds}\n"
    )
    return path


def _split_host_port(authority: str) -> tuple[str, int] | None:
    host, _, port = authority.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


class KonnectivityServer:
    """The HTTP CONNECT egress on ``path`` over the pods ``pods()`` returns."""

    def __init__(self, path: str, pods: Callable[[], list[JSON]]) -> None:
        self.path = path
        self.pods = pods
        self.tunnels = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a socket a previous run left
        self._server = await asyncio.start_unix_server(self._serve, self.path)
        os.chmod(self.path, 0o600)  # the API server runs as the same user

    async def run(self) -> None:
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

    def _pod_at(self, ip: str) -> JSON | None:
        for pod in self.pods():
            status = pod.get("status") or {}
            ips = {status.get("podIP")} | {i.get("ip") for i in status.get("podIPs") or []}
            if ip in ips and status.get("phase") == "Running":
                return pod
        return None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_READ_TIMEOUT):
                await self._tunnel(reader, writer)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ConnectionError) as e:  # fmt: skip
            log.info("konnectivity: tunnel ended: %s", e)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
        target = _split_host_port(rest.partition(" ")[0])
        if method != "CONNECT" or target is None:
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        ip, port = target
        pod = self._pod_at(ip)
        container = declared_container(pod, port) if pod is not None else None
        if pod is None or container is None:
            writer.write(f"HTTP/1.1 503 dial tcp {ip}:{port}: connect: connection refused"
                         "\r\n\r\n".encode())  # fmt: skip
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.tunnels += 1
        request = await _read_request(reader)
        writer.write(http_response(pod, container, port, request))
        await writer.drain()


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    """One HTTP request from the tunnel (its head, and its body by Content-Length)."""
    head = b""
    while b"\r\n\r\n" not in head and len(head) < _MAX_HEAD:
        chunk = await reader.read(4096)
        if not chunk:
            break
        head += chunk
    for line in head.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            missing = int(value) - len(head.split(b"\r\n\r\n", 1)[-1])
            if 0 < missing <= _MAX_BODY:
                head += await reader.readexactly(missing)
    return head
