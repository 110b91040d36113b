"""The handler chain: kube-apiserver's ``DefaultBuildHandlerChain``
(``k8s.io/apiserver/pkg/server/config.go``) as aiohttp middlewares.

``handler_chain(settings)`` returns them outermost first. The order, and where the
pipeline that later issues add goes (each is one middleware inserted at its mark)::

    1. panic recovery        with_panic_recovery: a bug becomes 500 InternalError
    2. request info          with_request_info: RequestInfo computed once, stored on
                             the request (request_info.REQUEST_INFO); all below read it
    3. metrics               endpoints.metrics.with_metrics: apiserver_request_total etc.
                             (after request info, outside what can answer early)
    4. request deadline +    with_timeout: non-long-running requests end at
       timeout                 min(?timeout=, --request-timeout) with 504
    5. authentication        proxy.endpoints.filters.authentication (secure port; 401)
       -- audit              proxy.audit.filter (upstream's WithAudit), when a policy is given
    6. impersonation         proxy.endpoints.filters.impersonation (secure port; 403)
    7. max in flight         with_max_in_flight: 429 beyond --max-requests-inflight /
                             --max-mutating-requests-inflight
       -- priority and fairness proxy.flowcontrol.filter: replaces 7 when
                             --enable-priority-and-fairness (the default), as upstream
    8. authorization         proxy.endpoints.filters.authorization (secure port; 403)
       -- aggregator proxy   proxy.aggregator: /apis/<g>/<v> of a remote APIService is
                             proxied to its extension server (upstream's aggregator
                             is the outermost delegate, after this same chain)
    9. handler errors        with_handler_errors: a StatusError a handler raises is
                             written as its Status (upstream's handlers write their own
                             errors: ``responsewriters.ErrorNegotiated``)
    → the router: endpoints/handlers, discovery, health, metrics

**A started response is never overwritten** (``endpoints.responsewriter``): once its
headers are out, a timeout, an error or a bug can only end the response (the
connection is closed, so the client sees an interrupted body, as upstream's timeout
filter does with ``http.ErrAbortHandler``), never write a second status line inside
an open chunked stream. Watches end themselves: an ERROR event, then the end
(``handlers.collection``).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from etcdclient.deadline import REQUEST_DEADLINE
from proxy import apierrors
from proxy.endpoints import responsewriters
from proxy.endpoints.compression import with_compression
from proxy.endpoints.metrics import with_metrics
from proxy.endpoints.responsewriter import end_started_response, response_started
from proxy.options.settings import Settings
from proxy.request.request_info import REQUEST_INFO, RequestInfo, parse_request_info
from proxy.request.user import SYSTEM_PRIVILEGED_GROUP, request_user
from proxy.server import http_errors
from proxy.server.request_deadline import DeadlineQueue, DeadlineScope

__all__ = ["handler_chain", "is_long_running", "parse_go_duration"]

log = logging.getLogger("watchcache.proxy")

# upstream's BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
#   sets.NewString("attach", "exec", "proxy", "log", "portforward"))
_LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
_LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
# maxinflight.go: nonMutatingRequestVerbs
_READ_ONLY_VERBS = frozenset({"get", "list", "watch"})


def is_long_running(info: RequestInfo) -> bool:
    """Upstream's ``BasicLongRunningRequestCheck``: watches, proxies and the streaming
    subresources are not bounded by --request-timeout nor counted in flight."""
    if info.verb in _LONG_RUNNING_VERBS:
        return True
    if info.is_resource_request:
        return info.subresource in _LONG_RUNNING_SUBRESOURCES
    return info.path.startswith("/debug/pprof/")


def _write_status(request: web.Request, err: apierrors.StatusError) -> web.Response:
    """Upstream's ``ErrorNegotiated``: the Status in the client's preferred encoding
    (protobuf or JSON)."""
    return responsewriters.status_response(request, err)


# ------------------------------------------------------------------------ the filters


@web.middleware
async def with_panic_recovery(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Upstream's ``WithPanicRecovery``: anything unexpected is logged with its
    traceback and answered 500 InternalError without it (or, once the response has
    started, ends it). A client that goes away cancels the handler, or makes a write
    fail: not an error (kube-apiserver logs nothing), one debug line."""
    try:
        return await handler(request)
    except ConnectionResetError as e:
        # returned, not raised: aiohttp logs a raised one at ERROR with its traceback,
        # and finishing a response on a closed connection fails quietly
        log.debug("client went away during %s %s: %s", request.method, request.path, e)
        return response_started(request) or web.Response(status=500)
    except (asyncio.CancelledError, web.HTTPException):
        raise  # a client gone, or an answer aiohttp itself renders
    except Exception as e:
        log.exception("unexpected error serving %s %s", request.method, request.path)
        started = response_started(request)
        if started is not None:
            return end_started_response(request, started)
        return _write_status(request, apierrors.internal_error(f"unexpected {type(e).__name__}"))


