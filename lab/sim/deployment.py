"""The Deployment controller: a ReplicaSet per pod template, rolled out step by step.

For each Deployment (watched, with the ReplicaSets it controls) it finds the ReplicaSet
whose template is the Deployment's (ignoring the ``pod-template-hash`` label) or creates
it as ``<deployment>-<hash>`` with the next ``deployment.kubernetes.io/revision``; then

- ``RollingUpdate``: scales the new ReplicaSet up while all pods stay within
  ``replicas + maxSurge`` (25 % by default, rounded up) and the old ones down while at
  least ``replicas - maxUnavailable`` (25 %, rounded down) pods are available, one step
  per sync (upstream's reconcileNewReplicaSet / reconcileOldReplicaSets);
- ``Recreate``: scales the old ReplicaSets to zero, then the new one up;
- a scale (``kubectl scale``) of a settled Deployment resizes its ReplicaSet at once;
- it writes ``status`` (replicas, updatedReplicas, readyReplicas, availableReplicas,
  unavailableReplicas, observedGeneration and the Available / Progressing conditions
  that ``kubectl rollout status`` reads) and the Deployment's revision annotation, and
  deletes old empty ReplicaSets beyond ``revisionHistoryLimit`` (10).

Paused Deployments get status only; progress deadlines are not tracked.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import math

import orjson

from lab.sim import pod_status
from lab.sim.client import JSON, APIError, Client
from lab.sim.events import EventBroadcaster, object_reference
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers
from lab.sim.owners import ControllerIndex, controller_of, owner_reference

__all__ = ["DeploymentController", "resolve_fraction", "template_hash"]

log = logging.getLogger("watchcache.sim")

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
SAFE = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.SafeEncodeString alphabet


def template_hash(template: JSON, collisions: int = 0) -> str:
    """A short, stable name suffix for a pod template (upstream: fnv32a, safe-encoded)."""


    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS) + str(collisions).encode()
    n = int.from_bytes(hashlib.sha256(data).digest()[:4], "big")
    return "".join(SAFE[int(d) % len(SAFE)] for d in str(n))[:10]


def resolve_fraction(value: int | str | None, total: int, *, round_up: bool) -> int:
    """An int or percentage string (``25%``) of ``total``."""
    if isinstance(value, str) and value.endswith("%"):
        exact = float(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


def _without_hash(template: JSON) -> JSON:
    """The template without its hash label and without null fields (``kubectl rollout
    undo`` sends ``creationTimestamp: null``; upstream compares Go structs, where a null
    and an absent field are the same)."""
    t = _without_nulls(copy.deepcopy(template))
    (t.get("metadata") or {}).get("labels", {}).pop(HASH_LABEL, None)
    return t


def _without_nulls(value: JSON) -> JSON:
    out: JSON = {}
    for k, v in value.items():
        if isinstance(v, dict):
            v = _without_nulls(v)
        if v is not None:
            out[k] = v
    return out


def _template_of(rs: JSON) -> JSON:
    return _without_hash((rs.get("spec") or {}).get("template") or {})


def _name_ns(obj: JSON) -> tuple[str, str]:
    return str(obj["metadata"]["name"]), str(obj["metadata"]["namespace"])


def _replicas(rs: JSON) -> int:
    return int((rs.get("spec") or {}).get("replicas") or 0)


def _status(rs: JSON, field: str) -> int:
    return int((rs.get("status") or {}).get(field) or 0)


def _revision(obj: JSON) -> int:
    return int(((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION) or 0)


class DeploymentController:
    """Reconciles every Deployment ``deployments`` reports."""

    def __init__(
        self, server: str, deployments: Informer, replicasets: Informer, events: EventBroadcaster
    ) -> None:
        self.client = Client(server, "deployment-controller")
        self.recorder = events.recorder("deployment-controller")
        self.deployments = deployments
        self.replicasets = replicasets
        self.owned = ControllerIndex(replicasets, "Deployment")
        self.queue: WorkQueue[str] = WorkQueue()

    async def run(self) -> None:
        self.deployments.add_handler(lambda kind, d, old: self.queue.add(key_of(d)))
        self.replicasets.add_handler(self._on_replicaset)
        try:
            await run_workers("deployment-controller", self.queue, self.sync, 2)
        finally:
            await self.client.close()

    def _on_replicaset(self, kind: str, rs: JSON, old: JSON | None) -> None:
        ref = controller_of(rs, "Deployment")
        if ref is not None:
            self.queue.add(f"{rs['metadata']['namespace']}/{ref['name']}")

    async def sync(self, key: str) -> None:
        d = self.deployments.get(key)
        if d is None or d["metadata"].get("deletionTimestamp"):
            return
        d = {"apiVersion": "apps/v1", "kind": "Deployment", **d}
        rses = self.owned.dependents(str(d["metadata"]["uid"]))
        spec = d.get("spec") or {}
        template = spec.get("template") or {}
        wanted = _without_hash(template)
        new = next((rs for rs in rses if _template_of(rs) == wanted), None)
        old = sorted((rs for rs in rses if rs is not new),
                     key=lambda rs: str(rs["metadata"].get("creationTimestamp")))  # fmt: skip
        if spec.get("paused"):
            await self._sync_status(d, new, old)
            return
        if new is None:
            await self._create_replicaset(d, old)
            return  # its ADDED event brings the next step
        latest = max([_revision(rs) for rs in old] + [0])
        if _revision(new) <= latest:  # an older template again (rollout undo): re-number
            await self._scale(d, new, _replicas(new), revision=latest + 1)
            return
        strategy = (spec.get("strategy") or {}).get("type", "RollingUpdate")
        changed = await (self._recreate(d, new, old) if strategy == "Recreate"
                         else self._roll(d, new, old))  # fmt: skip
        if not changed:
            await self._cleanup(d, old)
        await self._sync_status(d, new, old)

    # -- replica sets --------------------------------------------------------------------

    def _limits(self, d: JSON) -> tuple[int, int, int]:
        """(replicas, maxSurge, maxUnavailable)."""
        spec = d.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        surge = resolve_fraction(rolling.get("maxSurge", "25%"), replicas, round_up=True)
        unavailable = resolve_fraction(rolling.get("maxUnavailable", "25%"), replicas,
                                       round_up=False)  # fmt: skip
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return replicas, surge, unavailable

    async def _create_replicaset(self, d: JSON, old: list[JSON]) -> None:
        meta, spec = d["metadata"], d.get("spec") or {}
        h = template_hash(spec.get("template") or {}, int((d.get("status") or {}).get(
            "collisionCount") or 0))  # fmt: skip
        template = copy.deepcopy(spec.get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = h
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = h
        replicas, surge, _ = self._limits(d)
        if (spec.get("strategy") or {}).get("type") == "Recreate" and any(
                _replicas(rs) for rs in old):  # fmt: skip
            start = 0
        else:
            start = max(0, min(replicas, replicas + surge - sum(_replicas(rs) for rs in old)))
        revision = max([_revision(rs) for rs in old] + [0]) + 1
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"{meta['name']}-{h}", "namespace": meta["namespace"],
                           "labels": dict(template["metadata"]["labels"]),
                           "annotations": {REVISION: str(revision), DESIRED: str(replicas),
                                           MAX_REPLICAS: str(replicas + surge)},
                           "ownerReferences": [owner_reference(d)]},
              "spec": {"replicas": start, "selector": selector, "template": template,
                       "minReadySeconds": int(spec.get("minReadySeconds") or 0)}}  # fmt: skip
        created = await self.client.call(self.client.apps.create_namespaced_replica_set,
                                         meta["namespace"], rs)  # fmt: skip
        if start > 0:
            self._scaled(d, created, 0, start)

    async def _scale(self, d: JSON, rs: JSON, replicas: int, revision: int = 0) -> None:
        replicas_d, surge, _ = self._limits(d)
        body = {"apiVersion": "apps/v1", "kind": "ReplicaSet", **copy.deepcopy(rs)}
        body["spec"]["replicas"] = replicas
        annotations = body["metadata"].setdefault("annotations", {})
        annotations.update({DESIRED: str(replicas_d), MAX_REPLICAS: str(replicas_d + surge)})
        if revision:
            annotations[REVISION] = str(revision)
        await self.client.call(self.client.apps.replace_namespaced_replica_set,
                               *_name_ns(rs), body)
        if replicas != _replicas(rs):
            self._scaled(d, rs, _replicas(rs), replicas)

    def _scaled(self, d: JSON, rs: JSON, before: int, after: int) -> None:
        """The deployment controller's ScalingReplicaSet Event on the Deployment."""
        way = "up" if after > before else "down"
        self.recorder.event(object_reference(d, "Deployment", "apps/v1"), "Normal",
                            "ScalingReplicaSet", f"Scaled {way} replica set "
                            f"{rs['metadata']['name']} from {before} to {after}")  # fmt: skip

    async def _roll(self, d: JSON, new: JSON, old: list[JSON]) -> bool:
        """One rolling-update step; True when it scaled something."""
        replicas, surge, unavailable = self._limits(d)
        every = [new, *old]
        total = sum(_replicas(rs) for rs in every)
        current = _replicas(new)
        if not any(_replicas(rs) for rs in old) and current != replicas:
            await self._scale(d, new, replicas)  # settled: a plain scale
            return True
        if current > replicas:
            await self._scale(d, new, replicas)
            return True
        if current < replicas and total < replicas + surge:
            await self._scale(d, new, min(replicas, current + replicas + surge - total))
            return True
        min_available = replicas - unavailable
        new_unavailable = current - _status(new, "availableReplicas")
        available = sum(_status(rs, "availableReplicas") for rs in every)
        budget = min(total - min_available - new_unavailable, available - min_available)
        changed = False
        for rs in old:
            if budget <= 0:
                break
            down = min(_replicas(rs), budget)
            if down:
                await self._scale(d, rs, _replicas(rs) - down)
                budget -= down
                changed = True
        return changed

    async def _recreate(self, d: JSON, new: JSON, old: list[JSON]) -> bool:
        replicas = int((d.get("spec") or {}).get("replicas", 1))
        running = [rs for rs in old if _replicas(rs)]
        for rs in running:
            await self._scale(d, rs, 0)
        if running or any(_status(rs, "replicas") for rs in old):
            return bool(running)
        if _replicas(new) != replicas:
            await self._scale(d, new, replicas)
            return True
        return False

    async def _cleanup(self, d: JSON, old: list[JSON]) -> None:
        limit = int((d.get("spec") or {}).get("revisionHistoryLimit", 10))
        empty = [rs for rs in old if not _replicas(rs) and not _status(rs, "replicas")]
        for rs in empty[: max(0, len(empty) - limit)]:
            with contextlib.suppress(APIError):
                await self.client.call(self.client.apps.delete_namespaced_replica_set,
                                       *_name_ns(rs))

    # -- status --------------------------------------------------------------------------

    async def _sync_status(self, d: JSON, new: JSON | None, old: list[JSON]) -> None:
        replicas, _, unavailable = self._limits(d)
        every = ([new] if new else []) + old
        available = sum(_status(rs, "availableReplicas") for rs in every)
        updated = _status(new, "replicas") if new else 0
        total = sum(_status(rs, "replicas") for rs in every)
        status: JSON = {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": sum(_status(rs, "readyReplicas") for rs in every),
            "availableReplicas": available,
            "unavailableReplicas": max(sum(_replicas(rs) for rs in every) - available, 0),
        }
        old_status = d.get("status") or {}
        name = new["metadata"]["name"] if new else ""
        complete = updated == replicas == total and available == replicas
        conditions = [
            _condition(old_status, "Available", available >= replicas - unavailable,
                       ("MinimumReplicasAvailable", "Deployment has minimum availability.")
                       if available >= replicas - unavailable else
                       ("MinimumReplicasUnavailable",
                        "Deployment does not have minimum availability.")),
            _condition(old_status, "Progressing", True,
                       ("NewReplicaSetAvailable", f'ReplicaSet "{name}" has successfully '
                        "progressed.") if complete else
                       ("ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.')),
        ]  # fmt: skip
        status = {k: v for k, v in status.items() if v or k == "observedGeneration"}
        status["conditions"] = conditions
        if "collisionCount" in old_status:
            status["collisionCount"] = old_status["collisionCount"]
        if _same_status(old_status, status):
            await self._sync_revision(d, new)
            return
        body = {**d, "status": status}
        meta = d["metadata"]
        with contextlib.suppress(APIError):  # 409: the next event brings it again
            d = await self.client.call(self.client.apps.replace_namespaced_deployment_status,
                                       meta["name"], meta["namespace"], body)  # fmt: skip
            await self._sync_revision({"apiVersion": "apps/v1", "kind": "Deployment", **d}, new)

    async def _sync_revision(self, d: JSON, new: JSON | None) -> None:
        if new is None or _revision(d) == _revision(new):
            return
        body = copy.deepcopy(d)
        body["metadata"].setdefault("annotations", {})[REVISION] = str(_revision(new))
        with contextlib.suppress(APIError):
            await self.client.call(self.client.apps.replace_namespaced_deployment,
                                   *_name_ns(d), body)


def _condition(old_status: JSON, kind: str, true: bool, why: tuple[str, str]) -> JSON:
    """A condition keeping its transition time while its status holds."""
    stamp = pod_status.now()
    prev: JSON = next(
        (c for c in old_status.get("conditions") or [] if c.get("type") == kind), {})
    status = "True" if true else "False"
    same = prev.get("status") == status and prev.get("reason") == why[0]
    return {"type": kind, "status": status,
            "lastUpdateTime": prev.get("lastUpdateTime") if same else stamp,
            "lastTransitionTime": prev.get("lastTransitionTime")
            if prev.get("status") == status else stamp,
            "reason": why[0], "message": why[1]}  # fmt: skip


def _same_status(a: JSON, b: JSON) -> bool:
    def strip(s: JSON) -> JSON:
        return {**s, "conditions": [{k: v for k, v in c.items() if not k.endswith("Time")}
                                    for c in s.get("conditions") or []]}  # fmt: skip

    return strip(a) == strip(b)
