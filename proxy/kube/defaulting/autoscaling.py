"""The autoscaling group's defaults (``pkg/apis/autoscaling/v2/defaults.go`` and
``v1/defaults.go``)."""

from __future__ import annotations

import copy
from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, child, default_nil, member

__all__ = ["DEFAULTERS_V1", "DEFAULTERS_V2"]

# the scaling rules an unset behavior member gets (upstream's defaultHPAScaleUpRules /
# defaultHPAScaleDownRules; scale-down has no stabilization window: the controller's
# --horizontal-pod-autoscaler-downscale-stabilization applies)
_SCALE_UP: JSON = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_SCALE_DOWN: JSON = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}
_CPU_80: JSON = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}


def _scaling_rules(sent: JSON | None, defaults: JSON) -> JSON:
    """``copyHPAScalingRules``: the defaults with every member the client set."""
    rules = copy.deepcopy(defaults)
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
        if sent is not None and sent.get(key) is not None:
            rules[key] = sent[key]
    return rules


def horizontal_pod_autoscaler_v2(obj: JSON) -> None:
    """``SetDefaults_HorizontalPodAutoscaler`` (v2): minReplicas 1, a CPU target of
    80% when no metric is given, and a given behavior's unset rules filled in
    (``SetDefaults_HorizontalPodAutoscalerBehavior``)."""
    spec = child(obj, "spec")
    if spec is None:
        return
    default_nil(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [copy.deepcopy(_CPU_80)]
    behavior = member(spec, "behavior")
    if behavior is not None:
        behavior["scaleUp"] = _scaling_rules(member(behavior, "scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _scaling_rules(member(behavior, "scaleDown"), _SCALE_DOWN)


def horizontal_pod_autoscaler_v1(obj: JSON) -> None:
    """``SetDefaults_HorizontalPodAutoscaler`` (v1): minReplicas 1."""
    spec = child(obj, "spec")
    if spec is not None:
        default_nil(spec, "minReplicas", 1)


DEFAULTERS_V1: dict[str, Callable[[JSON], None]] = {
    "HorizontalPodAutoscaler": horizontal_pod_autoscaler_v1,
}
DEFAULTERS_V2: dict[str, Callable[[JSON], None]] = {
    "HorizontalPodAutoscaler": horizontal_pod_autoscaler_v2,
}
