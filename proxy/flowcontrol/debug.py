"""``/debug/api_priority_and_fairness/dump_priority_levels``, ``dump_queues`` and
``dump_requests`` (``?includeRequestDetails=1``) in upstream's format (``apf_filter``'s
debug handlers): comma-separated cells aligned as Go's tabwriter aligns them (each
column as wide as its widest cell plus one space; the last cell unpadded)."""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable

from aiohttp import web

from proxy.flowcontrol.apf_controller import APFController, PriorityLevel
from proxy.flowcontrol.fairqueuing.queueset import Request

__all__ = ["setup_apf_debug_routes", "tabulate"]

PREFIX = "/debug/api_priority_and_fairness"


def tabulate(rows: list[list[str]]) -> str:
    """Cells ``a,\\tb,\\tc`` through Go's tabwriter (minwidth 1, padding 1)."""
    widths: dict[int, int] = {}
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths.get(i, 0), len(cell) + 1)
    lines = []
    for row in rows:
        cells = [f"{cell},".ljust(widths[i] + 1) for i, cell in enumerate(row[:-1])]
        lines.append("".join(cells) + row[-1])
    return "\n".join(lines) + "\n"


def _go_time(epoch: float | None) -> str:
    if epoch is None:
        return "0001-01-01T00:00:00Z"
    stamp = datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return stamp.rstrip("0").rstrip(".") + "Z"


def _levels(controller: APFController) -> list[PriorityLevel]:
    return [controller.levels[n] for n in sorted(controller.levels)]


async def _dump_priority_levels(request: web.Request, controller: APFController) -> web.Response:
    rows = [["PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests",
             "ExecutingRequests", "DispatchedRequests", "RejectedRequests", "TimedoutRequests",
             "CancelledRequests"]]  # fmt: skip
    for level in _levels(controller):
        qs = level.queue_set
        idle = "false" if level.exempt else str(qs.is_idle()).lower()
        rows.append([level.name, str(qs.active_queues()), idle, "false", str(qs.waiting_count),
                     str(len(qs.executing)), str(qs.dispatched), str(qs.rejected),
                     str(qs.timed_out), str(qs.cancelled)])  # fmt: skip
    return web.Response(text=tabulate(rows))


async def _dump_queues(request: web.Request, controller: APFController) -> web.Response:
    rows = [["PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse",
             "NextDispatchR", "InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum"]]  # fmt: skip
    for level in _levels(controller):
        for q in level.queue_set.queues:
            work = sum(r.work for r in q.waiting)
            rows.append([level.name, str(q.index), str(len(q.waiting)), str(q.executing),
                         str(q.seats_in_use), f"{q.next_dispatch_r:.8f}ss", str(q.waiting_seats),
                         str(q.waiting_seats), f"{work:.8f}ss"])  # fmt: skip
    return web.Response(text=tabulate(rows))


def _request_row(level: str, item: Request, queue: int, index: int, details: bool) -> list[str]:
    arrive, start = _go_time(item.arrive_wall), _go_time(item.start_wall)
    row = [level, item.flow_schema, str(queue), str(index), item.distinguisher, arrive,
           str(item.seats), "0", "0s", start]  # fmt: skip
    if details and item.details is not None:
        user, info = item.details
        row += [user.name, info.verb, info.path, info.namespace, info.name, info.version,
                info.resource, info.subresource]  # fmt: skip
    return row


async def _dump_requests(request: web.Request, controller: APFController) -> web.Response:
    details = request.query.get("includeRequestDetails", "") == "1"
    header = ["PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue",
              "FlowDistingsher", "ArriveTime", "InitialSeats", "FinalSeats", "AdditionalLatency",
              "StartTime"]  # fmt: skip
    if details:
        header += ["UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource",
                   "SubResource"]  # fmt: skip
    rows = [header]
    for level in _levels(controller):
        qs = level.queue_set
        for item in sorted(qs.executing, key=lambda r: r.arrive):
            queue = item.queue.index if item.queue is not None else -1
            rows.append(_request_row(level.name, item, queue, -1, details))
        for q in qs.queues:
            for i, item in enumerate(q.waiting):
                rows.append(_request_row(level.name, item, q.index, i, details))
    return web.Response(text=tabulate(rows))


View = Callable[[web.Request, APFController], Awaitable[web.Response]]


def _bind(
    view: View, controller: APFController
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        return await view(request, controller)

    return handle


def setup_apf_debug_routes(app: web.Application, controller: APFController) -> None:
    for name, view in (
        ("dump_priority_levels", _dump_priority_levels),
        ("dump_queues", _dump_queues),
        ("dump_requests", _dump_requests),
    ):
        app.router.add_get(f"{PREFIX}/{name}", _bind(view, controller))
