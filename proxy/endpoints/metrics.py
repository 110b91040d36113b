"""Request metrics and the access log, with kube-apiserver's metric names and labels
(``k8s.io/apiserver/pkg/endpoints/metrics/metrics.go``), on prometheus_client's default
registry — the one the cacher's metrics are on too — served at ``/metrics``.

- ``apiserver_request_total{verb,dry_run,group,version,resource,subresource,scope,
  component,code}`` and ``apiserver_request_duration_seconds{...without code}``;
- ``apiserver_longrunning_requests{verb,group,version,resource,subresource,scope,
  component}`` (open watches);
- ``apiserver_watch_events_total{group,version,resource}``;
- ``apiserver_storage_list_{total,fetched_objects_total,evaluated_objects_total,
  returned_objects_total}{group,resource}`` for LISTs served by etcd (the cacher counts
  its own ``apiserver_cache_list_*``).

Verbs are kube's metric verbs: GET, LIST, WATCH, POST, PUT, PATCH, DELETE,
DELETECOLLECTION. Scope is the route's, as upstream's ``InstrumentRouteFunc`` labels
it: ``resource`` (a name in the URL), ``namespace``, ``cluster``.

The code is the status of the response the client got, as upstream's
``ResponseWriterDelegator`` records it: a watch (or a streamed LIST) whose client goes
away after its headers were sent counts its 200, not an error; a request whose client
left before any header was written counts ``0`` (no status was sent).
The access log is one JSON line per resource request on the ``watchcache.access``
logger: verb, path, code, duration, user agent, the user, and for LISTs where they were
served from and the objects fetched/returned.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

from proxy.endpoints.responsewriter import response_started
from proxy.request.request_info import REQUEST_INFO, RequestInfo, query_bool
from proxy.request.user import request_user
from proxy.request.utf8 import valid_utf8
from storage.interfaces import ListResult

__all__ = [
    "label_samples",
    "observe_list",
    "observe_watch_event",
    "setup_metrics_routes",
    "track_long_running",
    "with_metrics",
]

access_log = logging.getLogger("watchcache.access")


# what an access-log entry is made from: verb, path and query, code, seconds, user
# agent, the user's name (None: no user), the LIST's cost fields (None: not a LIST)
_Access = tuple[str, str, int, float, str, str | None, dict[str, object] | None]


class RecentRequests:
    """The last ``size`` access-log entries, numbered, for /debug/requests (the lab's
    page shows them as they happen). Appended on the event loop only.

    Kept as the raw facts of each request and made into entries only when read: every
    resource request adds one, /debug/requests reads them only while the lab's page is
    open, and building the two dicts of an entry per request was ~2 % of a small GET's
    CPU (docs/performance.md, round eight)."""

    def __init__(self, size: int = 500) -> None:
        self.entries: collections.deque[tuple[int, float, _Access]] = collections.deque(
            maxlen=size
        )
        self.seq = 0

    def add(self, access: _Access) -> None:
        self.seq += 1
        self.entries.append((self.seq, time.time(), access))

    def since(self, seq: int) -> list[dict[str, object]]:
        return [{"seq": n, "at": round(at, 3), **_entry(*access)}
                for n, at, access in self.entries if n > seq]  # fmt: skip


RECENT_REQUESTS = web.AppKey("watchcache_recent_requests", RecentRequests)

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

# the access log's cost fields of a LIST (set by observe_list)
_LIST_COST: web.RequestKey[dict[str, object]] = web.RequestKey("watchcache_list_cost")


def metric_verb(info: RequestInfo, query: Mapping[str, str] | None = None) -> str:
    """Upstream's ``cleanVerb``: the API verb upper-cased, LIST and WATCH kept apart;
    a GET whose ``watch`` parameter is true counts as WATCH even on a named path."""
    if info.verb == "get" and query is not None and query_bool(query, "watch"):
        return "WATCH"
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
    if info.path_name or info.verb == "create":
        return "resource"
    return "namespace" if info.namespace else "cluster"


def _labels(
    info: RequestInfo, dry_run: str, query: Mapping[str, str] | None = None
) -> dict[str, str]:
    return {
        "verb": metric_verb(info, query),
        "dry_run": dry_run,
        "group": info.group,
        "version": info.version,
        "resource": info.resource,
        "subresource": info.subresource,
        "scope": _scope(info),
        "component": "apiserver",
    }


@web.middleware
async def with_metrics(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count and time every resource request, with the code its client got (a filter
    after request info, outside everything that can answer early: timeout, max in
    flight)."""
    info = request[REQUEST_INFO]
    if not info.is_resource_request:
        return await handler(request)
    started = time.monotonic()
    code = 500  # an unexpected error: panic recovery answers 500
    try:
        response = await handler(request)
        code = response.status
        return response
    except web.HTTPException as e:  # aiohttp renders it
        code = e.status
        raise
    except (asyncio.CancelledError, ConnectionResetError):
        code = 0  # the client went away before a status was sent
        raise
    finally:
        sent = response_started(request)
        if sent is not None:
            code = sent.status
        elapsed = time.monotonic() - started
        verb = metric_verb(info, request.query)
        values = (verb, "All" if request.query.get("dryRun") else "", info.group,
                  info.version, info.resource, info.subresource, _scope(info), "apiserver")
        _child(REQUESTS, (*values, str(code))).inc()
        _child(DURATION, values).observe(elapsed)
        _access(request, verb, code, elapsed)