@web.middleware
async def with_request_info(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Upstream's ``WithRequestInfo``: the one place RequestInfo is derived."""
    request[REQUEST_INFO] = parse_request_info(request.method, request.path, request.query)
    return await handler(request)


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0,
                   "m": 60.0, "h": 3600.0}  # fmt: skip


def parse_go_duration(value: str) -> float:
    """Go's ``time.ParseDuration`` in seconds (``1m30s``, ``-2s``, ``0``); ValueError
    with Go's words otherwise."""
    text = value[1:] if value[:1] in ("+", "-") else value
    sign = -1.0 if value.startswith("-") else 1.0
    if text == "0":
        return 0.0
    if not text:
        raise ValueError(f'time: invalid duration "{value}"')
    total, pos = 0.0, 0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            if re.match(r"(\d+(?:\.\d*)?|\.\d+)$", text[pos:]):
                raise ValueError(f'time: missing unit in duration "{value}"')
            raise ValueError(f'time: invalid duration "{value}"')
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return sign * total


def with_timeout(settings: Settings) -> Middleware:
    """Upstream's ``WithRequestDeadline`` + ``WithTimeoutForNonLongRunningRequests``: a
    non-long-running request gets ``?timeout=`` when it is positive and below
    --request-timeout, else --request-timeout (400 for a ``timeout`` that does not
    parse); past it, 504 ``Timeout: request did not complete within the allotted
    timeout`` (no Retry-After), or the end of a response already started."""

    # the --request-timeout deadlines, on the loop the server runs on (a new queue if
    # the app is served on another loop later: the tests do that)
    queues: list[DeadlineQueue] = []

    @web.middleware
    async def timeout_filter(request: web.Request, handler: Handler) -> web.StreamResponse:
        info = request[REQUEST_INFO]
        if is_long_running(info):
            return await handler(request)
        deadline = settings.request_timeout
        asked = request.query.get("timeout", "")
        if asked:
            try:
                seconds = parse_go_duration(asked)
            except ValueError as e:
                return _write_status(
                    request,
                    apierrors.bad_request(f"invalid timeout specified in the request URL - {e}"),
                )
            if 0 < seconds < deadline:
                deadline = seconds
        scope: asyncio.Timeout | DeadlineScope
        loop = asyncio.get_running_loop()
        if deadline == settings.request_timeout:
            if not queues or queues[0].loop is not loop:
                queues[:] = [DeadlineQueue(loop, deadline)]
            scope = queues[0].scope()  # --request-timeout's: one timer for all of them
        else:
            scope = asyncio.timeout(deadline)
        # etcd reads may take until this deadline (upstream passes the request's context
        # down to etcd), not only --etcd-request-timeout; this task's context only
        token = REQUEST_DEADLINE.set(loop.time() + deadline)
        try:
            async with scope:
                return await handler(request)
        except TimeoutError:
            if not scope.expired():
                raise  # the handler's own timeout escaped: a bug, not the deadline
            started = response_started(request)
            if started is not None:
                log.warning("request timeout after the response started: %s", request.path)
                return end_started_response(request, started)
            return _write_status(request, apierrors.timeout(apierrors.REQUEST_TIMEOUT_MESSAGE))
        finally:
            REQUEST_DEADLINE.reset(token)  # a kept-alive connection's next request

    return timeout_filter


