"""``autoscaling/v1`` HorizontalPodAutoscalers over the ``autoscaling/v2`` ones they are
stored as (``pkg/apis/autoscaling/v1/conversion.go``): the CPU utilization target is
v1's ``targetCPUUtilizationPercentage`` (and ``currentCPUUtilizationPercentage``);
everything v1 has no field for travels in annotations, as upstream keeps it —
``autoscaling.alpha.kubernetes.io/metrics`` (the other metrics, in v1's MetricSpec
form), ``.../current-metrics``, ``.../conditions`` and ``.../behavior``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["HorizontalPodAutoscalerConverter"]

JSON = dict[str, Any]

V1, V2 = "autoscaling/v1", "autoscaling/v2"
METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_KEEP_SPEC = ("scaleTargetRef", "minReplicas", "maxReplicas")
_KEEP_STATUS = ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")


def _json(value: Any) -> str:
    """Go's json.Marshal: compact."""
    return json.dumps(value, separators=(",", ":"))


def _is_cpu_utilization(metric: JSON, field: str) -> bool:
    resource = metric.get("resource") or {}
    return (
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and (resource.get(field) or {}).get("averageUtilization") is not None
    )


def _metric_v1(metric: JSON, status: bool) -> JSON:
    """A v2 MetricSpec (or MetricStatus) in v1's form (``targetAverageUtilization``,
    ``metricName``...)."""
    kind = str(metric.get("type") or "")
    key = kind[0].lower() + kind[1:] if kind else ""
    source = metric.get(key) or {}
    value_of = source.get("current" if status else "target") or {}
    prefix = "current" if status else "target"
    out: JSON = {}
    for field in ("name", "container"):
        if field in source:
            out[field] = source[field]
    if "metric" in source:
        out["metricName"] = source["metric"].get("name")
        if source["metric"].get("selector") is not None:
            out["metricSelector" if kind == "External" else "selector"] = source["metric"][
                "selector"]  # fmt: skip
    if "describedObject" in source:
        out["target"] = source["describedObject"]
    if value_of.get("averageUtilization") is not None:
        out[f"{prefix}AverageUtilization"] = value_of["averageUtilization"]
    if value_of.get("averageValue") is not None:
        out["averageValue" if kind == "Object" else f"{prefix}AverageValue"] = value_of[
            "averageValue"]  # fmt: skip
    if value_of.get("value") is not None:
        out[f"{prefix}Value"] = value_of["value"]
    return {"type": kind, key: out}


def _metric_v2(metric: JSON, status: bool) -> JSON:
    """The inverse of :func:`_metric_v1`."""
    kind = str(metric.get("type") or "")
    key = kind[0].lower() + kind[1:] if kind else ""
    source = metric.get(key) or {}
    prefix = "current" if status else "target"
    out: JSON = {k: source[k] for k in ("name", "container") if k in source}
    if "metricName" in source:
        selector = source.get("metricSelector" if kind == "External" else "selector")
        out["metric"] = {"name": source["metricName"]}
        if selector is not None:
            out["metric"]["selector"] = selector
    if "target" in source and kind == "Object":
        out["describedObject"] = source["target"]
    value: JSON = {}
    if source.get(f"{prefix}AverageUtilization") is not None:
        utilization = source[f"{prefix}AverageUtilization"]
        value = {"type": "Utilization", "averageUtilization": utilization}
    average = source.get("averageValue" if kind == "Object" else f"{prefix}AverageValue")
    if average is not None:
        value = {"type": "AverageValue", "averageValue": average}
    if source.get(f"{prefix}Value") is not None:
        value = {"type": "Value", "value": source[f"{prefix}Value"]}
    if status:
        value.pop("type", None)
    out["current" if status else "target"] = value
    return {"type": kind, key: out}


