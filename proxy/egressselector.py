"""The egress selector (upstream's ``k8s.io/apiserver/pkg/server/egressselector``): how
this server reaches the cluster's network — the kubelets (``pods/log``, ``exec``,
``attach``, ``portforward``, ``nodes/proxy``) and pod IPs (``pods/proxy``,
``services/proxy``) — from ``--egress-selector-config-file``, an
``EgressSelectorConfiguration`` (``apiserver.k8s.io/v1beta1``)::

    egressSelections:
    - name: cluster
      connection:
        proxyProtocol: HTTPConnect        # or Direct (the default without a file)
        transport:
          uds: {udsName: /path/konnectivity-server.socket}
          # or tcp: {url: http://HOST:PORT}

``HTTPConnect`` opens a tunnel per connection as upstream's ``tunnelHTTPConnect``:
``CONNECT IP:PORT HTTP/1.1`` to the proxy (konnectivity-server in ``http-connect``
mode), whose 200 leaves a byte stream to the target; any other answer is the dial's
error. The lab's simulated cluster serves such a proxy (docs/lab.md). Not served: the
``GRPC`` protocol, TLS to the proxy, and a non-``Direct`` ``controlplane`` or ``etcd``
selection (a ConfigError that says so). Admission and conversion webhooks whose
``service`` resolves to a pod's address go through the ``cluster`` egress, as upstream's;
aggregated API servers (which upstream also sends through it) and ``url`` webhooks are
dialled directly.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler

from proxy.options.settings import ConfigError, load_config_file

__all__ = ["EgressDialError", "EgressSelector", "HTTPConnectDialer", "load_egress_selector"]

_API_VERSIONS = ("apiserver.k8s.io/v1beta1", "apiserver.k8s.io/v1alpha1")
_NAMES = ("cluster", "controlplane", "etcd")
_MAX_CONNECT_ANSWER = 16 * 1024


class EgressDialError(aiohttp.ClientConnectionError):
    """The proxy would not open the tunnel (upstream's words, served as the request's
    500 by the proxy subresources)."""


@dataclass(frozen=True)
class HTTPConnectDialer:
    """Opens a tunnel to ``host:port`` through an HTTP CONNECT proxy on a UNIX socket
    (``uds``) or at ``host:port`` of a ``tcp`` URL."""

    uds: str = ""
    tcp: tuple[str, int] | None = None

    @property
    def address(self) -> str:
        return self.uds or (f"{self.tcp[0]}:{self.tcp[1]}" if self.tcp else "")

    async def dial(self, host: str, port: int) -> socket.socket:
        """A connected, non-blocking socket whose bytes reach ``host:port``."""
        loop = asyncio.get_running_loop()
        family = socket.AF_UNIX if self.uds else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            await loop.sock_connect(sock, self.uds or self.tcp)  # type: ignore[arg-type]
            await loop.sock_sendall(sock, f"CONNECT {addr} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                                    .encode())  # fmt: skip
            status_line = await _read_answer(loop, sock)
        except OSError as e:
            sock.close()
            raise EgressDialError(f"dial {self.address}: {e.strerror or e}") from e
        except EgressDialError as e:
            sock.close()
            raise EgressDialError(f"reading HTTP response from CONNECT to {addr} via proxy "
                                  f"{self.address} failed: {e}") from None  # fmt: skip
        parts = status_line.split(" ", 2)
        code = parts[1] if len(parts) > 1 else ""
        if code != "200":
            sock.close()
            status = " ".join(parts[1:])
            raise EgressDialError(f"proxy error from {self.address} while dialing {addr}, "
                                  f"code {code}: {status}")  # fmt: skip
        return sock


async def _read_answer(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> str:
    """The proxy's answer to CONNECT, read up to its blank line and no further (the
    bytes after it are the target's); its status line."""
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = await loop.sock_recv(sock, 1)
        if not chunk:
            raise EgressDialError("unexpected EOF")
        head += chunk
        if len(head) > _MAX_CONNECT_ANSWER:
            raise EgressDialError("answer too long")
    return head.split(b"\r\n", 1)[0].decode("latin-1")


