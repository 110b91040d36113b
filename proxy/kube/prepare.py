"""What the built-in kinds' strategies set on the objects they write, beyond ObjectMeta
(upstream's ``PrepareForCreate`` / ``PrepareForUpdate`` of the namespace, pod and secret
strategies, and the Secret's ``stringData`` conversion)."""

from __future__ import annotations

import base64

from storage.interfaces import JSONObject

__all__ = ["namespace_defaults", "pod_qos_class", "secret_defaults"]


def secret_defaults(obj: JSONObject) -> None:
    """As the Secret's conversion and defaulting on every write: ``stringData`` (write
    only) is merged into ``data`` base64-encoded, its keys winning; type ``Opaque``."""
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        current = obj.get("data")
        data: JSONObject = current if isinstance(current, dict) else {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    if not obj.get("type"):
        obj["type"] = "Opaque"


def namespace_defaults(obj: JSONObject, name: str) -> None:
    """What kube-apiserver's namespace strategy sets on create: the immutable
    ``kubernetes.io/metadata.name`` label (not for a nameless one, as
    ``SetDefaults_Namespace``: validation then refuses it), the ``kubernetes``
    finalizer, phase Active."""
    labels = obj["metadata"].setdefault("labels", {})
    if isinstance(labels, dict) and name:
        labels["kubernetes.io/metadata.name"] = name
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and not spec.get("finalizers"):
        spec["finalizers"] = ["kubernetes"]
    obj["status"] = {"phase": "Active"}


def pod_qos_class(pod: JSONObject) -> str:
    """The pod's QoS class, as kube's ``qos.GetPodQOS`` decides it for cpu and memory:
    no requests or limits at all → BestEffort; every container with limits equal to
    requests for both → Guaranteed; anything else → Burstable."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    containers = [
        c
        for key in ("initContainers", "containers")
        for c in (spec or {}).get(key) or []
        if isinstance(c, dict)
    ]
    any_set = False
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") if isinstance(c.get("resources"), dict) else {}
        requests = (res or {}).get("requests") or {}
        limits = (res or {}).get("limits") or {}
        if any(requests.get(r) or limits.get(r) for r in ("cpu", "memory")):
            any_set = True
        for r in ("cpu", "memory"):
            limit = limits.get(r)
            if not limit or requests.get(r, limit) != limit:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
