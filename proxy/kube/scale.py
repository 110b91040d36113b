"""Where the built-in scalable kinds (deployments, replicasets, statefulsets,
replicationcontrollers) keep their replicas and selector, for their ``/scale``
subresource (``proxy.registry.scale.ScaleREST``)."""

from __future__ import annotations

from typing import Any

from proxy.printers.columns import format_label_selector
from storage.interfaces import JSONObject

__all__ = ["SPEC_REPLICAS"]


class _SpecReplicas:
    """``spec.replicas``, ``status.replicas`` and ``spec.selector``: a label selector,
    or, for a ReplicationController, a plain label map (``SelectorFromSet``)."""

    def read(self, obj: JSONObject) -> tuple[Any, Any, str]:
        spec = obj.get("spec") or {}
        raw_selector = spec.get("selector")
        if obj.get("kind") == "ReplicationController" and isinstance(raw_selector, dict):
            selector = ",".join(f"{k}={v}" for k, v in sorted(raw_selector.items()))
        else:
            selector = format_label_selector(raw_selector)
        status_replicas = int((obj.get("status") or {}).get("replicas") or 0)
        return spec.get("replicas"), status_replicas, selector

    def write_replicas(self, obj: JSONObject, replicas: int) -> None:
        obj.setdefault("spec", {})["replicas"] = replicas


SPEC_REPLICAS = _SpecReplicas()