class _TunnelConnector(aiohttp.BaseConnector):
    """An aiohttp connector whose every connection is a tunnel of ``dialer`` (as
    ``UnixConnector`` connects to its socket)."""

    def __init__(self, dialer: HTTPConnectDialer) -> None:
        super().__init__(force_close=True)
        self._dialer = dialer

    async def _create_connection(
        self, req: aiohttp.ClientRequest, traces: list[Any], timeout: aiohttp.ClientTimeout  # noqa: ASYNC109 - aiohttp's signature
    ) -> ResponseHandler:
        host, port = req.url.host or "", req.url.port or 80
        sock = await asyncio.wait_for(self._dialer.dial(host.strip("[]"), port),
                                      timeout.sock_connect)  # fmt: skip
        tls = _client_tls(req.ssl) if req.url.scheme == "https" else None
        name = req.server_hostname or host  # a webhook's <svc>.<ns>.svc, else the host
        _, proto = await self._loop.create_connection(
            self._factory, sock=sock, ssl=tls, server_hostname=name if tls else None
        )
        return proto


def _client_tls(ssl_option: object) -> ssl.SSLContext:
    """The TLS context of a request's ``ssl`` option (False: not verified)."""
    if isinstance(ssl_option, ssl.SSLContext):
        return ssl_option
    ctx = ssl.create_default_context()
    if ssl_option is False:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


@dataclass(frozen=True)
class EgressSelector:
    """The ``cluster`` network's dialer (None: direct)."""

    cluster: HTTPConnectDialer | None = None

    def cluster_transport(self) -> Callable[[], aiohttp.BaseConnector] | None:
        """A factory of the connector a request to the cluster network uses (None: the
        default, direct one)."""
        dialer = self.cluster
        if dialer is None:
            return None
        return lambda: _TunnelConnector(dialer)


def load_egress_selector(path: str) -> EgressSelector:
    """``--egress-selector-config-file`` ("": every network dialled directly)."""
    if not path:
        return EgressSelector()
    flag = "--egress-selector-config-file"
    try:
        data = load_config_file(path)
    except ConfigError as e:
        raise ConfigError(f"{flag}: {e}") from None
    if data.get("kind") != "EgressSelectorConfiguration":
        raise ConfigError(f"{flag}: {path} is not an EgressSelectorConfiguration")
    if data.get("apiVersion") not in _API_VERSIONS:
        raise ConfigError(f"{flag}: unsupported apiVersion {data.get('apiVersion')!r} "
                          f"(one of {', '.join(_API_VERSIONS)})")  # fmt: skip
    cluster: HTTPConnectDialer | None = None
    for selection in data.get("egressSelections") or []:
        name = str((selection or {}).get("name") or "")
        if name == "master":  # the name "controlplane" had before 1.20
            name = "controlplane"
        if name not in _NAMES:
            raise ConfigError(f"{flag}: unknown egress selection {name!r} (one of "
                              f"{', '.join(_NAMES)})")  # fmt: skip
        dialer = _connection(flag, name, (selection or {}).get("connection") or {})
        if dialer is not None and name != "cluster":
            raise ConfigError(f"{flag}: the {name} egress can only be Direct in watchcache")
        if name == "cluster":
            cluster = dialer
    return EgressSelector(cluster)


def _connection(flag: str, name: str, connection: dict[str, Any]) -> HTTPConnectDialer | None:
    protocol = connection.get("proxyProtocol") or "Direct"
    if protocol == "Direct":
        return None
    if protocol != "HTTPConnect":
        raise ConfigError(f"{flag}: {name}: proxyProtocol {protocol!r} is not supported by "
                          "watchcache (Direct, HTTPConnect)")  # fmt: skip
    transport = connection.get("transport") or {}
    uds = (transport.get("uds") or {}).get("udsName") or ""
    tcp = (transport.get("tcp") or {}).get("url") or ""
    if bool(uds) == bool(tcp):
        raise ConfigError(f"{flag}: {name}: HTTPConnect needs exactly one of transport.uds."
                          "udsName and transport.tcp.url")  # fmt: skip
    if uds:
        return HTTPConnectDialer(uds=str(uds))
    url = urllib.parse.urlsplit(str(tcp))
    if url.scheme != "http" or not url.hostname or not url.port:
        raise ConfigError(f"{flag}: {name}: transport.tcp.url {tcp!r} must be http://HOST:PORT "
                          "(TLS to the proxy is not supported by watchcache)")  # fmt: skip
    return HTTPConnectDialer(tcp=(url.hostname, url.port))