TOO_MANY_REQUESTS_TEXT = "Too many requests, please try again later.\n"


def with_max_in_flight(settings: Settings) -> Middleware | None:
    """Upstream's ``WithMaxInFlightLimit``: at most --max-requests-inflight read-only
    and --max-mutating-requests-inflight mutating requests at once (0: no limit);
    long-running requests are not counted. Beyond it: 429 with ``Retry-After: 1`` and
    upstream's plain-text body (``http.Error``), which clients retry — except for
    ``system:masters`` (a super-admin, or the server's own loopback client), served
    anyway, as upstream. None when both limits are off."""
    limits = {False: settings.max_requests_inflight, True: settings.max_mutating_requests_inflight}
    if not any(limits.values()):
        return None
    in_flight = {False: 0, True: 0}  # changed only on the event loop

    @web.middleware
    async def max_in_flight(request: web.Request, handler: Handler) -> web.StreamResponse:
        info = request[REQUEST_INFO]
        if is_long_running(info):
            return await handler(request)
        mutating = info.verb not in _READ_ONLY_VERBS
        limit = limits[mutating]
        if not limit:
            return await handler(request)
        if in_flight[mutating] >= limit:
            user = request_user(request)
            if user is not None and SYSTEM_PRIVILEGED_GROUP in user.groups:
                # as upstream: "a system:master is so powerful that they should always
                # get an answer. It's a super-admin or a loopback connection."
                return await handler(request)
            return web.Response(
                status=429,
                text=TOO_MANY_REQUESTS_TEXT,
                headers={"Retry-After": "1", "X-Content-Type-Options": "nosniff"},
            )
        in_flight[mutating] += 1
        try:
            return await handler(request)
        finally:
            in_flight[mutating] -= 1

    return max_in_flight


@web.middleware
async def with_handler_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A StatusError a handler raises becomes its Status response; the router's own
    404/405 become Status too. After the response started, it is ended instead."""
    try:
        return await handler(request)
    except apierrors.StatusError as e:
        started = response_started(request)
        if started is not None:
            log.warning("%s after the response started: %s", e.reason or e.code, request.path)
            return end_started_response(request, started)
        return _write_status(request, e)
    except (web.HTTPNotFound, web.HTTPMethodNotAllowed) as e:
        # go-restful's answers: a Status under served API roots, plain text elsewhere
        routed = http_errors.route_error(request, e)
        if routed is None:
            raise
        return routed


def handler_chain(
    settings: Settings,
    *,
    authentication: Sequence[Middleware] = (),
    authorization: Sequence[Middleware] = (),
    aggregation: Sequence[Middleware] = (),
    audit: Middleware | None = None,
    flowcontrol: Middleware | None = None,
) -> list[Middleware]:
    """The middlewares, outermost first (the order of the module docstring).
    ``authentication`` (authentication, then impersonation) and ``authorization`` are
    the secure port's filters (``proxy.server.auth_chain``); they answer with their own
    Status and pass the plain port's requests through. ``aggregation`` (the
    aggregator's proxy, ``proxy.aggregator``) comes right after authorization."""
    chain: list[Middleware | None] = [
        with_panic_recovery,
        with_request_info,
        with_metrics,
        with_timeout(settings),
        *authentication[:1],
        audit,  # between authentication and impersonation, as upstream
        *authentication[1:],
        flowcontrol or with_max_in_flight(settings),
        *authorization,
        *aggregation,  # remote APIServices' requests leave here (proxy.aggregator)
        with_compression,  # APIResponseCompression (streamed lists compress themselves)
        with_handler_errors,
    ]
    return [m for m in chain if m is not None]
