"""The built-in conversions round-trip: an object written in one version and read in
the other, then written back, is the object it was (upstream's roundtrip tests of
``pkg/apis/autoscaling/v1`` and ``pkg/apis/events/v1``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from proxy.kube.conversion.autoscaling import METRICS, HorizontalPodAutoscalerConverter
from proxy.kube.conversion.events import EventConverter

_SELECTOR = {"matchLabels": {"app": "web"}}
HPA_V2: dict[str, Any] = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "h", "annotations": {"keep": "me"}},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1, "maxReplicas": 9,
        "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 60}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps", "selector": _SELECTOR},
                                      "target": {"type": "AverageValue", "averageValue": "1k"}}},
            {"type": "Object", "object": {
                "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "s"},
                "metric": {"name": "hits"}, "target": {"type": "Value", "value": "10"}}},
            {"type": "External", "external": {"metric": {"name": "q", "selector": _SELECTOR},
                                              "target": {"type": "AverageValue",
                                                         "averageValue": "30"}}},
            {"type": "ContainerResource", "containerResource": {
                "name": "memory", "container": "app",
                "target": {"type": "Utilization", "averageUtilization": 80}}},
        ],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
    },
    "status": {
        "currentReplicas": 2, "desiredReplicas": 3,
        "currentMetrics": [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": 55}}}],
        "conditions": [{"type": "AbleToScale", "status": "True"}],
    },
}  # fmt: skip


def _convert(converter: Any, obj: dict[str, Any], api_version: str) -> dict[str, Any]:
    [out] = asyncio.run(converter.convert([obj], api_version))
    return out  # type: ignore[no-any-return]


def test_an_hpa_round_trips_through_v1() -> None:
    converter = HorizontalPodAutoscalerConverter()
    v1 = _convert(converter, HPA_V2, "autoscaling/v1")
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60
    assert v1["status"]["currentCPUUtilizationPercentage"] == 55
    metrics = json.loads(v1["metadata"]["annotations"][METRICS])
    assert metrics[0] == {"type": "Pods", "pods": {
        "metricName": "qps", "selector": _SELECTOR, "targetAverageValue": "1k"}}
    assert metrics[3]["containerResource"] == {
        "name": "memory", "container": "app", "targetAverageUtilization": 80}
    assert _convert(converter, v1, "autoscaling/v2") == HPA_V2


def test_an_event_round_trips_through_events_v1() -> None:
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m", "count": 3,
            "source": {"component": "kubelet"}, "reportingComponent": "kubelet",
            "firstTimestamp": "2026-01-01T00:00:00Z", "type": "Warning", "reason": "R"}
    converter = EventConverter()
    seen = _convert(converter, core, "events.k8s.io/v1")
    assert seen["note"] == "m" and seen["deprecatedCount"] == 3 and seen["eventTime"] is None
    assert seen["deprecatedFirstTimestamp"] == "2026-01-01T00:00:00Z"
    assert seen["reportingController"] == "kubelet"
    assert _convert(converter, seen, "v1") == core
