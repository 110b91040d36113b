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

import asyncio
import contextlib
import logging
import time

from lab.sim.client import JSON, APIError, Client
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers
from lab.sim.owners import ControllerIndex, controller_of, owner_reference

__all__ = ["ReplicaSetController", "active", "ready"]

log = logging.getLogger("watchcache.sim")

EXPECTATIONS_TIMEOUT = 30.0  # client-go's ExpectationsTimeout: 5 minutes; a lab is quicker
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


class _Expectations:
    """Creates and deletes a controller made and has not yet seen in its informer."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[int, int, float]] = {}

    def expect(self, uid: str, adds: int, deletes: int) -> None:
        self._pending[uid] = (adds, deletes, time.monotonic() + EXPECTATIONS_TIMEOUT)

    def observed(self, uid: str, *, added: int = 0, deleted: int = 0) -> None:
        if uid in self._pending:
            adds, deletes, deadline = self._pending[uid]
            self._pending[uid] = (adds - added, deletes - deleted, deadline)

    def satisfied(self, uid: str) -> bool:
        adds, deletes, deadline = self._pending.get(uid, (0, 0, 0.0))
        return (adds <= 0 and deletes <= 0) or time.monotonic() > deadline

    def forget(self, uid: str) -> None:
        self._pending.pop(uid, None)


class ReplicaSetController:
    """Reconciles every ReplicaSet ``replicasets`` reports against ``pods``."""

    def __init__(self, server: str, replicasets: Informer, pods: Informer) -> None:
        self.client = Client(server, "replicaset-controller")
        self.replicasets = replicasets
        self.pods = pods
        self.owned = ControllerIndex(pods, "ReplicaSet")
        self.expectations = _Expectations()
        self.queue = WorkQueue()

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
        uid = str(ref["uid"])
        deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
        was_deleting = bool(old and (old.get("metadata") or {}).get("deletionTimestamp"))
        if kind == "ADDED" and old is None:
            self.expectations.observed(uid, added=1)
        if (kind == "DELETED" and not was_deleting) or (deleting and not was_deleting):
            self.expectations.observed(uid, deleted=1)
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
                await self._create(rs, min(want - len(pods), BURST))
            elif want < len(pods):
                await self._delete(rs, sorted(pods, key=_deletion_rank)[: len(pods) - want])
        await self._update_status(rs, pods)

    async def _create(self, rs: JSON, count: int) -> None:
        uid = str(rs["metadata"]["uid"])
        self.expectations.expect(uid, count, 0)
        template = (rs.get("spec") or {}).get("template") or {}
        meta = template.get("metadata") or {}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": f"{rs['metadata']['name']}-",
                            "labels": dict(meta.get("labels") or {}),
                            "annotations": dict(meta.get("annotations") or {}),
                            "ownerReferences": [owner_reference(
                                {"apiVersion": "apps/v1", "kind": "ReplicaSet", **rs})]},
               "spec": template.get("spec") or {}}  # fmt: skip
        ns = rs["metadata"]["namespace"]
        results = await asyncio.gather(
            *(self.client.call(self.client.core.create_namespaced_pod, ns, pod)
              for _ in range(count)), return_exceptions=True)  # fmt: skip
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            self.expectations.observed(uid, added=len(failed))
            raise failed[0] if isinstance(failed[0], Exception) else RuntimeError(failed[0])

    async def _delete(self, rs: JSON, victims: list[JSON]) -> None:
        uid = str(rs["metadata"]["uid"])
        self.expectations.expect(uid, 0, len(victims))
        for pod in victims:
            meta = pod["metadata"]
            try:
                await self.client.call(self.client.core.delete_namespaced_pod, meta["name"],
                                       meta["namespace"])  # fmt: skip
            except APIError as e:
                self.expectations.observed(uid, deleted=1)
                if e.status != 404:
                    raise

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
