"""The disruption controller: keeps every PodDisruptionBudget's status, as
kube-controller-manager's ``pkg/controller/disruption`` does, so that the eviction
subresource (and ``kubectl drain``) can judge evictions against it.

For each budget it takes the pods of its namespace that its selector selects (an empty
selector selects none) and writes, when anything changed:

- ``expectedPods`` and ``desiredHealthy``: with an integer ``minAvailable``, the pods
  found and that number; with ``maxUnavailable`` or a percentage, the scale of the pods'
  controllers (a Deployment's ``spec.replicas`` through its ReplicaSets, a ReplicaSet's,
  a StatefulSet's, a ReplicationController's) and the number scaled from it (rounded
  up), never below 0;
- ``currentHealthy``: the ready pods not being deleted and not evicted within the last
  two minutes (``disruptedPods``, which the eviction subresource fills; entries of pods
  gone, being deleted or older than that are dropped, the budget rechecked when the
  oldest expires);
- ``disruptionsAllowed``: ``currentHealthy - desiredHealthy`` (0 when negative or when
  no pod is expected), ``observedGeneration``, and the ``DisruptionAllowed`` condition.

A budget whose expected count cannot be computed (a pod without a controller the
controller knows) gets no disruption (``SyncFailed``) and a
``CalculateExpectedPodCountFailed`` Event; one that selects nothing a ``NoPods`` Event.
"""

from __future__ import annotations

import datetime as dt
import logging
import math

from lab.sim.client import JSON, APIError, Client
from lab.sim.events import EventBroadcaster, object_reference
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers
from lab.sim.owners import controller_of
from proxy.kube import poddisruptionbudget as pdbs
from proxy.printers.columns import format_label_selector

__all__ = ["DisruptionController", "scaled"]

log = logging.getLogger("watchcache.sim")

DELETION_TIMEOUT = 120.0  # seconds an evicted pod may take to be deleted (DeletionTimeout)
# the kinds a pod's controller may be, with the path of their objects (spec.replicas)
_SCALED = {"ReplicationController": "/api/v1/namespaces/{ns}/replicationcontrollers/{name}",
           "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}"}  # fmt: skip


_UNMANAGED = ("Pods selected by this PodDisruptionBudget (selector: {}) were found to be "
              "unmanaged. As a result, the status of the PDB cannot be calculated correctly, "
              "which may result in undefined behavior. To account for these pods please set "
              '".spec.minAvailable" field of the PDB to an integer value.')  # fmt: skip


class ExpectedCountFailed(Exception):
    """The expected pod count of a budget cannot be computed (upstream's words)."""


def scaled(value: int | str, total: int) -> int:
    """``GetScaledValueFromIntOrPercent`` rounding up: an int, or ``N%`` of ``total``."""
    if isinstance(value, int):
        return value
    if not value.endswith("%") or not value[:-1].isdigit():
        raise ExpectedCountFailed(f'invalid value for IntOrString: invalid value "{value}"')
    return math.ceil(int(value[:-1]) * total / 100)


def _parse(stamp: str) -> float:
    return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()


