"""The scheduling.k8s.io group's defaults (``pkg/apis/scheduling/v1/defaults.go``)."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, default_nil

__all__ = ["DEFAULTERS"]


def priority_class(obj: JSON) -> None:
    """``SetDefaults_PriorityClass``: preemptionPolicy PreemptLowerPriority."""
    default_nil(obj, "preemptionPolicy", "PreemptLowerPriority")


DEFAULTERS: dict[str, Callable[[JSON], None]] = {"PriorityClass": priority_class}
