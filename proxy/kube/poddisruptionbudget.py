"""What both the eviction subresource and the disruption controller know of a
PodDisruptionBudget (upstream's ``k8s.io/component-helpers/apps/poddisruptionbudget``
and the pod helpers they use): which pods a budget covers, whether a pod is healthy,
and the ``DisruptionAllowed`` condition. Pure functions over plain objects."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from proxy.authorization.rbac.label_selector import selector_matches

__all__ = [
    "DISRUPTION_ALLOWED",
    "covers",
    "is_pod_ready",
    "now_rfc3339",
    "update_disruption_allowed_condition",
]

JSON = dict[str, Any]
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"
_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def covers(pdb: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether ``pdb``'s selector selects a pod with ``labels``. A nil or empty selector
    selects nothing (not everything, as other selectors do), and an invalid one (an
    unknown operator) selects nothing either: upstream skips such a budget."""
    selector = (pdb.get("spec") or {}).get("selector")
    if not isinstance(selector, dict):
        return False
    expressions = [e for e in selector.get("matchExpressions") or [] if isinstance(e, dict)]
    if not selector.get("matchLabels") and not expressions:
        return False
    if any(e.get("operator") not in _OPERATORS for e in expressions):
        return False
    return selector_matches(selector, labels)


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady``: the pod's Ready condition is True."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
               for c in conditions)  # fmt: skip


def update_disruption_allowed_condition(status: JSON) -> None:
    """``UpdateDisruptionAllowedCondition``: ``DisruptionAllowed`` True (SufficientPods)
    while disruptions are allowed, else False (InsufficientPods); its transition time
    moves only when its status does (``meta.SetStatusCondition``)."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    wanted = {"type": DISRUPTION_ALLOWED, "status": "True" if allowed else "False",
              "reason": SUFFICIENT_PODS if allowed else INSUFFICIENT_PODS, "message": "",
              "observedGeneration": int(status.get("observedGeneration") or 0)}  # fmt: skip
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    for c in conditions:
        if c.get("type") == DISRUPTION_ALLOWED:
            if c.get("status") != wanted["status"]:
                c["lastTransitionTime"] = now_rfc3339()
            c.update(wanted)
            break
    else:
        conditions.append({**wanted, "lastTransitionTime": now_rfc3339()})
    status["conditions"] = conditions
