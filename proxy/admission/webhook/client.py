"""Calling one webhook over HTTPS (kube's ``webhook.ClientManager`` and
``util/webhook``): where to (``url``, or ``service`` resolved as below), with which
trust (``caBundle``, else the system's), bounded by ``timeoutSeconds``.

A ``service`` reference is resolved as kube-apiserver does without a service network:
a ready address of the Service's EndpointSlices, else of its Endpoints, with the port
of the Service port asked for (``service_resolver.resolve_endpoint``). That address is
a pod's, so it is dialled through the egress selector's
``cluster`` network when one is configured (``--egress-selector-config-file``), as
upstream's webhook client dials through its ``Cluster`` egress: the lab's simulated
cluster reaches its pods that way (docs/lab.md). Lab fallback: a Service with no ready
address is reached on 127.0.0.1 at its ``targetPort`` (the lab's own webhooks run on the
lab machine), directly, as is a ``url`` webhook. TLS is verified against
``<name>.<namespace>.svc`` either way, as upstream's ServerName.

``WebhookCallError`` carries upstream's ``failed to call webhook: ...`` reason: Go's
words for the same failures (``dial tcp ...: connect: connection refused``,
``context deadline exceeded``) so that messages match kube-apiserver's.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import ssl
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from yarl import URL

from proxy.admission.interfaces import ClusterTransport, ObjectLookup
from proxy.admission.webhook import service_resolver
from proxy.admission.webhook.dial_errors import go_dial_error

__all__ = ["Target", "WebhookCallError", "call", "go_error", "post", "resolve"]

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
    in_cluster: bool = False  # a pod's address (an Endpoints address): the cluster egress


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
    host, target_port, in_cluster = await _service_address(lookup, ns, name, port)
    return Target(f"https://{dns}:{port}{path}", host, target_port, dns, ca, in_cluster)


async def _service_address(
    lookup: ObjectLookup, ns: str, name: str, port: int
) -> tuple[str, int, bool]:
    svc = await lookup.get("", "services", ns, name)
    if svc is None:
        raise WebhookCallError(f'service "{name}" not found')
    spec_ports = (svc.get("spec") or {}).get("ports") or []
    chosen = next((p for p in spec_ports if int(p.get("port") or 0) == port), None)
    if chosen is None:
        raise WebhookCallError(f'unable to find service port {port} of service "{ns}/{name}"')
    target = chosen.get("targetPort", port)
    target_port = int(target) if str(target).isdigit() else port
    try:  # a ready address of its EndpointSlices, else of its Endpoints
        found = await service_resolver.resolve_endpoint(lookup.get, lookup.list, ns, name, port)
    except service_resolver.ResolveError:
        found = None
    if found is not None:
        return found.host, found.port, True
    return "127.0.0.1", target_port, False  # the lab fallback (docs/admission.md)


def go_error(target: Target, e: BaseException) -> str:
    """Go's words for a failed POST (a tunnel through the egress raises the TLS error
    itself, a direct connection wraps it: both read the same)."""
    if isinstance(e, TimeoutError):
        return "context deadline exceeded"
    if isinstance(e, aiohttp.ClientOSError | ssl.SSLError | ConnectionError):
        return go_dial_error(target.connect_host, target.connect_port, e)
    return str(e) or type(e).__name__


async def call(
    target: Target, review: JSON, timeout_seconds: float, cluster: ClusterTransport | None = None
) -> JSON:
    """POST ``review`` and decode the answer; ``WebhookCallError`` on any failure,
    never later than ``timeout_seconds``. ``cluster``: the egress to pod addresses."""
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
    body = orjson.dumps(review)
    raw, status = await _post(target, url, shown, body, context, timeout_seconds, cluster)
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


async def post(
    target: Target, url: URL, body: bytes, timeout_seconds: float,
    cluster: ClusterTransport | None = None, context: ssl.SSLContext | None = None,
) -> tuple[bytes, int]:  # fmt: skip
    """One POST of ``body`` to the webhook (through ``cluster`` for a pod's address):
    the answer's bytes and status. aiohttp's errors come out."""
    if context is None:
        context = _ssl_context(target.ca_bundle)
    tunnel = target.in_cluster and cluster is not None
    connector = cluster() if tunnel and cluster else aiohttp.TCPConnector(force_close=True)
    async with (
        asyncio.timeout(timeout_seconds),
        aiohttp.ClientSession(connector=connector) as session,
        session.post(
            url, data=body, server_hostname=target.server_name, ssl=context,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        ) as resp,
    ):  # fmt: skip
        return await resp.read(), resp.status


async def _post(
    target: Target, url: URL, shown: str, body: bytes, context: ssl.SSLContext,
    timeout_seconds: float, cluster: ClusterTransport | None,
) -> tuple[bytes, int]:  # fmt: skip
    try:
        return await post(target, url, body, timeout_seconds, cluster, context)
    except (aiohttp.ClientError, TimeoutError, OSError) as e:
        raise WebhookCallError(f'Post "{shown}": {go_error(target, e)}') from None
