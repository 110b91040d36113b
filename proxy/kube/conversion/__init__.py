"""Built-in kinds served in more than one version, over one storage version (upstream's
``pkg/apis/<group>/<version>/conversion.go`` through the internal type): which view is
served over which stored resource, with its converter (``VIEWS``). The composition root
serves each view through ``proxy.registry.conversion.VersionedStorage``."""

from __future__ import annotations

from proxy.kube.conversion.autoscaling import HorizontalPodAutoscalerConverter
from proxy.kube.conversion.events import EventConverter
from proxy.registry.conversion import Converter

__all__ = ["VIEWS"]

# (group, version, plural) served -> ((group, version, plural) stored, its converter)
VIEWS: dict[tuple[str, str, str], tuple[tuple[str, str, str], Converter]] = {
    ("events.k8s.io", "v1", "events"): (("", "v1", "events"), EventConverter()),
    ("autoscaling", "v1", "horizontalpodautoscalers"): (
        ("autoscaling", "v2", "horizontalpodautoscalers"),
        HorizontalPodAutoscalerConverter(),
    ),
}
