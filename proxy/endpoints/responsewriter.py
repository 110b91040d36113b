"""Whether a request's response has started, and how to end one that has (upstream:
``k8s.io/apiserver/pkg/endpoints/responsewriter`` and the timeout writer's abort).

Every response's start is recorded on its request by a prepare hook (``install``).
Once its headers are out nothing may write a second response into it: a timeout, an
error or a bug can only end it (``end_started_response``).
"""

from __future__ import annotations

from aiohttp import web

__all__ = ["STARTED_RESPONSE", "end_started_response", "install", "response_started"]

STARTED_RESPONSE = web.RequestKey("watchcache_started_response", web.StreamResponse)
"""The response whose headers are out (set by ``install``'s prepare hook)."""


async def _record_start(request: web.Request, response: web.StreamResponse) -> None:
    request[STARTED_RESPONSE] = response


def install(app: web.Application) -> None:
    """Record on each request the response that starts on it (``on_response_prepare``
    runs before the headers are written)."""
    app.on_response_prepare.append(_record_start)


def response_started(request: web.Request) -> web.StreamResponse | None:
    """The response whose headers are out, or None if one may still be written."""
    return request.get(STARTED_RESPONSE)


def end_started_response(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """End a started response without writing anything more: close the connection, so
    the client sees an interrupted body (never a well-formed partial one, never a
    second status line), as upstream's timeout filter does by panicking with
    ``http.ErrAbortHandler``. aiohttp then finds the connection closed when it tries to
    finish the response and treats it as a client disconnection (nothing logged)."""
    if request.transport is not None:
        request.transport.close()
    return response
