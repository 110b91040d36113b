"""kube-aggregator's availability metrics (``pkg/controllers/status/metrics``), on
prometheus_client's default registry (served at ``/metrics``):

- ``aggregator_unavailable_apiservice_total{name,reason}``: each time the availability
  controller marks an APIService unavailable (a changed condition written as False);
- ``aggregator_unavailable_apiservice{name}``: 1 while an APIService is unavailable, 0
  when available; a deleted APIService's series is removed.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import Gauge

from proxy.authentication.metrics import ExactCounter

__all__ = ["UNAVAILABLE", "UNAVAILABLE_TOTAL", "record_unavailable", "set_unavailable"]

# exactly this name (prometheus_client's Counter would claim the gauge's name too)
UNAVAILABLE_TOTAL = ExactCounter(
    "aggregator_unavailable_apiservice_total",
    "Counter of APIServices which are marked as unavailable broken down by APIService "
    "name and reason.",
    ("name", "reason"),
)
UNAVAILABLE = Gauge(
    "aggregator_unavailable_apiservice",
    "Gauge of APIServices which are marked as unavailable broken down by APIService name.",
    ["name"],
)


def record_unavailable(name: str, reason: str) -> None:
    UNAVAILABLE_TOTAL.inc(name, reason)


def set_unavailable(available: Mapping[str, bool], previous: set[str]) -> set[str]:
    """Set the gauge of each APIService name (True: available); drop the series of names
    gone since ``previous``. Returns the names now exported."""
    names = set(available)
    for name, up in available.items():
        UNAVAILABLE.labels(name).set(0 if up else 1)
    for gone in previous - names:
        UNAVAILABLE.remove(gone)
    return names
