"""The scheduler: binds each unscheduled pod to a node through ``pods/binding``.

Like kube-scheduler it watches the pods no node runs yet
(``fieldSelector=spec.nodeName=``) and the nodes, and posts a ``Binding`` carrying the
pod's uid. It considers only pods for ``default-scheduler`` (or none named) that are not
being deleted, and only Ready nodes that are not cordoned; among them it takes the node
it has bound the fewest pods to (no resource fit: the lab's nodes are alike). A 409 means
another binding won; the pod's next event settles it.
"""

from __future__ import annotations

import asyncio
import logging

from lab.sim.client import JSON, APIError, Client
from lab.sim.events import EventBroadcaster, object_reference
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers

__all__ = ["Scheduler"]

log = logging.getLogger("watchcache.sim")

SCHEDULER_NAME = "default-scheduler"
RETRY_UNSCHEDULABLE = 5.0


def schedulable(node: JSON) -> bool:
    """Ready and not cordoned (spec.unschedulable)."""
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class Scheduler:
    """Binds pending pods; ``nodes`` is a nodes informer shared with other controllers."""

    def __init__(self, server: str, nodes: Informer, events: EventBroadcaster) -> None:
        self.client = Client(server, "scheduler")
        self.recorder = events.recorder(SCHEDULER_NAME)
        self.nodes = nodes
        self.pods = Informer(self.client, self.client.core.list_pod_for_all_namespaces,
                             field_selector="spec.nodeName=", name="scheduler pods")  # fmt: skip
        self.queue: WorkQueue[str] = WorkQueue()
        self.bound: dict[str, int] = {}  # node -> pods this scheduler bound there
        self.bindings = 0

    async def run(self) -> None:
        self.pods.add_handler(lambda kind, pod, old: self.queue.add(key_of(pod))
                              if kind != "DELETED" else None)  # fmt: skip
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self.pods.run())
                tg.create_task(run_workers("scheduler", self.queue, self.schedule, 4))
        finally:
            await self.client.close()

    def _wants(self, pod: JSON) -> bool:
        spec = pod.get("spec") or {}
        return (not spec.get("nodeName")
                and spec.get("schedulerName", SCHEDULER_NAME) == SCHEDULER_NAME
                and not (pod.get("metadata") or {}).get("deletionTimestamp"))  # fmt: skip

    def pick(self) -> str | None:
        """The schedulable node with the fewest pods bound by this scheduler."""
        names = sorted(key_of(n) for n in self.nodes.items() if schedulable(n))
        if not names:
            return None
        return min(names, key=lambda n: self.bound.get(n, 0))

    async def schedule(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or not self._wants(pod):
            return
        node = self.pick()
        if node is None:
            self.recorder.event(object_reference(pod, "Pod"), "Warning", "FailedScheduling",
                                self.unschedulable_message())  # fmt: skip
            self.queue.add_after(key, RETRY_UNSCHEDULABLE)
            return
        meta = pod["metadata"]
        binding = {"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                                "uid": meta.get("uid")},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip
        try:
            await self.client.call(self.client.core.create_namespaced_pod_binding,
                                   meta["name"], meta["namespace"], binding)  # fmt: skip
        except APIError as e:
            if e.status in (404, 409):  # gone, or bound meanwhile
                return
            raise
        self.bound[node] = self.bound.get(node, 0) + 1
        self.bindings += 1
        self.recorder.event(object_reference(pod, "Pod"), "Normal", "Scheduled",
                            f"Successfully assigned {meta['namespace']}/{meta['name']} "
                            f"to {node}")  # fmt: skip

    def unschedulable_message(self) -> str:
        """kube-scheduler's FitError message for the nodes this scheduler filters out."""
        nodes = self.nodes.items()
        if not nodes:
            return "no nodes available to schedule pods"
        cordoned = sum(1 for n in nodes if (n.get("spec") or {}).get("unschedulable"))
        not_ready = len(nodes) - cordoned
        reasons = []
        if not_ready:
            reasons.append(f"{not_ready} node(s) had untolerated taint "
                           "{node.kubernetes.io/not-ready: }")  # fmt: skip
        if cordoned:
            reasons.append(f"{cordoned} node(s) were unschedulable")
        return (f"0/{len(nodes)} nodes are available: {', '.join(sorted(reasons))}. "
                f"preemption: 0/{len(nodes)} nodes are available: {len(nodes)} Preemption "
                "is not helpful for scheduling.")