# Each label set's child of REQUESTS and DURATION, found once: prometheus_client's
# labels() validates and locks on every call (a few µs on every request). Bounded as
# the metrics' own label sets are; none of them is ever removed.
_CHILDREN: dict[tuple[object, tuple[str, ...]], Any] = {}


def _child(metric: Counter | Histogram, values: tuple[str, ...]) -> Any:
    key = (metric, values)
    child = _CHILDREN.get(key)
    if child is None:
        child = _CHILDREN[key] = metric.labels(*values)
    return child


def _entry(
    verb: str, path: str, code: int, elapsed: float, agent: str, user: str | None,
    cost: dict[str, object] | None,
) -> dict[str, object]:  # fmt: skip
    entry: dict[str, object] = {
        "verb": verb,
        # request bytes that are not UTF-8 as U+FFFD (the log and the lab page encode it)
        "path": valid_utf8(path),
        "code": code,
        "ms": round(elapsed * 1000, 1),
        # who asked, as kube-apiserver's httplog says it (the lab's controllers show here)
        "userAgent": valid_utf8(agent),
    }
    if user is not None:  # the authenticated (or impersonated) user, as kube's httplog
        entry["user"] = valid_utf8(user)
    if cost is not None:
        entry.update(cost)
    return entry


def _access(request: web.Request, verb: str, code: int, elapsed: float) -> None:
    user = request_user(request)
    access: _Access = (verb, request.path_qs, code, elapsed,
                       request.headers.get("User-Agent", ""),
                       None if user is None else user.name, request.get(_LIST_COST))  # fmt: skip
    recent = request.app.get(RECENT_REQUESTS)
    if recent is not None:
        recent.add(access)
    if access_log.isEnabledFor(logging.INFO):
        access_log.info("%s", orjson.dumps(_entry(*access)).decode())


def observe_list(request: web.Request, info: RequestInfo, result: ListResult) -> None:
    """Storage LIST counters (for LISTs served by etcd) and the access log's cost fields."""
    cost: dict[str, object] = {
        "servedFrom": result.served_from,
        "fetched": result.fetched,
        "returned": len(result.items),
    }
    request[_LIST_COST] = cost
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


def label_samples(body: bytes, name: str, value: str) -> bytes:
    """The text exposition ``body`` with ``name="value"`` first on every sample (a
    constant label, as a target label added by the scraper would be)."""
    label = f'{name}="{value}"'.encode()
    lines = body.split(b"\n")
    for i, line in enumerate(lines):
        if not line or line.startswith(b"#"):
            continue
        brace, space = line.find(b"{"), line.find(b" ")
        if brace != -1 and (space == -1 or brace < space):  # name{labels} value
            closed = line[brace + 1 : brace + 2] == b"}"
            lines[i] = line[: brace + 1] + label + (b"" if closed else b",") + line[brace + 1 :]
        else:  # name value
            lines[i] = line[:space] + b"{" + label + b"}" + line[space:]
    return b"\n".join(lines)


def _metrics_handler(worker: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    def scrape() -> bytes:
        body = generate_latest()
        return label_samples(body, "worker", worker) if worker else body

    async def metrics(request: web.Request) -> web.Response:
        # in a thread: a scrape of ~1,000 series takes 10-30 ms of Python, which on the
        # event loop would stall every request for as long
        body = await asyncio.to_thread(scrape)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    return metrics


def setup_metrics_routes(app: web.Application, *, worker: str = "") -> None:
    """``/metrics``; with ``worker`` (this process is a worker of ``--workers``), every sample
    labelled ``worker="K"``, so series from the workers behind one port stay apart."""
    app.router.add_get("/metrics", _metrics_handler(worker))
