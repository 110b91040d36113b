"""The priority-and-fairness filter (upstream's ``WithPriorityAndFairness``).

Each request (but the long-running ones other than WATCH: exec, attach, logs,
port-forward and proxy pass untouched, as upstream) is classified, given its seats,
and waits for them in its level's queue set. The response carries
``X-Kubernetes-PF-FlowSchema-UID`` and ``X-Kubernetes-PF-PriorityLevel-UID``. A
rejected request (queue full, concurrency limit, or waiting past the wait limit: a
quarter of --request-timeout, at most 15 s) is answered 429 with ``Retry-After: 1``
and upstream's plain-text body. A WATCH holds its seats until its response starts
(its watcher is registered and the stream open), then frees them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from proxy.endpoints.filters.authentication import PLAIN_PORT_USER
from proxy.flowcontrol import metrics
from proxy.flowcontrol.apf_controller import APFController, PriorityLevel
from proxy.flowcontrol.fairqueuing.queueset import Rejected, Request
from proxy.flowcontrol.matching import FlowSchemaSpec, distinguisher
from proxy.request.request_info import REQUEST_INFO, RequestInfo
from proxy.request.user import request_user
from proxy.server.filters import TOO_MANY_REQUESTS_TEXT, is_long_running

__all__ = [
    "FLOW_SCHEMA_UID_HEADER",
    "PRIORITY_LEVEL_UID_HEADER",
    "apf_middleware",
    "on_response_prepare",
]

FLOW_SCHEMA_UID_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_UID_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
MAX_WAIT_SECONDS = 15.0

# (flow schema uid, priority level uid), for the response headers
CLASSIFIED = web.RequestKey("watchcache_apf_classified", tuple)
# frees a WATCH's seats when its response starts (set by the filter, called once)
RELEASE = web.RequestKey("watchcache_apf_release", object)

SeatEstimator = Callable[[RequestInfo, Mapping[str, str], int], int]  # (info, query, level max)


def _too_many(schema: FlowSchemaSpec, level: PriorityLevel) -> web.Response:
    return web.Response(
        status=429,
        text=TOO_MANY_REQUESTS_TEXT,
        headers={
            "Retry-After": "1",
            "X-Content-Type-Options": "nosniff",
            FLOW_SCHEMA_UID_HEADER: schema.uid,
            PRIORITY_LEVEL_UID_HEADER: level.uid,
        },
    )


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """Add the classification headers, and free a WATCH's seats once it has started."""
    classified = request.get(CLASSIFIED)
    if classified is not None and FLOW_SCHEMA_UID_HEADER not in response.headers:
        response.headers[FLOW_SCHEMA_UID_HEADER] = classified[0]
        response.headers[PRIORITY_LEVEL_UID_HEADER] = classified[1]
    release = request.get(RELEASE)
    if callable(release):
        release()


def apf_middleware(
    controller: APFController, estimate: SeatEstimator, request_timeout: float
) -> Middleware:
    wait_limit = min(MAX_WAIT_SECONDS, request_timeout / 4)

    @web.middleware
    async def priority_and_fairness(request: web.Request, handler: Handler) -> web.StreamResponse:
        info = request[REQUEST_INFO]
        watch = info.verb == "watch"
        if is_long_running(info) and not watch:
            return await handler(request)
        # no user: no authentication filter (a plain-port-only server), whose requests
        # are system:masters' (exempt), as upstream's insecure port's were
        user = request_user(request) or PLAIN_PORT_USER
        schema, level = controller.classify(user, info)
        request[CLASSIFIED] = (schema.uid, level.uid)
        fs, pl = schema.name, level.name
        m = metrics.for_flow(fs, pl)
        seats = estimate(info, request.query, level.max_seats)
        item = Request(fs, distinguisher(schema, user, info), seats, time.monotonic(), time.time(),
                       (user, info))  # fmt: skip
        qs = level.queue_set
        queued = False

        def on_queued() -> None:  # the in-queue gauges move only for requests that wait
            nonlocal queued
            queued = True
            m.track_inqueue(seats, 1)

        try:
            await qs.acquire(item, wait_limit, on_queued)
        except Rejected as r:
            m.observe_reject(r.reason, time.monotonic() - item.arrive)
            return _too_many(schema, level)
        finally:
            if queued:
                m.track_inqueue(seats, -1)
        m.observe_dispatch(seats, (item.start or item.arrive) - item.arrive)
        m.track_executing(seats, 1)

        def release() -> None:
            if not item.released:
                qs.release(item)
                m.track_executing(seats, -1)
                ran = time.monotonic() - (item.start or item.arrive)
                m.observe_execution("watch" if watch else "regular", ran)

        if watch:
            request[RELEASE] = release
        try:
            return await handler(request)
        finally:
            release()

    return priority_and_fairness
