"""The ``apiserver_flowcontrol_*`` metrics (upstream's ``util/flowcontrol/metrics``),
with upstream's names, help texts and labels. Per-request updates go through small
helpers so the filter stays readable; labelled children are cached (``labels()``
costs microseconds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["FlowMetrics", "for_flow", "set_current_limit", "set_level_limits"]

FS_PL = ("flow_schema", "priority_level")

REJECTED = Counter(
    "apiserver_flowcontrol_rejected_requests",
    "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
    ("priority_level", "flow_schema", "reason"),
)
# per-flow counts kept as plain ints by FlowMetrics and exported at scrape time by
# _FlowCollector (a labelled Gauge/Counter update costs more than the rest of the filter)
_SCRAPED = (
    ("dispatched", "counter", "apiserver_flowcontrol_dispatched_requests",
     "[BETA] Number of requests executed by API Priority and Fairness subsystem"),
    ("inqueue", "gauge", "apiserver_flowcontrol_current_inqueue_requests",
     "[BETA] Number of requests currently pending in queues of the API Priority and "
     "Fairness subsystem"),
    ("inqueue_seats", "gauge", "apiserver_flowcontrol_current_inqueue_seats",
     "[ALPHA] Number of seats currently pending in queues of the API Priority and Fairness "
     "subsystem"),
    ("executing", "gauge", "apiserver_flowcontrol_current_executing_requests",
     "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution "
     "stage in the API Priority and Fairness subsystem"),
    ("executing_seats", "gauge", "apiserver_flowcontrol_current_executing_seats",
     "[BETA] Concurrency (number of seats) occupied by the currently executing (initial "
     "stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness "
     "subsystem"),
)  # fmt: skip
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
    """One (flow schema, priority level) pair's counts and labelled children. The
    counts are changed on the event loop only and read by the scrape."""

    def __init__(self, fs: str, pl: str) -> None:
        self.dispatched = 0
        self.inqueue = self.inqueue_seats = 0
        self.executing = self.executing_seats = 0
        self.waited = WAIT.labels(fs, pl, "true")
        self.rejected_wait = WAIT.labels(fs, pl, "false")
        self.seats = SEATS.labels(pl, fs)
        self.execution = {k: EXECUTION.labels(pl, fs, k) for k in ("regular", "watch")}
        self.fs, self.pl = fs, pl

    def track_inqueue(self, seats: int, delta: int) -> None:
        self.inqueue += delta
        self.inqueue_seats += delta * seats

    def track_executing(self, seats: int, delta: int) -> None:
        self.executing += delta
        self.executing_seats += delta * seats

    def observe_dispatch(self, seats: int, waited: float) -> None:
        self.dispatched += 1
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


class _FlowCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        flows = list(_flows.values())
        for attr, kind, name, help_text in _SCRAPED:
            family: CounterMetricFamily | GaugeMetricFamily
            if kind == "counter":
                family = CounterMetricFamily(
                    name, help_text, labels=("priority_level", "flow_schema")
                )
                for f in flows:
                    family.add_metric((f.pl, f.fs), getattr(f, attr))
            else:
                family = GaugeMetricFamily(name, help_text, labels=FS_PL)
                for f in flows:
                    family.add_metric((f.fs, f.pl), getattr(f, attr))
            yield family


REGISTRY.register(_FlowCollector())
