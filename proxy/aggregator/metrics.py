"""kube-aggregator's availability metrics (``pkg/controllers/status/metrics``), on
prometheus_client's default registry (served at ``/metrics``):

- ``aggregator_unavailable_apiservice_total{name,reason}``: each time the availability
  controller marks an APIService unavailable (a changed condition written as False);
- ``aggregator_unavailable_apiservice{name}``: 1 while an APIService is unavailable, 0
  when available; a deleted APIService's series is removed.
"""

from __future__ import annotations

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


def set_unavailable(name: str, available: bool | None) -> None:
    """Set the gauge of the APIService ``name`` (True: available), or drop its series
    (None: deleted). One name at a time, as each is checked: setting every name's gauge
    at each check was a ``labels()`` call per name per name, every few seconds."""
    if available is None:
        UNAVAILABLE.remove(name)
    else:
        UNAVAILABLE.labels(name).set(0 if available else 1)
