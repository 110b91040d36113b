"""``aggregator_unavailable_apiservice{name}``: 1 while unavailable, 0 when available,
each name's series set as it is checked and dropped when its APIService is deleted."""

from __future__ import annotations

from prometheus_client import REGISTRY

from proxy.aggregator.metrics import set_unavailable


def _series() -> dict[str, float]:
    return {s.labels["name"]: s.value
            for m in REGISTRY.collect() if m.name == "aggregator_unavailable_apiservice"
            for s in m.samples if s.labels["name"].endswith(".metrics.test")}  # fmt: skip


def test_each_name_is_set_as_checked_and_dropped_when_deleted() -> None:
    set_unavailable("v1.a.metrics.test", True)
    set_unavailable("v1.b.metrics.test", False)
    assert _series() == {"v1.a.metrics.test": 0.0, "v1.b.metrics.test": 1.0}
    set_unavailable("v1.a.metrics.test", False)  # the next check: now unavailable
    assert _series() == {"v1.a.metrics.test": 1.0, "v1.b.metrics.test": 1.0}
    set_unavailable("v1.b.metrics.test", None)  # deleted
    set_unavailable("v1.gone.metrics.test", None)  # never exported: nothing to drop
    assert _series() == {"v1.a.metrics.test": 1.0}
    set_unavailable("v1.a.metrics.test", None)
    assert _series() == {}
