"""What the server answers, and logs, when a request fails before a handler can serve
it: malformed HTTP, and paths or methods no route serves.

kube-apiserver is a Go ``net/http`` server behind go-restful; this module gives aiohttp
the same edges:

- **Request bodies are taken as sent.** Go's server never decodes a request's
  ``Content-Encoding`` and k8s.io/apiserver does not look at it either: the bytes are
  decoded as JSON/YAML whatever the header says (a gzip body is then undecodable, 400; a
  plain body with ``Content-Encoding: gzip`` or ``br`` is accepted). aiohttp's automatic
  decompression is off, so no header can make reading the body fail.
- **Headers up to Go's limit.** kube-apiserver serves up to 1 MiB of request headers
  (``MaxHeaderBytes``); aiohttp's defaults (8,190 bytes a line, 128 headers) would refuse
  long bearer tokens that kube-apiserver takes. Larger still is refused by aiohttp's parser
  with its plain-text 400, as Go refuses it with a plain-text 431: no request was parsed,
  so there is no Status to give.
- **A deadline for request headers.** kube-apiserver's ``http.Server`` sets
  ``ReadHeaderTimeout`` to 32 s; aiohttp has no such knob, and its keep-alive timer
  (default an hour) was the only bound, so 250 connections trickling one header byte
  every 5 s stayed open forever. The keep-alive timeout is 32 s: a connection whose
  first request's headers are not complete 32 s after it opened, or that sends no next
  request within 32 s of its last answer, is closed (Go's ``IdleTimeout`` is 90 s: idle
  keep-alive connections are closed sooner here, which clients redial unnoticed). A
  request being served is never cut by it.
- **Malformed HTTP is the client's mistake, not the server's.** aiohttp logs every
  request its parser refuses (bad characters in the request line, invalid methods,
  over-long headers) as an ERROR with a traceback; ``ProtocolLogger`` logs those at
  debug level in one line, and keeps ERROR with traceback for everything else.
- **Routing errors as go-restful answers them.** A 404 under the served API roots
  (``/api/...``, ``/apis``, ``/apis/<served group>/...``) is the Status ``the server
  could not find the requested resource`` with empty details; anything else (an unknown
  group, ``/foo``) reaches kube-apiserver's final not-found handler, Go's
  ``http.NotFound``: plain text ``404 page not found``. A 405 is the Status ``the server
  does not allow this method on the requested resource``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from proxy import apierrors
from proxy.endpoints import responsewriters
from proxy.endpoints.context import API_CONTEXT

__all__ = [
    "MAX_HEADER_BYTES",
    "ProtocolLogger",
    "is_api_path",
    "on_response_prepare",
    "page_not_found",
    "protocol_options",
    "route_error",
]

# kube-apiserver's http.Server MaxHeaderBytes (1 << 20)
MAX_HEADER_BYTES = 1 << 20
# Go counts bytes, not header lines; the smallest header line is four bytes ("a:\r\n")
MAX_HEADERS = MAX_HEADER_BYTES // 32
# kube-apiserver's ReadHeaderTimeout (32 s), as aiohttp's keep-alive timeout (see above)
READ_HEADER_TIMEOUT = 32.0


class ProtocolLogger(logging.Logger):
    """aiohttp's server logger with malformed requests demoted: an ``exception()`` or
    ``debug()`` call about an ``HttpProcessingError`` (the parser refused the request)
    becomes one debug line without a traceback; everything else is logged as aiohttp
    asks. Records go to ``target``'s handlers (it is this logger's parent)."""

    def __init__(self, target: logging.Logger) -> None:
        super().__init__(target.name)
        self.parent = target

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kw: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            self._refused(msg, args, exc_info)
            return
        super().exception(msg, *args, exc_info=exc_info, **kw)

    def debug(self, msg: object, *args: object, **kw: Any) -> None:
        exc_info = kw.get("exc_info")
        if isinstance(exc_info, HttpProcessingError):
            self._refused(msg, args, exc_info)
            return
        super().debug(msg, *args, **kw)

    def _refused(self, msg: object, args: Sequence[object], exc: HttpProcessingError) -> None:
        if self.isEnabledFor(logging.DEBUG):
            text = str(msg) % tuple(args) if args else str(msg)
            super().debug("%s: malformed request refused: %s", text, exc.message or exc)


def protocol_options() -> dict[str, Any]:
    """Keyword arguments for ``web.AppRunner``: the HTTP protocol's edges (see above)."""
    return {
        "auto_decompress": False,
        "max_line_size": MAX_HEADER_BYTES,
        "max_field_size": MAX_HEADER_BYTES,
        "max_headers": MAX_HEADERS,
        "keepalive_timeout": READ_HEADER_TIMEOUT,
        "logger": ProtocolLogger(logging.getLogger("aiohttp.server")),
    }


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """``app.on_response_prepare`` hook: close the connection after answering a CONNECT."""
    if request.method == "CONNECT":
        response.force_close()


def page_not_found() -> web.Response:
    """Go's ``http.NotFound``: what kube-apiserver answers for a path nothing serves."""
    response = web.Response(status=404, text="404 page not found\n")
    response.headers["Content-Type"] = "text/plain; charset=utf-8"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def is_api_path(path: str, groups: Sequence[str]) -> bool:
    """Whether go-restful claims ``path``: ``/api`` and below, ``/apis``, and
    ``/apis/<group>`` and below for a served group."""
    segments = path.strip("/").split("/")
    if segments[0] == "api":
        return True
    if segments[0] != "apis":
        return False
    return len(segments) == 1 or segments[1] in groups


def route_error(request: web.Request, exc: web.HTTPException) -> web.StreamResponse | None:
    """The answer for a routing error raised as an aiohttp HTTP exception (404, 405);
    None for any other status (the caller re-raises it)."""
    if exc.status == 404:
        groups = request.app[API_CONTEXT].registry.groups()
        if not is_api_path(request.path, groups):
            return page_not_found()
        err = apierrors.path_not_found()
    elif exc.status == 405:
        err = apierrors.method_not_allowed()
    else:
        return None
    return responsewriters.status_response(request, err)
