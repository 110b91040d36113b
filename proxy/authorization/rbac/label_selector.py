"""A metav1.LabelSelector (``matchLabels`` + ``matchExpressions``) matched against
labels, for ClusterRole aggregation. An empty selector matches everything, as
``metav1.LabelSelectorAsSelector`` makes it; an unknown operator matches nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["selector_matches"]


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = str(expr.get("key", ""))
    op = expr.get("operator")
    values = {str(v) for v in expr.get("values") or ()}
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(str(key)) != str(value):
            return False
    return all(
        _expression_matches(expr, labels)
        for expr in selector.get("matchExpressions") or ()
        if isinstance(expr, Mapping)
    )
