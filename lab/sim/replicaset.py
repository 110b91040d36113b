"""The ReplicaSet controller: keeps ``spec.replicas`` pods of each ReplicaSet alive.

It watches ReplicaSets and pods (shared informers), counts the active pods each
ReplicaSet controls (ownerReference ``controller: true`` with its uid; not being
deleted, not Succeeded/Failed), creates the missing ones from the pod template
(``generateName: <rs>-``, an ownerReference that blocks the owner's foreground deletion)
and deletes the surplus (unscheduled, then pending, then not ready, then the newest
first, as upstream ranks them). Like client-go's controllers it records the creates and
deletes it expects to see and waits for the informer to show them before counting again,
so a stale cache never makes it create twice. Then it writes ``status`` (replicas,
fullyLabeledReplicas, readyReplicas, availableReplicas, observedGeneration) when it
changed. Orphaned pods are not adopted.
"""

from __future__ import annotations

import contextlib
import logging

from lab.sim.client import JSON, APIError, Client
from lab.sim.events import EventBroadcaster
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers
from lab.sim.owners import ControllerIndex, controller_of
from lab.sim.pod_control import Expectations, PodControl

__all__ = ["ReplicaSetController", "active", "ready"]

log = logging.getLogger("watchcache.sim")

BURST = 50


def active(pod: JSON) -> bool:
    return not (pod.get("metadata") or {}).get("deletionTimestamp") and (
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))


def ready(pod: JSON) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _deletion_rank(pod: JSON) -> tuple[int, int, int, str]:
    """Sort key: the pods to delete first come first (upstream's ActivePods ranking)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}.get(str(status.get("phase")), 0)
    created = str((pod.get("metadata") or {}).get("creationTimestamp") or "")
    newest_first = "".join(chr(0x10FFFF - ord(ch)) for ch in created)
    return (1 if spec.get("nodeName") else 0, phase_rank, 1 if ready(pod) else 0, newest_first)


def _typed(rs: JSON) -> JSON:
    """``rs`` with the apiVersion and kind a list item lacks (for ownerReferences)."""
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", **rs}


class ReplicaSetController:
    """Reconciles every ReplicaSet ``replicasets`` reports against ``pods``."""

    def __init__(
        self, server: str, replicasets: Informer, pods: Informer, events: EventBroadcaster
    ) -> None:
        self.client = Client(server, "replicaset-controller")
        self.replicasets = replicasets
        self.pods = pods
        self.owned = ControllerIndex(pods, "ReplicaSet")
        self.expectations = Expectations()
        self.pod_control = PodControl(self.client, self.expectations,
                                      events.recorder("replicaset-controller"))  # fmt: skip
        self.queue: WorkQueue[str] = WorkQueue()

    async def run(self) -> None:
        self.replicasets.add_handler(lambda kind, rs, old: self.queue.add(key_of(rs)))
        self.pods.add_handler(self._on_pod)
        try:
            await run_workers("replicaset-controller", self.queue, self.sync, 4)
        finally:
            await self.client.close()

    def _on_pod(self, kind: str, pod: JSON, old: JSON | None) -> None:
        ref = controller_of(pod, "ReplicaSet")
        if ref is None:
            return
        self.expectations.observe_pod(str(ref["uid"]), kind, pod, old)
        self.queue.add(f"{(pod.get('metadata') or {}).get('namespace')}/{ref['name']}")

    async def sync(self, key: str) -> None:
        rs = self.replicasets.get(key)
        if rs is None:
            return
        uid = str(rs["metadata"]["uid"])
        pods = [p for p in self.owned.dependents(uid) if active(p)]
        if self.expectations.satisfied(uid) and not rs["metadata"].get("deletionTimestamp"):
            want = int((rs.get("spec") or {}).get("replicas", 1))
            if want > len(pods):
                await self.pod_control.create(_typed(rs), min(want - len(pods), BURST))
            elif want < len(pods):
                victims = sorted(pods, key=_deletion_rank)[: len(pods) - want]
                await self.pod_control.delete(_typed(rs), victims)
        await self._update_status(rs, pods)

    async def _update_status(self, rs: JSON, pods: list[JSON]) -> None:
        selector_labels = (((rs.get("spec") or {}).get("template") or {}).get("metadata")
                           or {}).get("labels") or {}  # fmt: skip
        labelled = [p for p in pods if selector_labels.items() <= (
            (p.get("metadata") or {}).get("labels") or {}).items()]  # fmt: skip
        n_ready = sum(1 for p in pods if ready(p))
        status = {
            "replicas": len(pods),
            "fullyLabeledReplicas": len(labelled),
            "readyReplicas": n_ready,
            "availableReplicas": n_ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        old = rs.get("status") or {}
        if all(old.get(k, 0) == v for k, v in status.items()):
            return
        body = {"apiVersion": "apps/v1", "kind": "ReplicaSet", **rs,
                "status": {**old, **{k: v for k, v in status.items()}}}  # fmt: skip
        for k in ("readyReplicas", "availableReplicas", "fullyLabeledReplicas"):
            if not body["status"][k]:
                body["status"].pop(k)  # omitempty, as upstream writes them
        meta = rs["metadata"]
        with contextlib.suppress(APIError):  # 409/404: the next event brings it again
            await self.client.call(self.client.apps.replace_namespaced_replica_set_status,
                                   meta["name"], meta["namespace"], body)  # fmt: skip
