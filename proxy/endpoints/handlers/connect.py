"""The connect handler (upstream's ``handlers.ConnectResource`` with
``proxy.UpgradeAwareHandler``): a subresource whose storage is a ``rest.Connecter``
(``pods/log``, ``pods/exec``, ``nodes/proxy``) resolves where the request goes, and
this handler proxies it there:

- a WebSocket upgrade (``kubectl exec``/``attach``/``cp``/``port-forward``: the
  ``v5.channel.k8s.io`` and ``SPDY/3.1+portforward.k8s.io`` subprotocols): the
  handshake is made with the target first, offering the client's subprotocols, and the
  client is answered with the one the target chose; then every message is relayed both
  ways until either side closes. A target that refuses the handshake answers as its
  Status (kubectl then tries SPDY, and reports what that attempt gets);
- a target that serves only upgraded connections (``upgrade_required``) answers any
  other request with 400 ``Upgrade request required``;
- anything else (``kubectl logs``, ``nodes/proxy``): the request is sent on and the
  answer streamed back as it arrives (``logs -f`` follows). A non-2xx answer of a
  storage that names an ``error_resource`` becomes a Status
  (``GenericHttpResponseChecker``: 400 BadRequest and 500 InternalError with the
  target's text).

Upstream translates a WebSocket client to SPDY towards the kubelet
(``StreamTranslatorHandler``); the kubelets here speak the WebSocket protocols
themselves, so the messages pass through unchanged. SPDY upgrades (kubectl's fallback,
older clients) are refused with a 400 that says so (docs/lab.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import logging
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
from aiohttp import web

from proxy import apierrors
from proxy.admission import handler as admission
from proxy.admission.attributes import CONNECT
from proxy.authorization.authorizer import Decision, attributes_for
from proxy.authorization.decision import authorize, forbidden
from proxy.egressselector import EgressDialError
from proxy.endpoints.context import API_CONTEXT
from proxy.endpoints.filters.authentication import is_secure
from proxy.endpoints.handlers.scope import RequestScope
from proxy.registry.rest import Connecter, ConnectTarget, Context
from proxy.request.request_info import RequestInfo
from proxy.request.user import request_user

__all__ = ["connect_options", "connect_resource"]

JSON = dict[str, Any]

log = logging.getLogger("watchcache.connect")

MAX_ERROR_BODY = 1 << 20  # upstream's maxReadLength of a target's error answer
_DIAL_TIMEOUT = 5.0
_CREATE_ON_UPGRADE = frozenset({"exec", "attach", "portforward"})
_HOP_BY_HOP = frozenset(("connection", "keep-alive", "proxy-connection", "transfer-encoding",
                         "upgrade", "te", "trailer", "authorization", "impersonate-user",
                         "impersonate-group", "host", "content-length"))  # fmt: skip


def _query(request: web.Request) -> Mapping[str, Sequence[str]]:
    out: dict[str, list[str]] = {}
    for key, value in request.query.items():
        out.setdefault(key, []).append(value)
    return out


def _upgrade(request: web.Request) -> str:
    """The protocol the client asks to upgrade to ("" when none)."""
    if "upgrade" not in request.headers.get("Connection", "").lower():
        return ""
    return request.headers.get("Upgrade", "").strip().lower()


async def connect_resource(
    request: web.Request, info: RequestInfo, scope: RequestScope, storage: Connecter
) -> web.StreamResponse:
    if request.method not in storage.connect_methods:
        raise apierrors.method_not_allowed()
    context = Context(namespace=info.namespace if scope.resource.namespaced else "",
                      user=request_user(request))  # fmt: skip
    path = "/".join(info.parts[3:])
    if request.path.endswith("/") and path:
        path += "/"
    upgrade = _upgrade(request)
    if upgrade == "websocket" and info.verb == "get" and info.subresource in _CREATE_ON_UPGRADE:
        _authorize_create(request, info)
    query = _query(request)
    await _admit(request, info, scope, context.namespace, path, query)
    target = await storage.connect(context, info.name, query, path)
    if upgrade == "websocket":
        return await _relay_websocket(request, target)
    if upgrade:
        raise apierrors.bad_request(
            f"upgrading to {request.headers.get('Upgrade')} is not supported by this server: "
            "use WebSocket (v5.channel.k8s.io, SPDY/3.1+portforward.k8s.io)"
        )
    if target.upgrade_required:
        raise apierrors.bad_request("Upgrade request required")
    return await _proxy_http(request, target)


# the options object of each connect subresource (what admission sees as the CONNECT's
# object, upstream's NewConnectOptions), from its query: (kind, bools, strings, lists)
_OPTIONS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "attach": ("PodAttachOptions", ("stdin", "stdout", "stderr", "tty"), ("container",), ()),
    "exec": ("PodExecOptions", ("stdin", "stdout", "stderr", "tty"), ("container",),
             ("command",)),
    "portforward": ("PodPortForwardOptions", (), (), ("ports",)),
}  # fmt: skip
_PROXY_OPTIONS = {"pods": "PodProxyOptions", "nodes": "NodeProxyOptions",
                  "services": "ServiceProxyOptions"}  # fmt: skip


def connect_options(
    plural: str, subresource: str, query: Mapping[str, Sequence[str]], path: str
) -> JSON | None:
    """The CONNECT's options object (``kind``, ``apiVersion`` v1 and the fields the
    query sets, as Go's JSON omits empty ones); None for a subresource that is not a
    connect one upstream (``pods/log`` is a read)."""
    if subresource == "proxy":
        kind = _PROXY_OPTIONS.get(plural)
        if kind is None:
            return None
        return {"kind": kind, "apiVersion": "v1", **({"path": "/" + path} if path else {})}
    spec = _OPTIONS.get(subresource)
    if spec is None:
        return None
    kind, bools, strings, lists = spec
    out: JSON = {"kind": kind, "apiVersion": "v1"}
    for name in bools:
        if (query.get(name) or [""])[-1] in ("true", "1"):
            out[name] = True
    for name in strings:
        if (query.get(name) or [""])[-1]:
            out[name] = query[name][-1]
    for name in lists:
        values = [int(v) if name == "ports" and v.isdigit() else v for v in query.get(name) or []]
        if values:
            out[name] = values
    return out


async def _admit(
    request: web.Request, info: RequestInfo, scope: RequestScope, namespace: str, path: str,
    query: Mapping[str, Sequence[str]],
) -> None:  # fmt: skip
    """Upstream's ConnectResource: the mutating then the validating admission of a
    CONNECT, its object the connect options (a webhook may refuse ``kubectl attach``)."""
    chain = request.app[API_CONTEXT].admission
    options = connect_options(scope.resource.plural, info.subresource, query, path)
    if chain is None or options is None:
        return
    attrs = admission.attributes(request, scope.resource, CONNECT, namespace, info.name,
                                 obj=options, subresource=info.subresource)  # fmt: skip
    attrs.kind_override = ("", "v1", str(options["kind"]))
    await chain.admit(attrs)
    await chain.validate(attrs)


def _authorize_create(request: web.Request, info: RequestInfo) -> None:
    """A WebSocket upgrade is a GET, authorized as ``get``; it must also be allowed to
    ``create`` the subresource, as the SPDY POST is (upstream's
    AuthorizePodWebsocketUpgradeCreatePermission, on by default since 1.35)."""
    authorizer = request.app[API_CONTEXT].authorizer
    user = request_user(request)
    if authorizer is None or user is None or not is_secure(request):
        return
    attrs = dataclasses.replace(attributes_for(user, info), verb="create")
    decision, reason = authorize(authorizer, attrs)
    if decision is not Decision.ALLOW:
        raise forbidden(attrs, reason)


def _target_error(target: ConnectTarget, code: int, text: str) -> apierrors.StatusError:
    """A target's non-2xx answer as a Status (upstream's GenericHttpResponseChecker)."""
    if code == 400:
        return apierrors.bad_request(text)
    if code == 500:
        return apierrors.internal_error(text)
    resource, _, group = target.error_resource.partition(".")
    details: dict[str, object] = {"name": target.name, "kind": resource}
    if group:
        details["group"] = group
    if code == 404:
        reason, message = "NotFound", apierrors.NOT_FOUND_MESSAGE
    else:
        reason = "Forbidden" if code == 403 else ""
        message = (f"the server responded with the status code {code} but did not return "
                   "more information")  # fmt: skip
    return apierrors.StatusError(apierrors.status_body(code, reason, message, details))


def _dial_error(target: ConnectTarget, err: BaseException, upgrade: bool) -> apierrors.StatusError:
    """A target that cannot be reached: a 500 with Go's words for the dial, as
    kube-apiserver answers (``Get "URL": dial tcp ...`` for a log,
    ``error dialing backend: ...`` for an upgrade)."""
    if isinstance(err, EgressDialError):  # the egress proxy's words, as upstream's dialer
        return apierrors.unknown_error(str(err))
    url = urllib.parse.urlsplit(target.url)
    os_error = getattr(err, "os_error", None) or err
    refused = getattr(os_error, "errno", None) == errno.ECONNREFUSED
    dial = (f"dial tcp {url.hostname}:{url.port}: connect: connection refused" if refused
            else f"dial tcp {url.hostname}:{url.port}: {os_error}")  # fmt: skip
    message = f"error dialing backend: {dial}" if upgrade else f'Get "{target.url}": {dial}'
    return apierrors.unknown_error(message)


def _connector(target: ConnectTarget) -> aiohttp.BaseConnector | None:
    """The connector of the target's transport (None: aiohttp's own, dialling directly)."""
    connector: aiohttp.BaseConnector | None = (
        target.transport() if target.transport is not None else None)
    return connector


def _forwarded_headers(request: web.Request) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP
            and not k.lower().startswith("sec-websocket")}  # fmt: skip


async def _proxy_http(request: web.Request, target: ConnectTarget) -> web.StreamResponse:
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=_DIAL_TIMEOUT)
    body = await request.read() if request.body_exists else None
    async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False,
                                     connector=_connector(target)) as session:  # fmt: skip
        try:
            upstream = await session.request(request.method, target.url, data=body,
                                             headers=_forwarded_headers(request), ssl=target.tls,
                                             allow_redirects=False)  # fmt: skip
        except (aiohttp.ClientError, OSError) as e:
            raise _dial_error(target, e, upgrade=False) from e
        async with upstream:
            if target.error_resource and not 200 <= upstream.status <= 206:
                text = (await upstream.content.read(MAX_ERROR_BODY)).decode("utf-8", "replace")
                raise _target_error(target, upstream.status, text.rstrip("\n"))
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in _HOP_BY_HOP:
                    response.headers.add(name, value)
            await response.prepare(request)
            with contextlib.suppress(aiohttp.ClientError, ConnectionResetError):
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
            with contextlib.suppress(ConnectionResetError):
                await response.write_eof()
            return response


def _protocols(request: web.Request) -> list[str]:
    offered = request.headers.get("Sec-WebSocket-Protocol", "")
    return [p.strip() for p in offered.split(",") if p.strip()]


async def _relay_websocket(request: web.Request, target: ConnectTarget) -> web.StreamResponse:
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=_DIAL_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout, connector=_connector(target)) as session:
        try:
            backend = await session.ws_connect(
                target.url, protocols=_protocols(request), ssl=target.tls, max_msg_size=0,
                headers=_forwarded_headers(request), autoping=True,
            )  # fmt: skip
        except aiohttp.WSServerHandshakeError as e:
            raise _target_error(target, e.status, e.message) from e
        except (aiohttp.ClientError, OSError) as e:
            raise _dial_error(target, e, upgrade=True) from e
        client = web.WebSocketResponse(
            protocols=(backend.protocol,) if backend.protocol else (), max_msg_size=0
        )
        await client.prepare(request)
        pumps = [asyncio.create_task(_pump(backend, client)),
                 asyncio.create_task(_pump(client, backend))]  # fmt: skip
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            await backend.close()
            await client.close(code=backend.close_code or aiohttp.WSCloseCode.OK)
        return client


async def _pump(
    source: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
    sink: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
) -> None:
    """Relay ``source``'s data messages to ``sink`` until ``source`` closes."""
    async for message in source:
        if message.type == aiohttp.WSMsgType.BINARY:
            await sink.send_bytes(message.data)
        elif message.type == aiohttp.WSMsgType.TEXT:
            await sink.send_str(message.data)