class DisruptionController:
    """Reconciles every budget ``budgets`` reports against ``pods``."""

    def __init__(
        self, server: str, budgets: Informer, pods: Informer, replicasets: Informer,
        deployments: Informer, events: EventBroadcaster,
    ) -> None:  # fmt: skip
        self.client = Client(server, "disruption-controller")
        self.budgets, self.pods = budgets, pods
        self.replicasets, self.deployments = replicasets, deployments
        self.recorder = events.recorder("controllermanager")
        self.queue: WorkQueue[str] = WorkQueue()

    async def run(self) -> None:
        self.budgets.add_handler(lambda kind, pdb, old: self.queue.add(key_of(pdb)))
        self.pods.add_handler(self._on_pod)
        try:
            await run_workers("disruption-controller", self.queue, self.sync, 2)
        finally:
            await self.client.close()

    def _on_pod(self, kind: str, pod: JSON, old: JSON | None) -> None:
        """Queue the budgets that select the pod now or selected it before."""
        namespace = (pod.get("metadata") or {}).get("namespace")
        labels = [((p.get("metadata") or {}).get("labels") or {}) for p in (pod, old) if p]
        for pdb in self.budgets.items():
            if (pdb.get("metadata") or {}).get("namespace") != namespace:
                continue
            if any(pdbs.covers(pdb, lbl) for lbl in labels):
                self.queue.add(key_of(pdb))

    def _pods_of(self, pdb: JSON) -> list[JSON]:
        namespace = pdb["metadata"].get("namespace")
        return [p for p in self.pods.items()
                if p["metadata"].get("namespace") == namespace
                and pdbs.covers(pdb, p["metadata"].get("labels") or {})]  # fmt: skip

    async def sync(self, key: str) -> None:
        pdb = self.budgets.get(key)
        if pdb is None or pdb["metadata"].get("deletionTimestamp"):
            return
        pods = self._pods_of(pdb)
        ref = object_reference(pdb, "PodDisruptionBudget", "policy/v1")
        if not pods:
            self.recorder.event(ref, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired = await self._expected_count(pdb, pods)
        except ExpectedCountFailed as e:
            message = f"Failed to calculate the number of expected pods: {e}"
            self.recorder.event(ref, "Warning", "CalculateExpectedPodCountFailed", message)
            failed = _failed_status(pdb, str(e))
            if failed != pdb.get("status"):
                await self._write(pdb, failed)
            return
        now = dt.datetime.now(dt.UTC).timestamp()
        disrupted, recheck = self._disrupted(pdb, pods, now)
        healthy = sum(1 for p in pods if _healthy(p, disrupted))
        status = _status(pdb, healthy, desired, expected, disrupted)
        if status != pdb.get("status"):
            await self._write(pdb, status)
        if recheck is not None:
            self.queue.add_after(key, max(recheck - now, 0.0))

    def _disrupted(
        self, pdb: JSON, pods: list[JSON], now: float
    ) -> tuple[dict[str, str], float | None]:
        """``buildDisruptedPodMap``: the evictions still expected to complete, and when
        the first of them expires."""
        recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
        kept: dict[str, str] = {}
        recheck: float | None = None
        for pod in pods:
            name = pod["metadata"]["name"]
            if pod["metadata"].get("deletionTimestamp") or name not in recorded:
                continue
            expires = _parse(str(recorded[name])) + DELETION_TIMEOUT
            if expires < now:
                budget = f"{pdb['metadata']['namespace']}/{pdb['metadata']['name']}"
                self.recorder.event(object_reference(pod, "Pod"), "Warning", "NotDeleted",
                                    f"Pod was expected by PDB {budget} to be deleted but it "
                                    "wasn't")  # fmt: skip
                continue
            kept[name] = str(recorded[name])
            recheck = expires if recheck is None else min(recheck, expires)
        return kept, recheck

    async def _expected_count(self, pdb: JSON, pods: list[JSON]) -> tuple[int, int]:
        """``getExpectedPodCount``: (expectedPods, desiredHealthy)."""
        spec = pdb.get("spec") or {}
        max_unavailable, min_available = spec.get("maxUnavailable"), spec.get("minAvailable")
        if max_unavailable is not None:
            expected = await self._expected_scale(pdb, pods)
            return expected, max(expected - scaled(max_unavailable, expected), 0)
        if isinstance(min_available, int):
            return len(pods), min_available
        if min_available is not None:
            expected = await self._expected_scale(pdb, pods)
            return expected, scaled(min_available, expected)
        return 0, 0

    async def _expected_scale(self, pdb: JSON, pods: list[JSON]) -> int:
        """``getExpectedScale``: the replicas of every controller of ``pods``, each
        counted once; pods without a controller are not counted (an ``UnmanagedPods``
        warning says so)."""
        seen: dict[str, int] = {}
        unmanaged = [p for p in pods if controller_of(p) is None]
        if unmanaged:
            selector = format_label_selector((pdb.get("spec") or {}).get("selector") or {})
            about = object_reference(pdb, "PodDisruptionBudget", "policy/v1")
            self.recorder.event(about, "Warning", "UnmanagedPods", _UNMANAGED.format(selector))
        for pod in pods:
            ref = controller_of(pod)
            if ref is None or str(ref.get("uid")) in seen:
                continue
            replicas = await self._replicas_of(str(pod["metadata"]["namespace"]), ref)
            if replicas is None:
                raise ExpectedCountFailed(
                    f'found no controllers for pod "{pod["metadata"]["name"]}"'
                )
            seen[str(ref.get("uid"))] = replicas
        return sum(seen.values())

    async def _replicas_of(self, namespace: str, ref: JSON) -> int | None:
        kind, name = ref.get("kind"), str(ref.get("name"))
        if kind == "ReplicaSet":
            rs = self.replicasets.get(f"{namespace}/{name}")
            if rs is None:
                return None
            owner = controller_of(rs, "Deployment")
            if owner is not None:  # a Deployment's ReplicaSet: the Deployment's scale
                deployment = self.deployments.get(f"{namespace}/{owner['name']}")
                return None if deployment is None else _replicas(deployment)
            return _replicas(rs)
        if kind == "Deployment":
            deployment = self.deployments.get(f"{namespace}/{name}")
            return None if deployment is None else _replicas(deployment)
        path = _SCALED.get(str(kind))
        if path is None:
            return None
        try:
            return _replicas(await self.client.raw("GET", path.format(ns=namespace, name=name)))
        except APIError:
            return None

    async def _write(self, pdb: JSON, status: JSON) -> None:
        meta = pdb["metadata"]
        body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", **pdb, "status": status}
        replace = self.client.policy.replace_namespaced_pod_disruption_budget_status
        try:
            await self.client.call(replace, meta["name"], meta["namespace"], body)
        except APIError as e:  # 409/404: the informer brings the news again
            log.info("disruption-controller %s/%s: %s", meta["namespace"], meta["name"], e)


def _healthy(pod: JSON, disrupted: dict[str, str]) -> bool:
    """``countHealthyPods``: ready, not being deleted, not evicted a moment ago."""
    meta = pod["metadata"]
    return (not meta.get("deletionTimestamp") and meta["name"] not in disrupted
            and pdbs.is_pod_ready(pod))  # fmt: skip


def _replicas(obj: JSON) -> int:
    return int((obj.get("spec") or {}).get("replicas", 1))


def _status(
    pdb: JSON, healthy: int, desired: int, expected: int, disrupted: dict[str, str]
) -> JSON:
    """``updatePdbStatus``: the status to write (equal to the old one: nothing to do)."""
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    old = pdb.get("status") or {}
    status: JSON = {"currentHealthy": healthy, "desiredHealthy": desired,
                    "disruptionsAllowed": allowed, "expectedPods": expected,
                    "observedGeneration": int(pdb["metadata"].get("generation") or 0),
                    "conditions": [dict(c) for c in old.get("conditions") or []]}  # fmt: skip
    if disrupted:
        status["disruptedPods"] = disrupted
    pdbs.update_disruption_allowed_condition(status)
    return status


def _failed_status(pdb: JSON, message: str) -> JSON:
    """``failSafe``: no disruption while the budget cannot be computed."""
    status: JSON = {**(pdb.get("status") or {}), "disruptionsAllowed": 0,
                    "observedGeneration": int(pdb["metadata"].get("generation") or 0)}  # fmt: skip
    others = [c for c in status.get("conditions") or [] if c.get("type") != pdbs.DISRUPTION_ALLOWED]
    previous = [
        c for c in status.get("conditions") or [] if c.get("type") == pdbs.DISRUPTION_ALLOWED
    ]
    was_false = previous and previous[0].get("status") == "False"
    since = previous[0].get("lastTransitionTime") if was_false else pdbs.now_rfc3339()
    status["conditions"] = [*others, {"type": pdbs.DISRUPTION_ALLOWED, "status": "False",
                                      "reason": "SyncFailed", "message": message,
                                      "observedGeneration": status["observedGeneration"],
                                      "lastTransitionTime": since}]  # fmt: skip
    return status
