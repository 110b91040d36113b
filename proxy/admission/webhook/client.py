"""Calling one webhook over HTTPS (kube's ``webhook.ClientManager`` and
``util/webhook``): where to (``url``, or ``service`` resolved as below), with which
trust (``caBundle``, else the system's), bounded by ``timeoutSeconds``.

A ``service`` reference is resolved as kube-apiserver does without a service network:
the Service's Endpoints (the first ready address and the port of the Service port
asked for). Lab fallback: a Service with no ready address is reached on 127.0.0.1 at its
``targetPort`` (the lab's webhooks run on the lab machine). TLS is verified against
``<name>.<namespace>.svc`` either way, as upstream's ServerName.

``WebhookCallError`` carries upstream's ``failed to call webhook: ...`` reason: Go's
words for the same failures (``dial tcp ...: connect: connection refused``,
``context deadline exceeded``) so that messages match kube-apiserver's.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import functools
import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from yarl import URL

from proxy.admission.interfaces import ObjectLookup

__all__ = ["Target", "WebhookCallError", "call", "resolve"]

JSON = dict[str, Any]


class WebhookCallError(Exception):
    """The call failed (``failed to call webhook: <reason>`` upstream)."""


@dataclass(frozen=True)
class Target:
    url: str  # as shown in errors (the service DNS name for a service reference)
    connect_host: str
    connect_port: int
    server_name: str
    ca_bundle: str


@functools.lru_cache(maxsize=64)
def _ssl_context(ca_bundle: str) -> ssl.SSLContext:
    if not ca_bundle:
        return ssl.create_default_context()
    return ssl.create_default_context(cadata=base64.b64decode(ca_bundle).decode())


async def resolve(client_config: JSON, lookup: ObjectLookup) -> Target:
    """Where a webhook's ``clientConfig`` points."""
    ca = str(client_config.get("caBundle") or "")
    url = client_config.get("url")
    if url:
        parsed = URL(str(url))
        host = parsed.host or ""
        return Target(str(url), host, parsed.port or 443, host, ca)
    service = client_config.get("service") or {}
    ns, name = str(service.get("namespace") or ""), str(service.get("name") or "")
    port = int(service.get("port") or 443)
    path = str(service.get("path") or "")
    dns = f"{name}.{ns}.svc"
    host, target_port = await _service_address(lookup, ns, name, port)
    return Target(f"https://{dns}:{port}{path}", host, target_port, dns, ca)


async def _service_address(lookup: ObjectLookup, ns: str, name: str, port: int) -> tuple[str, int]:
    svc = await lookup.get("", "services", ns, name)
    if svc is None:
        raise WebhookCallError(f'service "{name}" not found')
    spec_ports = (svc.get("spec") or {}).get("ports") or []
    chosen = next((p for p in spec_ports if int(p.get("port") or 0) == port), None)
    if chosen is None:
        raise WebhookCallError(f'unable to find service port {port} of service "{ns}/{name}"')
    target = chosen.get("targetPort", port)
    target_port = int(target) if str(target).isdigit() else port
    endpoints = await lookup.get("", "endpoints", ns, name)
    for subset in (endpoints or {}).get("subsets") or ():
        addresses: list[JSON] = subset.get("addresses") or []
        ports: list[JSON] = subset.get("ports") or []
        match = next((p for p in ports if p.get("name") == chosen.get("name")), None)
        if addresses and (match or ports):
            return str(addresses[0]["ip"]), int((match or ports[0])["port"])
    return "127.0.0.1", target_port  # the lab fallback (docs/admission.md)


def _go_error(target: Target, e: BaseException) -> str:
    """Go's words for a failed POST."""
    where = f"{target.connect_host}:{target.connect_port}"
    if isinstance(e, aiohttp.ClientConnectorCertificateError):
        reason = getattr(e.certificate_error, "reason", e)
        return f"tls: failed to verify certificate: x509: {reason}"
    if isinstance(e, aiohttp.ClientConnectorError):
        if e.os_error.errno == errno.ECONNREFUSED:
            return f"dial tcp {where}: connect: connection refused"
        return f"dial tcp {where}: {e.os_error.strerror or e.os_error}"
    if isinstance(e, TimeoutError):
        return "context deadline exceeded"
    return str(e) or type(e).__name__


async def call(target: Target, review: JSON, timeout_seconds: float) -> JSON:
    """POST ``review`` and decode the answer; ``WebhookCallError`` on any failure,
    never later than ``timeout_seconds``."""
    sep = "&" if "?" in target.url else "?"
    shown = f"{target.url}{sep}timeout={int(timeout_seconds)}s"
    try:
        parsed = URL(shown)
        url = URL.build(scheme="https", host=target.connect_host, port=target.connect_port,
                        path=parsed.path or "/", query_string=parsed.query_string)
    except ValueError as e:  # stored before validation refused such URLs (or put in etcd)
        raise WebhookCallError(f'Post "{shown}": {e}') from None
    try:
        context = _ssl_context(target.ca_bundle)
    except (ValueError, ssl.SSLError):
        raise WebhookCallError(
            "unable to load root certificates: unable to parse bytes as PEM block"
        ) from None
    connector = aiohttp.TCPConnector(ssl=context, force_close=True)
    body = orjson.dumps(review)
    try:
        async with (
            asyncio.timeout(timeout_seconds),
            aiohttp.ClientSession(connector=connector) as session,
            session.post(
                url, data=body, server_hostname=target.server_name,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
            ) as resp,
        ):
            raw = await resp.read()
            status = resp.status
    except (aiohttp.ClientError, TimeoutError, OSError) as e:
        raise WebhookCallError(f'Post "{shown}": {_go_error(target, e)}') from None
    if status < 200 or status >= 300:
        raise WebhookCallError(
            f"an error on the server ({raw[:200].decode(errors='replace')}) has prevented "
            "the request from succeeding"
        )
    try:
        decoded = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        first = raw.lstrip()[:1].decode(errors="replace")
        why = f"invalid character '{first}' looking for beginning of value" if first else str(e)
        raise WebhookCallError(f"couldn't get version/kind; json parse error: {why}") from None
    if not isinstance(decoded, dict):
        raise WebhookCallError(
            "couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{type(decoded).__name__} into Go value of type struct"
        )
    return decoded
