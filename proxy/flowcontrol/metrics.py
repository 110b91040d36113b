"""The ``apiserver_flowcontrol_*`` metrics (upstream's ``util/flowcontrol/metrics``),
with upstream's names, help texts and labels. Per-request updates go through small
helpers so the filter stays readable; labelled children are cached (``labels()``
costs microseconds)."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Gauge, Histogram

__all__ = ["FlowMetrics", "for_flow", "set_current_limit", "set_level_limits"]

FS_PL = ("flow_schema", "priority_level")

DISPATCHED = Counter(
    "apiserver_flowcontrol_dispatched_requests",
    "[BETA] Number of requests executed by API Priority and Fairness subsystem",
    ("priority_level", "flow_schema"),
)
REJECTED = Counter(
    "apiserver_flowcontrol_rejected_requests",
    "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
    ("priority_level", "flow_schema", "reason"),
)
INQUEUE = Gauge(
    "apiserver_flowcontrol_current_inqueue_requests",
    "[BETA] Number of requests currently pending in queues of the API Priority and "
    "Fairness subsystem",
    FS_PL,
)
INQUEUE_SEATS = Gauge(
    "apiserver_flowcontrol_current_inqueue_seats",
    "[ALPHA] Number of seats currently pending in queues of the API Priority and Fairness "
    "subsystem",
    FS_PL,
)
EXECUTING = Gauge(
    "apiserver_flowcontrol_current_executing_requests",
    "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution "
    "stage in the API Priority and Fairness subsystem",
    FS_PL,
)
EXECUTING_SEATS = Gauge(
    "apiserver_flowcontrol_current_executing_seats",
    "[BETA] Concurrency (number of seats) occupied by the currently executing (initial "
    "stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness "
    "subsystem",
    FS_PL,
)
_WAIT_BUCKETS = (0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30)
WAIT = Histogram(
    "apiserver_flowcontrol_request_wait_duration_seconds",
    "[BETA] Length of time a request spent waiting in its queue",
    ("flow_schema", "priority_level", "execute"),
    buckets=_WAIT_BUCKETS,
)
_EXEC_BUCKETS = (0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 50, 120, 300, 600)
EXECUTION = Histogram(
    "apiserver_flowcontrol_request_execution_seconds",
    "[ALPHA] Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of "
    "request execution in the API Priority and Fairness subsystem",
    ("priority_level", "flow_schema", "type"),
    buckets=_EXEC_BUCKETS,
)
SEATS = Histogram(
    "apiserver_flowcontrol_work_estimated_seats",
    "[ALPHA] Number of estimated seats (maximum of initial and final seats) associated "
    "with requests in API Priority and Fairness",
    ("priority_level", "flow_schema"),
    buckets=(1, 2, 4, 10),
)
NOMINAL = Gauge(
    "apiserver_flowcontrol_nominal_limit_seats",
    "[BETA] Nominal number of execution seats configured for each priority level",
    ("priority_level",),
)
CONCURRENCY_LIMIT = Gauge(
    "apiserver_flowcontrol_request_concurrency_limit",
    "[ALPHA] Nominal number of execution seats configured for each priority level",
    ("priority_level",),
)
CURRENT = Gauge(
    "apiserver_flowcontrol_current_limit_seats",
    "[ALPHA] current derived number of execution seats available to each priority level",
    ("priority_level",),
)
LOWER = Gauge(
    "apiserver_flowcontrol_lower_limit_seats",
    "[ALPHA] Configured lower bound on number of execution seats available to each priority level",
    ("priority_level",),
)
UPPER = Gauge(
    "apiserver_flowcontrol_upper_limit_seats",
    "[ALPHA] Configured upper bound on number of execution seats available to each priority level",
    ("priority_level",),
)

_children: dict[tuple[Any, ...], Any] = {}


def _child(metric: Any, *labels: str) -> Any:
    key = (id(metric), *labels)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*labels)
    return child


def set_level_limits(level: str, nominal: int, lower: int, upper: int) -> None:
    _child(NOMINAL, level).set(nominal)
    _child(CONCURRENCY_LIMIT, level).set(nominal)
    _child(LOWER, level).set(lower)
    _child(UPPER, level).set(upper)


def set_current_limit(level: str, current: int) -> None:
    _child(CURRENT, level).set(current)


class FlowMetrics:
    """One (flow schema, priority level) pair's labelled children, looked up once."""

    def __init__(self, fs: str, pl: str) -> None:
        self.dispatched = DISPATCHED.labels(pl, fs)
        self.waited = WAIT.labels(fs, pl, "true")
        self.rejected_wait = WAIT.labels(fs, pl, "false")
        self.seats = SEATS.labels(pl, fs)
        self.inqueue = INQUEUE.labels(fs, pl)
        self.inqueue_seats = INQUEUE_SEATS.labels(fs, pl)
        self.executing = EXECUTING.labels(fs, pl)
        self.executing_seats = EXECUTING_SEATS.labels(fs, pl)
        self.execution = {k: EXECUTION.labels(pl, fs, k) for k in ("regular", "watch")}
        self.fs, self.pl = fs, pl

    def track_inqueue(self, seats: int, delta: int) -> None:
        self.inqueue.inc(delta)
        self.inqueue_seats.inc(delta * seats)

    def track_executing(self, seats: int, delta: int) -> None:
        self.executing.inc(delta)
        self.executing_seats.inc(delta * seats)

    def observe_dispatch(self, seats: int, waited: float) -> None:
        self.dispatched.inc()
        self.waited.observe(waited)
        self.seats.observe(seats)

    def observe_reject(self, reason: str, waited: float) -> None:
        _child(REJECTED, self.pl, self.fs, reason).inc()
        self.rejected_wait.observe(waited)

    def observe_execution(self, kind: str, seconds: float) -> None:
        self.execution[kind].observe(seconds)


_flows: dict[tuple[str, str], FlowMetrics] = {}


def for_flow(fs: str, pl: str) -> FlowMetrics:
    found = _flows.get((fs, pl))
    if found is None:
        found = _flows[(fs, pl)] = FlowMetrics(fs, pl)
    return found
