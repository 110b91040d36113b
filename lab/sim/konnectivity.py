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
- a container of the agnhost test image run as ``webhook`` or ``crd-conversion-webhook``
  (what upstream's e2e suite deploys for its admission and conversion webhooks), on
  the port its ``--port`` names: the bytes are spliced to that container's simulated
  server (:mod:`lab.sim.agnhost`), which speaks TLS with the pod's mounted certificate;
- a node's kubelet (an address in a Node's ``status.addresses`` and its
  ``daemonEndpoints.kubeletEndpoint.Port``): ``200``, and the bytes are spliced to that
  simulated kubelet's socket, so the server's ``pods/log``, ``exec``, ``port-forward``
  and ``nodes/proxy`` travel the same egress, as kube-apiserver's kubelet client does;
- anything else: ``503`` with the dial's error as its reason, as a proxy whose agent
  could not connect (nothing listens there). No socket is opened but to the simulated
  kubelets the Nodes name: nothing else of the lab host is reachable through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from lab.sim.agnhost import AgnhostServers
from lab.sim.client import JSON
from lab.sim.portforward import declared_container, http_response

__all__ = ["KonnectivityServer", "egress_selector_config", "kubelet_endpoints"]

log = logging.getLogger("watchcache.sim")

_MAX_HEAD = 64 * 1024
_MAX_BODY = 1 << 20
_READ_TIMEOUT = 30.0
_DIAL_TIMEOUT = 5.0
_CHUNK = 64 * 1024


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


def kubelet_endpoints(nodes: list[JSON]) -> set[tuple[str, int]]:
    """(address, port) of every node's kubelet, as the Nodes post them."""
    out = set()
    for node in nodes:
        status = node.get("status") or {}
        port = int(((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {})
                   .get("Port") or 0)  # fmt: skip
        for a in status.get("addresses") or [] if port else []:
            out.add((str(a.get("address")), port))
    return out


class KonnectivityServer:
    """The HTTP CONNECT egress on ``path`` over the pods ``pods()`` returns and the
    nodes ``nodes()`` returns (their kubelets)."""

    def __init__(
        self, path: str, pods: Callable[[], list[JSON]],
        nodes: Callable[[], list[JSON]] = list, agnhost: AgnhostServers | None = None,
    ) -> None:  # fmt: skip
        self.path = path
        self.pods = pods
        self.nodes = nodes
        self.agnhost = agnhost
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
        if self.agnhost is not None:
            await self.agnhost.close()

    def _pod_at(self, ip: str) -> JSON | None:
        for pod in self.pods():
            status = pod.get("status") or {}
            ips = {status.get("podIP")} | {i.get("ip") for i in status.get("podIPs") or []}
            if ip in ips and status.get("phase") == "Running":
                return pod
        return None

    async def _agnhost(self, pod: JSON, container: str, port: int) -> str | None:
        """The socket of the simulated agnhost server that container runs on ``port``."""
        if self.agnhost is None:
            return None
        live = {str((p.get("metadata") or {}).get("uid")) for p in self.pods()}
        await self.agnhost.prune(live)
        return await self.agnhost.socket_for(pod, container, port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_READ_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
            await self._tunnel(head, reader, writer)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ConnectionError) as e:  # fmt: skip
            log.info("konnectivity: tunnel ended: %s", e)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _tunnel(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
        target = _split_host_port(rest.partition(" ")[0])
        if method != "CONNECT" or target is None:
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        ip, port = target
        if target in kubelet_endpoints(self.nodes()):
            await _splice(f"{ip}:{port}", asyncio.open_connection(ip, port), reader, writer,
                          "the kubelet")  # fmt: skip
            return
        pod = self._pod_at(ip)
        container = declared_container(pod, port) if pod is not None else None
        if pod is None or container is None:
            writer.write(f"HTTP/1.1 503 dial tcp {ip}:{port}: connect: connection refused"
                         "\r\n\r\n".encode())  # fmt: skip
            return
        served = await self._agnhost(pod, container, port)
        if served is not None:
            await _splice(f"{ip}:{port}", asyncio.open_unix_connection(served), reader, writer,
                          f"the agnhost server of container {container}")  # fmt: skip
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.tunnels += 1
        async with asyncio.timeout(_READ_TIMEOUT):
            request = await _read_request(reader)
        writer.write(http_response(pod, container, port, request))
        await writer.drain()


async def _splice(
    where: str,
    dial: Coroutine[Any, Any, tuple[asyncio.StreamReader, asyncio.StreamWriter]],
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, what: str,
) -> None:  # fmt: skip
    """The tunnel to ``what`` at ``where`` (a simulated kubelet, or a simulated agnhost
    server), connected by ``dial``: both ways until either side ends."""
    try:
        async with asyncio.timeout(_DIAL_TIMEOUT):
            up_reader, up_writer = await dial
    except (OSError, TimeoutError) as e:
        writer.write(f"HTTP/1.1 503 dial tcp {where}: {e}\r\n\r\n".encode())
        return
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    log.info("konnectivity: a tunnel to %s at %s", what, where)
    try:
        await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
    finally:
        up_writer.close()


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while chunk := await source.read(_CHUNK):
            sink.write(chunk)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()


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
