"""The Priority admission plugin (kube's ``plugin/pkg/admission/priority``): a created
pod's ``spec.priority`` and ``spec.preemptionPolicy`` come from its PriorityClass
(``priorityClassName``; without one, the class marked ``globalDefault``, else 0 and
``PreemptLowerPriority``). An unknown class is 403 ``no PriorityClass with name X was
found``; a ``priority`` in the spec that differs from the class's is 403 as upstream.
A PriorityClass marked ``globalDefault`` while another one is refused.

The two system classes (``system-node-critical``, ``system-cluster-critical``) are
created at start-up, as kube-apiserver's ``scheduling/bootstrap-system-priority-
classes`` hook does (``proxy.app.admission``).
"""

from __future__ import annotations

from typing import Any

from proxy import apierrors
from proxy.admission.attributes import CREATE, UPDATE, Attributes
from proxy.admission.interfaces import Plugin
from proxy.kube.admission.pods import is_pod

__all__ = ["SYSTEM_PRIORITY_CLASSES", "Priority"]

JSON = dict[str, Any]
GROUP = "scheduling.k8s.io"
SYSTEM_PRIORITY_CLASSES: tuple[JSON, ...] = (
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
     "metadata": {"name": "system-node-critical"}, "value": 2000001000,
     "description": "Used for system critical pods that must not be moved from their "
                    "current node.", "preemptionPolicy": "PreemptLowerPriority"},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
     "metadata": {"name": "system-cluster-critical"}, "value": 2000000000,
     "description": "Used for system critical pods that must run in the cluster, but can "
                    "be moved to another node if necessary.",
     "preemptionPolicy": "PreemptLowerPriority"},
)  # fmt: skip


class Priority(Plugin):
    name = "Priority"
    operations = frozenset({CREATE, UPDATE})
    mutating = True
    validating = True

    async def admit(self, attrs: Attributes) -> None:
        if attrs.operation != CREATE or not is_pod(attrs) or attrs.subresource:
            return
        spec = (attrs.object or {}).setdefault("spec", {})
        name = spec.get("priorityClassName")
        value, policy = 0, "PreemptLowerPriority"
        if name:
            klass = await self.lookup.get(GROUP, "priorityclasses", "", str(name))
            if klass is None:
                raise apierrors.forbidden("pods", attrs.name,
                                          f"no PriorityClass with name {name} was found")
        else:
            klass = next((c for c in await self.lookup.list(GROUP, "priorityclasses", "")
                          if c.get("globalDefault")), None)
            if klass is not None:
                spec["priorityClassName"] = klass["metadata"]["name"]
        if klass is not None:
            value = int(klass.get("value") or 0)
            policy = str(klass.get("preemptionPolicy") or policy)
        if spec.get("priority") is not None and spec["priority"] != value:
            raise apierrors.forbidden(
                "pods", attrs.name, f"the integer value of priority ({spec['priority']}) must "
                f"not be provided in pod spec; priority admission controller computed {value} "
                "from the given PriorityClass name")
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise apierrors.forbidden(
                "pods", attrs.name, f"the string value of PreemptionPolicy "
                f"({spec['preemptionPolicy']}) must not be provided in pod spec; priority "
                f"admission controller computed {policy} from the given PriorityClass name")
        spec["priority"] = value
        spec["preemptionPolicy"] = policy

    async def validate(self, attrs: Attributes) -> None:
        if (attrs.resource.group, attrs.resource.plural) != (GROUP, "priorityclasses"):
            return
        if attrs.object is None or not attrs.object.get("globalDefault"):
            return
        for other in await self.lookup.list(GROUP, "priorityclasses", ""):
            if other.get("globalDefault") and other["metadata"]["name"] != attrs.name:
                raise apierrors.forbidden(
                    "priorityclasses.scheduling.k8s.io", attrs.name,
                    f"PriorityClass {other['metadata']['name']} is already marked as default. "
                    "Only one default can exist")
