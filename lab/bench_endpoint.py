"""An endpoint the reference bench measures (:mod:`lab.bench_reference`): a server's URL,
headers and TLS context, taken from a URL and a kubeconfig, and its local process."""

from __future__ import annotations

import base64
import contextlib
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import psutil  # type: ignore[import-untyped]
import yaml

__all__ = ["Endpoint", "listening_pid", "reference_endpoint"]


@dataclass
class Endpoint:
    """One server under test: how to reach it, and its process when known."""

    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    ssl: ssl.SSLContext | bool = True
    pid: int | None = None

    def session(self, **kw: Any) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(ssl=self.ssl, limit=kw.pop("limit", 100))
        timeout = aiohttp.ClientTimeout(total=kw.pop("total", 600))
        return aiohttp.ClientSession(connector=connector, headers=self.headers,
                                     timeout=timeout, **kw)  # fmt: skip


def _file(data_b64: str | None, path: str | None, tmp: Path, name: str) -> str | None:
    if data_b64:
        out = tmp / name
        out.write_bytes(base64.b64decode(data_b64))
        return str(out)
    return path


def reference_endpoint(url: str, kubeconfig: Path | None, tmp: Path) -> Endpoint:
    """The reference from ``url`` and the current context of ``kubeconfig`` (its
    server when ``url`` is empty; token, token file or client certificate; CA or
    ``insecure-skip-tls-verify``). ``tmp`` receives certificate data as files."""
    if kubeconfig is None:
        return Endpoint("reference", url.rstrip("/"))
    doc = yaml.safe_load(kubeconfig.read_text())
    current = doc.get("current-context")
    ctx = next(c["context"] for c in doc["contexts"] if c["name"] == current)
    cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
    users = doc.get("users") or []
    user: dict[str, Any] = next((u["user"] for u in users if u["name"] == ctx.get("user")), {})
    server = (url or cluster["server"]).rstrip("/")
    headers: dict[str, str] = {}
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text().strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    context: ssl.SSLContext | bool = True
    if server.startswith("https"):
        ca = _file(cluster.get("certificate-authority-data"),
                   cluster.get("certificate-authority"), tmp, "ca.crt")  # fmt: skip
        context = ssl.create_default_context(cafile=ca)
        if cluster.get("insecure-skip-tls-verify"):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        cert = _file(user.get("client-certificate-data"), user.get("client-certificate"),
                     tmp, "client.crt")  # fmt: skip
        key = _file(user.get("client-key-data"), user.get("client-key"), tmp, "client.key")
        if cert and key:
            context.load_cert_chain(cert, key)
    return Endpoint("reference", server, headers, context)


def listening_pid(url: str) -> int | None:
    """The local process listening on ``url``'s port, if it is on this machine."""
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    with contextlib.suppress(psutil.Error, OSError):
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                return int(conn.pid) if conn.pid else None
    return None