def _split_cpu(metrics: Any, status: bool) -> tuple[Any, list[JSON]]:
    """(the first CPU utilization of v2 ``metrics``, the others in v1's form)."""
    field = "current" if status else "target"
    cpu, others = None, []
    for metric in metrics if isinstance(metrics, list) else []:
        if cpu is None and _is_cpu_utilization(metric, field):
            cpu = metric["resource"][field]["averageUtilization"]
        else:
            others.append(_metric_v1(metric, status=status))
    return cpu, others


def _shell(hpa: JSON, api_version: str) -> tuple[JSON, JSON, JSON]:
    """(the HPA but its spec and status in ``api_version``, its metadata, a copy of its
    annotations to fill)."""
    out = {k: copy.deepcopy(v) for k, v in hpa.items() if k not in ("spec", "status")}
    out["apiVersion"] = api_version
    meta = out.setdefault("metadata", {})
    return out, meta, dict(meta.get("annotations") or {})


def to_v1(hpa: JSON) -> JSON:
    """A v2 HPA as v1 shows it."""
    out, meta, annotations = _shell(hpa, V1)
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    v1_spec = {k: spec[k] for k in _KEEP_SPEC if k in spec}
    cpu, others = _split_cpu(spec.get("metrics"), status=False)
    if cpu is not None:
        v1_spec["targetCPUUtilizationPercentage"] = cpu
    if others:
        annotations[METRICS] = _json(others)
    if spec.get("behavior") is not None:
        annotations[BEHAVIOR] = _json(spec["behavior"])
    v1_status: JSON = {k: status[k] for k in _KEEP_STATUS if k in status}
    v1_status.setdefault("currentReplicas", 0)
    v1_status.setdefault("desiredReplicas", 0)
    cpu, current = _split_cpu(status.get("currentMetrics"), status=True)
    if cpu is not None:
        v1_status["currentCPUUtilizationPercentage"] = cpu
    if current:
        annotations[CURRENT_METRICS] = _json(current)
    if status.get("conditions"):
        annotations[CONDITIONS] = _json(status["conditions"])
    if annotations:
        meta["annotations"] = annotations
    out["spec"], out["status"] = v1_spec, v1_status
    return out


def _annotation(annotations: JSON, key: str) -> Any:
    raw = annotations.pop(key, None)
    try:
        return json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def to_v2(hpa: JSON) -> JSON:
    """A v1 HPA as the v2 object it is stored as (its annotations folded back)."""
    out, meta, annotations = _shell(hpa, V2)
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    v2_spec = {k: spec[k] for k in _KEEP_SPEC if k in spec}
    metrics = [_metric_v2(m, status=False) for m in _annotation(annotations, METRICS) or []]
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.insert(0, {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization",
            "averageUtilization": spec["targetCPUUtilizationPercentage"]}}})  # fmt: skip
    if metrics:
        v2_spec["metrics"] = metrics
    behavior = _annotation(annotations, BEHAVIOR)
    if behavior is not None:
        v2_spec["behavior"] = behavior
    v2_status = {k: status[k] for k in _KEEP_STATUS if k in status}
    current = [_metric_v2(m, status=True) for m in _annotation(annotations, CURRENT_METRICS) or []]
    if status.get("currentCPUUtilizationPercentage") is not None:
        current.insert(0, {"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": status["currentCPUUtilizationPercentage"]}}})  # fmt: skip
    if current:
        v2_status["currentMetrics"] = current
    conditions = _annotation(annotations, CONDITIONS)
    if conditions:
        v2_status["conditions"] = conditions
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["spec"] = v2_spec
    if v2_status or "status" in hpa:
        out["status"] = v2_status
    return out


class HorizontalPodAutoscalerConverter:
    """Both directions, by the wanted apiVersion (``proxy.registry.conversion.Converter``)."""

    async def convert(self, objects: list[Any], api_version: str) -> list[Any]:
        convert = to_v1 if api_version == V1 else to_v2
        return [o if o.get("apiVersion") == api_version else convert(o) for o in objects]
