"""Request metrics and the access log, with kube-apiserver's metric names and labels
(SEMANTICS.md §7), on prometheus_client's default registry — the one the cacher's
metrics are on too — served at ``/metrics``.

- ``apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,
  component,code}`` and ``apiserver_request_duration_seconds{...without code}``;
- ``apiserver_longrunning_requests{verb,group,version,resource,subresource,scope,
  component}`` (open watches);
- ``apiserver_watch_events_total{group,version,resource}``;
- ``apiserver_storage_list_{total,fetched_objects_total,evaluated_objects_total,
  returned_objects_total}{group,resource}`` for LISTs served by etcd (the cacher counts
  its own ``apiserver_cache_list_*``).

Verbs are kube's metric verbs: GET, LIST, WATCH, POST, PUT, PATCH, DELETE,
DELETECOLLECTION. Scope: ``resource`` (a named object), ``namespace``, ``cluster``.
The access log is one JSON line per resource request on the ``watchcache.access``
logger: verb, path, code, duration, and for LISTs where they were served from and the
objects fetched/returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

from proxy.endpoints.request_info import RequestInfo, parse_request_info
from storage.interfaces import ListResult

__all__ = [
    "metrics_middleware",
    "observe_list",
    "observe_watch_event",
    "setup_metrics_routes",
    "track_long_running",
]

access_log = logging.getLogger("watchcache.access")

_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")
_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10,
            15, 20, 30, 45, 60)  # fmt: skip

REQUESTS = Counter(
    "apiserver_request_total",
    "Counter of apiserver requests broken out for each verb, dry run value, group, "
    "version, resource, scope, component, and HTTP response code.",
    (*_LABELS, "code"),
)
DURATION = Histogram(
    "apiserver_request_duration_seconds",
    "Response latency distribution in seconds for each verb, dry run value, group, "
    "version, resource, subresource, scope and component.",
    _LABELS,
    buckets=_BUCKETS,
)
LONG_RUNNING = Gauge(
    "apiserver_longrunning_requests",
    "Gauge of all active long-running apiserver requests broken out by verb, group, "
    "version, resource, scope and component.",
    tuple(label for label in _LABELS if label != "dry_run"),
)
WATCH_EVENTS = Counter(
    "apiserver_watch_events_total",
    "Number of events sent in watch clients",
    ("group", "version", "resource"),
)
STORAGE_LIST = Counter(
    "apiserver_storage_list_total", "Number of LIST requests served from storage",
    ("group", "resource"),
)  # fmt: skip
STORAGE_LIST_FETCHED = Counter(
    "apiserver_storage_list_fetched_objects_total",
    "Number of objects read from storage in the course of serving a LIST request",
    ("group", "resource"),
)
STORAGE_LIST_EVALUATED = Counter(
    "apiserver_storage_list_evaluated_objects_total",
    "Number of objects tested in the course of serving a LIST request from storage",
    ("group", "resource"),
)
STORAGE_LIST_RETURNED = Counter(
    "apiserver_storage_list_returned_objects_total",
    "Number of objects returned for a LIST request from storage",
    ("group", "resource"),
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def metric_verb(info: RequestInfo) -> str:
    return {
        "list": "LIST",
        "watch": "WATCH",
        "get": "GET",
        "create": "POST",
        "update": "PUT",
        "patch": "PATCH",
        "delete": "DELETE",
        "deletecollection": "DELETECOLLECTION",
    }.get(info.verb, info.verb.upper())


def _scope(info: RequestInfo) -> str:
    if info.name:
        return "resource"
    return "namespace" if info.namespace else "cluster"


def _labels(info: RequestInfo, dry_run: str) -> dict[str, str]:
    return {
        "verb": metric_verb(info),
        "dry_run": dry_run,
        "group": info.group,
        "version": info.version,
        "resource": info.resource,
        "subresource": info.subresource,
        "scope": _scope(info),
        "component": "apiserver",
    }


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count and time every resource request (outermost: sees the final status)."""
    info = parse_request_info(request.method, request.path, request.query)
    if not info.is_resource_request:
        return await handler(request)
    started = time.monotonic()
    code = 500
    try:
        response = await handler(request)
        code = response.status
        return response
    finally:
        elapsed = time.monotonic() - started
        labels = _labels(info, "All" if request.query.get("dryRun") else "")
        REQUESTS.labels(**labels, code=str(code)).inc()
        DURATION.labels(**labels).observe(elapsed)
        _access(request, info, code, elapsed)


def _access(request: web.Request, info: RequestInfo, code: int, elapsed: float) -> None:
    if not access_log.isEnabledFor(logging.INFO):
        return
    entry: dict[str, object] = {
        "verb": metric_verb(info),
        "path": request.path_qs,
        "code": code,
        "ms": round(elapsed * 1000, 1),
    }
    cost = request.get("list_cost")
    if isinstance(cost, dict):
        entry.update(cost)
    access_log.info("%s", orjson.dumps(entry).decode())


def observe_list(request: web.Request, info: RequestInfo, result: ListResult) -> None:
    """Storage LIST counters (for LISTs served by etcd) and the access log's cost fields."""
    request["list_cost"] = {
        "servedFrom": result.served_from,
        "fetched": result.fetched,
        "returned": len(result.items),
    }
    if result.served_from != "etcd":
        return
    labels = {"group": info.group, "resource": info.resource}
    STORAGE_LIST.labels(**labels).inc()
    STORAGE_LIST_FETCHED.labels(**labels).inc(result.fetched)
    STORAGE_LIST_EVALUATED.labels(**labels).inc(result.evaluated)
    STORAGE_LIST_RETURNED.labels(**labels).inc(len(result.items))


def observe_watch_event(info: RequestInfo) -> None:
    WATCH_EVENTS.labels(group=info.group, version=info.version, resource=info.resource).inc()


@contextlib.contextmanager
def track_long_running(info: RequestInfo) -> Iterator[None]:
    """``with track_long_running(info):`` counts an open watch in the gauge."""
    labels = _labels(info, "")
    del labels["dry_run"]
    gauge = LONG_RUNNING.labels(**labels)
    gauge.inc()
    try:
        yield
    finally:
        gauge.dec()


async def _metrics(request: web.Request) -> web.Response:
    # in a thread: a scrape of ~1,000 series takes 10-30 ms of Python, which on the
    # event loop would stall every request for as long
    body = await asyncio.to_thread(generate_latest)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def setup_metrics_routes(app: web.Application) -> None:
    app.router.add_get("/metrics", _metrics)
