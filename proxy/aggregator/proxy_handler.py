"""``/apis/<group>/<version>/...`` of a remote APIService, proxied to its extension
server (kube-aggregator's ``proxyHandler``), after this server's authentication,
impersonation, flow control and authorization (the handler chain runs first, as
upstream's aggregator chain does).

- A local APIService (no ``spec.service``), or none: the request goes on to this
  server's own handlers.
- Not ``Available``, or a service that does not resolve: 503 with upstream's plain-text
  body ``service unavailable`` (``http.Error``).
- A caBundle or client certificate that cannot be used: 500 with the error.
- Otherwise the request (method, path, query, body, headers minus credentials) goes to
  the backend over TLS with the front-proxy certificate and the ``X-Remote-*`` identity;
  its answer is streamed back as it arrives (watches included). A backend that cannot
  be reached: 503 with the error as text (upstream's ``responder.Error``); one that fails
  after its answer started: the response is cut (as any started response here).
"""

from __future__ import annotations

import logging
import ssl
from typing import Protocol

import aiohttp
from aiohttp import web

from proxy.admission.webhook.dial_errors import go_dial_error
from proxy.admission.webhook.service_resolver import Resolved, ResolveError
from proxy.aggregator.apiservice import APIServiceRef
from proxy.aggregator.transport import Transport, auth_proxy_headers
from proxy.endpoints.filters.authentication import PLAIN_PORT_USER
from proxy.endpoints.responsewriter import end_started_response, response_started
from proxy.request.user import request_user

__all__ = ["SERVICE_UNAVAILABLE", "Backends", "plain_error", "proxy_request"]

log = logging.getLogger("watchcache.aggregator")

SERVICE_UNAVAILABLE = "service unavailable"
# the backend's headers not copied to the client's response (hop-by-hop)
_HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
     "trailer")
)  # fmt: skip




def plain_error(text: str, status: int) -> web.Response:
    """Go's ``http.Error``: text/plain, nosniff, the message and a newline."""
    return web.Response(
        status=status,
        text=text + "\n",
        content_type="text/plain",
        charset="utf-8",
        headers={"X-Content-Type-Options": "nosniff"},
    )




class Backends(Protocol):
    """How the proxy reaches an APIService's backend (the ``Aggregator`` is one)."""

    transport: Transport

    async def resolve(self, ref: APIServiceRef) -> Resolved:
        """The backend's address (``ResolveError`` when it has none)."""
        ...


async def proxy_request(
    request: web.Request, aggregator: Backends, ref: APIServiceRef
) -> web.StreamResponse:
    """Proxy one request to ``ref``'s backend (see the module docstring)."""
    if not ref.available:
        return plain_error(SERVICE_UNAVAILABLE, 503)
    try:
        target = await aggregator.resolve(ref)
    except ResolveError as e:
        log.warning("error resolving %s/%s: %s", ref.service_namespace, ref.service_name, e)
        return plain_error(SERVICE_UNAVAILABLE, 503)
    try:
        session = aggregator.transport.session(ref.ca_bundle, ref.insecure_skip_tls_verify)
    except (ValueError, OSError, ssl.SSLError) as e:
        return plain_error(str(e), 500)
    user = request_user(request) or PLAIN_PORT_USER
    headers = auth_proxy_headers(request.headers, user)
    body = request.content if request.body_exists else None
    url = target.base_url + request.raw_path
    try:
        async with session.request(
            request.method,
            url,
            headers=headers,
            data=body,
            server_hostname=target.server_name,
            allow_redirects=False,
        ) as upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in _HOP_BY_HOP:
                    response.headers.add(name, value)
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response
    except (aiohttp.ClientError, OSError) as e:
        started = response_started(request)
        if started is not None:
            return end_started_response(request, started)
        message = go_dial_error(target.host, target.port, e)
        log.info("Error while proxying request: %s", message)
        return plain_error(message, 503)
