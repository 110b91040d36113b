"""Which pods a scoped ResourceQuota counts, after kube's pod quota evaluator
(``pkg/quota/v1/evaluator/core/pods.go``: ``podMatchesScopeFunc``): a quota with
``spec.scopes`` or ``spec.scopeSelector`` counts only the pods every scope matches.

Terminating / NotTerminating: ``activeDeadlineSeconds`` set (>= 0) or not; BestEffort /
NotBestEffort: the pod's QoS class (no container states a cpu or memory request or
limit); PriorityClass: the selector's operator on ``priorityClassName``;
CrossNamespacePodAffinity: an affinity term names namespaces or a namespace selector.
Scopes apply to pods only (validation refuses them on quotas of other resources).
"""

from __future__ import annotations

from typing import Any

__all__ = ["matches_scopes", "scope_requirements"]

JSON = dict[str, Any]


def scope_requirements(quota: JSON) -> list[JSON]:
    """``spec.scopes`` as Exists requirements, then ``spec.scopeSelector``'s
    (upstream's ``getScopeSelectorsFromQuota``)."""
    spec = quota.get("spec") or {}
    out: list[JSON] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    selector = spec.get("scopeSelector") or {}
    out += [r for r in selector.get("matchExpressions") or [] if isinstance(r, dict)]
    return out


def matches_scopes(quota: JSON, pod: JSON) -> bool:
    """Whether ``quota`` counts ``pod``."""
    return all(_matches(r, pod) for r in scope_requirements(quota))


def _containers(spec: JSON) -> list[JSON]:
    return [c for key in ("initContainers", "containers") for c in spec.get(key) or []
            if isinstance(c, dict)]  # fmt: skip


def is_best_effort(pod: JSON) -> bool:
    """``qos.GetPodQOS == BestEffort``: no cpu or memory request or limit anywhere."""
    for c in _containers(pod.get("spec") or {}):
        resources = c.get("resources") or {}
        for kind in ("requests", "limits"):
            if any(r in (resources.get(kind) or {}) for r in ("cpu", "memory")):
                return False
    return True


def is_terminating(pod: JSON) -> bool:
    deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    return isinstance(deadline, int) and deadline >= 0


def _cross_namespace_affinity(pod: JSON) -> bool:
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        preferred = rules.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        terms += [w.get("podAffinityTerm") or {} for w in preferred]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def _priority_class(requirement: JSON, pod: JSON) -> bool:
    name = str((pod.get("spec") or {}).get("priorityClassName") or "")
    operator = requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or []]
    if operator == "Exists":
        return bool(name)
    if operator == "DoesNotExist":
        return not name
    if operator == "In":
        return bool(name) and name in values
    if operator == "NotIn":
        return not name or name not in values
    return False


def _matches(requirement: JSON, pod: JSON) -> bool:
    scope = requirement.get("scopeName")
    if scope == "Terminating":
        return is_terminating(pod)
    if scope == "NotTerminating":
        return not is_terminating(pod)
    if scope == "BestEffort":
        return is_best_effort(pod)
    if scope == "NotBestEffort":
        return not is_best_effort(pod)
    if scope == "PriorityClass":
        return _priority_class(requirement, pod)
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod)
    return False
