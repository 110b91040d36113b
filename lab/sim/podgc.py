"""The pod garbage collector (kube-controller-manager's ``pkg/controller/podgc``): every
``period`` (20 s) it force-deletes (grace period 0) the pods nothing else will ever
delete:

- **terminated** pods (``Succeeded``/``Failed``) beyond ``threshold``
  (``--terminated-pod-gc-threshold``, 12,500; 0 turns this off): the evicted first, then
  the oldest;
- **orphaned** pods, bound to a node that no longer exists: a node missing from the
  informer is quarantined for ``quarantine`` (40 s) and then asked for by name; once
  the server says 404 its pods are first marked ``Failed`` with the ``DisruptionTarget``
  condition (``DeletionByPodGC``, ``PodGC: node no longer exists``), then deleted;
- **unscheduled terminating** pods: being deleted, bound to no node (no kubelet will
  ever finish them);
- **terminating pods of an out-of-service node**: a node not Ready and tainted
  ``node.kubernetes.io/out-of-service`` (NodeOutOfServiceVolumeDetach) will not finish
  its pods either.

A pod not yet terminal is patched to ``Failed`` before its deletion
(``markFailedAndDeletePodWithCondition``); the delete carries the pod's UID as a
precondition, so a pod recreated under the same name is left alone.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from lab.sim import pod_status
from lab.sim.client import JSON, APIError, Client
from lab.sim.informer import Informer
from lab.sim.node_agent import TRANSIENT

__all__ = ["GC_PERIOD", "QUARANTINE", "TERMINATED_THRESHOLD", "Plan", "PodGC", "plan"]

log = logging.getLogger("watchcache.sim")

GC_PERIOD = 20.0
QUARANTINE = 40.0  # seconds a node is missing before its pods are orphans
TERMINATED_THRESHOLD = 12500
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
_TERMINAL = ("Succeeded", "Failed")


def _terminated(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") in _TERMINAL


def _evicted_then_oldest(pod: JSON) -> tuple[int, str, str]:
    """``byEvictionAndCreationTimestamp``."""
    status, meta = pod.get("status") or {}, pod.get("metadata") or {}
    evicted = status.get("phase") == "Failed" and status.get("reason") == "Evicted"
    return (0 if evicted else 1, str(meta.get("creationTimestamp") or ""),
            str(meta.get("name") or ""))  # fmt: skip


def _out_of_service(node: JSON) -> bool:
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in (node.get("status") or {}).get("conditions") or [])  # fmt: skip
    tainted = any(t.get("key") == OUT_OF_SERVICE
                  for t in (node.get("spec") or {}).get("taints") or [])  # fmt: skip
    return tainted and not ready


@dataclass
class Plan:
    """What one pass deletes (pods), and the nodes it must ask the server about."""

    terminated: list[JSON] = field(default_factory=list)
    unscheduled: list[JSON] = field(default_factory=list)
    out_of_service: list[JSON] = field(default_factory=list)
    missing_nodes: set[str] = field(default_factory=set)


def plan(pods: list[JSON], nodes: dict[str, JSON], threshold: int) -> Plan:
    """One pass's work over the informers' ``pods`` and ``nodes`` (by name)."""
    out = Plan()
    terminated = [p for p in pods if _terminated(p)]
    if threshold > 0 and len(terminated) > threshold:
        terminated.sort(key=_evicted_then_oldest)
        out.terminated = terminated[: len(terminated) - threshold]
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName") or ""
        deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
        if not node_name:
            if deleting:
                out.unscheduled.append(pod)
        elif node_name not in nodes:
            out.missing_nodes.add(node_name)
        elif deleting and _out_of_service(nodes[node_name]):
            out.out_of_service.append(pod)
    return out


class PodGC:
    """Collects among ``pods`` (see the module docstring)."""

    def __init__(
        self, server: str, pods: Informer, nodes: Informer, *,
        threshold: int = TERMINATED_THRESHOLD, period: float = GC_PERIOD,
        quarantine: float = QUARANTINE,
    ) -> None:  # fmt: skip
        self.client = Client(server, "pod-garbage-collector")
        self.pods, self.nodes = pods, nodes
        self.threshold, self.period, self.quarantine = threshold, period, quarantine
        self._missing_since: dict[str, float] = {}  # node name -> when first missed
        self.deleted: dict[str, int] = {}  # reason -> pods deleted (the podgc metric's)

    async def run(self) -> None:
        try:
            await self.pods.synced.wait()
            await self.nodes.synced.wait()
            while True:
                try:
                    await self.gc()
                except TRANSIENT as e:
                    log.info("pod-garbage-collector: %s", e)
                await asyncio.sleep(self.period)
        finally:
            await self.client.close()

    async def gc(self) -> None:
        nodes = {n["metadata"]["name"]: n for n in self.nodes.items()}
        work = plan(self.pods.items(), nodes, self.threshold)
        for pod in work.terminated:
            await self._delete(pod, "terminated")
        for pod in await self._orphans(work.missing_nodes):
            await self._delete(pod, "orphaned", "PodGC: node no longer exists")
        for pod in work.unscheduled:
            await self._delete(pod, "unscheduled")
        for pod in work.out_of_service:
            await self._delete(pod, "out-of-service")

    async def _orphans(self, missing: set[str]) -> list[JSON]:
        """The pods of the nodes missing for the quarantine that the server no longer
        has (``discoverDeletedNodes``)."""
        now = asyncio.get_running_loop().time()
        for name in list(self._missing_since):
            if name not in missing:
                del self._missing_since[name]  # back (or its pods gone)
        gone = set()
        for name in missing:
            since = self._missing_since.setdefault(name, now)
            if now - since < self.quarantine:
                continue
            try:
                await self.client.call(self.client.core.read_node, name)
            except APIError as e:
                if e.status == 404:
                    gone.add(name)
        return [p for p in self.pods.items() if (p.get("spec") or {}).get("nodeName") in gone]

    async def _delete(self, pod: JSON, reason: str, condition: str = "") -> None:
        """``markFailedAndDeletePodWithCondition``: Failed (with the DisruptionTarget
        condition when ``condition`` says why), then deleted with no grace period."""
        meta = pod["metadata"]
        try:
            if not _terminated(pod):
                status = dict(pod.get("status") or {})
                status["phase"] = "Failed"
                if condition:
                    target = {"type": "DisruptionTarget", "status": "True",
                              "reason": "DeletionByPodGC", "message": condition,
                              "lastTransitionTime": pod_status.now()}  # fmt: skip
                    status["conditions"] = [*(c for c in status.get("conditions") or []
                                              if c.get("type") != "DisruptionTarget"), target]
                await self.client.call(self.client.core.replace_namespaced_pod_status,
                                       meta["name"], meta["namespace"], {**pod, "status": status})
            body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                    "preconditions": {"uid": meta.get("uid")}}  # fmt: skip
            await self.client.call(self.client.core.delete_namespaced_pod, meta["name"],
                                   meta["namespace"], body=body)  # fmt: skip
        except APIError as e:  # gone or changed: the next pass decides again
            if e.status not in (404, 409):
                raise
            return
        log.info("pod-garbage-collector: deleted %s/%s (%s)", meta["namespace"], meta["name"],
                 reason)  # fmt: skip
        self.deleted[reason] = self.deleted.get(reason, 0) + 1
