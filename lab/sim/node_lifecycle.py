"""The node lifecycle controller and the taint eviction controller, as
kube-controller-manager runs them (``pkg/controller/nodelifecycle``,
``pkg/controller/tainteviction``).

Every ``monitor_period`` (``--node-monitor-period``, 5 s) it looks at every node: a
node is heard from when its ``Ready`` condition's ``lastHeartbeatTime`` or its Lease's
``renewTime`` (in ``kube-node-lease``) changes, as the controller sees it. A node not
heard from for ``grace_period`` (``--node-monitor-grace-period``, 50 s):

- has its Ready, MemoryPressure, DiskPressure and PIDPressure conditions set to
  ``Unknown`` (reason ``NodeStatusUnknown``, ``Kubelet stopped posting node status.``),
  a ``NodeNotReady`` Event, and the Ready condition of each of its pods set False (with
  a ``NodeNotReady`` Event each);
- is tainted ``node.kubernetes.io/unreachable`` with effects ``NoSchedule`` and
  ``NoExecute`` (``node.kubernetes.io/not-ready`` when the kubelet itself reports Ready
  False); the taints go once it is Ready again (a ``NodeReady`` Event).

The taint eviction part deletes the pods of a node with ``NoExecute`` taints that do
not tolerate them: at once without a matching toleration, else once the smallest
``tolerationSeconds`` of the matching ones has passed since the taint was added (the
DefaultTolerationSeconds admission plugin gives every pod 300 s for both taints). An
evicted pod gets the ``DisruptionTarget`` condition (``DeletionByTaintManager``) and a
``TaintManagerEviction`` Event, then is deleted (gracefully: its node agent is gone,
so it stays Terminating, as on a real cluster, until the node returns or is deleted).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import logging

from lab.sim import pod_status
from lab.sim.client import JSON, APIError, Client
from lab.sim.events import EventBroadcaster, object_reference
from lab.sim.informer import Informer
from lab.sim.node_agent import LEASE_NAMESPACE, TRANSIENT

__all__ = ["GRACE_PERIOD", "MONITOR_PERIOD", "NodeLifecycleController", "taints_for",
           "tolerated_for"]  # fmt: skip

log = logging.getLogger("watchcache.sim")

MONITOR_PERIOD = 5.0
GRACE_PERIOD = 50.0
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def taints_for(ready: str, taints: list[JSON], now: str) -> list[JSON]:
    """``taints`` with the controller's own set for a Ready condition of ``ready``
    (True: none; False: not-ready; Unknown: unreachable); one already there is kept
    (its timeAdded too)."""
    key = {"False": NOT_READY, "Unknown": UNREACHABLE}.get(ready)
    others = [t for t in taints if t.get("key") not in (UNREACHABLE, NOT_READY)]
    if key is None:
        return others
    mine = [t for t in taints if t.get("key") == key]
    effects = {t.get("effect") for t in mine}
    if "NoSchedule" not in effects:
        mine.append({"key": key, "effect": "NoSchedule"})
    if "NoExecute" not in effects:
        mine.append({"key": key, "effect": "NoExecute", "timeAdded": now})
    return others + mine


def _tolerates(toleration: JSON, taint: JSON) -> bool:
    """``Toleration.ToleratesTaint``."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    if toleration.get("operator") == "Exists":
        return True
    return bool(toleration.get("key")) and str(toleration.get("value") or "") == str(
        taint.get("value") or "")  # fmt: skip


def tolerated_for(pod: JSON, taints: list[JSON]) -> float | None:
    """Seconds after the latest of ``taints`` (NoExecute) that ``pod`` may stay (0: none
    tolerated; None: forever), as ``getMinTolerationTime``."""
    tolerations = [t for t in (pod.get("spec") or {}).get("tolerations") or []
                   if isinstance(t, dict)]  # fmt: skip
    least: float | None = None
    for taint in taints:
        used = [t for t in tolerations if _tolerates(t, taint)]
        if not used:
            return 0.0
        for t in used:
            seconds = t.get("tolerationSeconds")
            if seconds is not None:
                least = float(seconds) if least is None else min(least, float(seconds))
    return least


def _parse(stamp: str) -> float:
    return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()


class NodeLifecycleController:
    """Watches ``nodes``, their Leases and ``pods`` (see the module docstring)."""

    def __init__(
        self, server: str, nodes: Informer, pods: Informer, events: EventBroadcaster, *,
        monitor_period: float = MONITOR_PERIOD, grace_period: float = GRACE_PERIOD,
    ) -> None:  # fmt: skip
        self.client = Client(server, "node-controller")
        self.nodes, self.pods = nodes, pods
        list_leases = functools.partial(self.client.coordination.list_namespaced_lease,
                                        LEASE_NAMESPACE)  # fmt: skip
        self.leases = Informer(self.client, list_leases, name="node leases")
        self.recorder = events.recorder("node-controller")
        self.evictions = events.recorder("taint-eviction-controller")
        self.monitor_period, self.grace_period = monitor_period, grace_period
        # node name -> (what was last heard: heartbeat and lease renew time, when seen)
        self._heard: dict[str, tuple[tuple[str, str], float]] = {}

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self.leases.run())
                tg.create_task(self._monitor())
        finally:
            await self.client.close()

    async def _monitor(self) -> None:
        await self.nodes.synced.wait()
        while True:
            for node in self.nodes.items():
                try:
                    await self._monitor_node(node)
                    await self._evict_pods(node)
                except TRANSIENT as e:
                    log.info("node-controller %s: %s", node["metadata"]["name"], e)
            await asyncio.sleep(self.monitor_period)

    def _silent_for(self, node: JSON) -> float:
        """Seconds since anything new was heard of ``node``."""
        name = node["metadata"]["name"]
        lease = self.leases.get(f"{LEASE_NAMESPACE}/{name}") or {}
        heard = (str(_condition(node, "Ready").get("lastHeartbeatTime") or ""),
                 str((lease.get("spec") or {}).get("renewTime") or ""))  # fmt: skip
        now = asyncio.get_running_loop().time()
        before = self._heard.get(name)
        if before is None or before[0] != heard:
            self._heard[name] = (heard, now)
            return 0.0
        return now - before[1]

    async def _monitor_node(self, node: JSON) -> None:
        ready = _condition(node, "Ready")
        if self._silent_for(node) > self.grace_period and ready.get("status") != "Unknown":
            node = await self._mark_unknown(node)
            ready = _condition(node, "Ready")
        status = str(ready.get("status") or "Unknown")
        taints = list((node.get("spec") or {}).get("taints") or [])
        wanted = taints_for(status, taints, pod_status.now())
        if wanted != taints:
            node = {**node, "spec": {**(node.get("spec") or {}), "taints": wanted}}
            if not wanted:
                node["spec"].pop("taints")
            with contextlib.suppress(APIError):  # 409: the next pass sees the newer node
                await self.client.call(self.client.core.replace_node, node["metadata"]["name"],
                                       node)  # fmt: skip
            if status == "True" and any(t.get("key") == UNREACHABLE for t in taints):
                self._node_event(node, "NodeReady")

    async def _mark_unknown(self, node: JSON) -> JSON:
        """Every condition Unknown (``tryUpdateNodeHealth``), the pods not ready."""
        now = pod_status.now()
        status = dict(node.get("status") or {})
        conditions = [dict(c) for c in status.get("conditions") or []]
        for kind in CONDITIONS:
            c = next((c for c in conditions if c.get("type") == kind), None)
            if c is None:
                never = {"type": kind, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                         "message": "Kubelet never posted node status.",
                         "lastHeartbeatTime": now, "lastTransitionTime": now}  # fmt: skip
                conditions.append(never)
            elif c.get("status") != "Unknown":
                c.update(status="Unknown", reason="NodeStatusUnknown",
                         message="Kubelet stopped posting node status.", lastTransitionTime=now)
        status["conditions"] = conditions
        replace = self.client.core.replace_node_status
        updated = await self.client.call(replace, node["metadata"]["name"],
                                         {**node, "status": status})  # fmt: skip
        self._node_event(node, "NodeNotReady")
        await self._mark_pods_not_ready(node["metadata"]["name"])
        return updated

    def _node_event(self, node: JSON, reason: str) -> None:
        name = node["metadata"]["name"]
        ref = object_reference(node, "Node")
        self.recorder.event(ref, "Normal", reason, f"Node {name} status is now: {reason}")

    def _pods_on(self, name: str) -> list[JSON]:
        return [p for p in self.pods.items() if (p.get("spec") or {}).get("nodeName") == name]

    async def _mark_pods_not_ready(self, name: str) -> None:
        """``MarkPodsNotReady``: Ready False on every pod of the node."""
        for pod in self._pods_on(name):
            status = dict(pod.get("status") or {})
            conditions = [dict(c) for c in status.get("conditions") or []]
            ready = next((c for c in conditions if c.get("type") == "Ready"), None)
            if ready is None or ready.get("status") == "False":
                continue
            ready.update(status="False", lastTransitionTime=pod_status.now())
            meta = pod["metadata"]
            body = {**pod, "status": {**status, "conditions": conditions}}
            with contextlib.suppress(APIError):
                await self.client.call(self.client.core.replace_namespaced_pod_status,
                                       meta["name"], meta["namespace"], body)  # fmt: skip
                self.recorder.event(object_reference(pod, "Pod"), "Warning", "NodeNotReady",
                                    "Node is not ready")  # fmt: skip

    async def _evict_pods(self, node: JSON) -> None:
        """The taint eviction controller's pass over ``node``'s pods."""
        taints = [t for t in (node.get("spec") or {}).get("taints") or []
                  if t.get("effect") == "NoExecute"]  # fmt: skip
        if not taints:
            return
        added = max((_parse(str(t["timeAdded"])) for t in taints if t.get("timeAdded")),
                    default=dt.datetime.now(dt.UTC).timestamp())  # fmt: skip
        now = dt.datetime.now(dt.UTC).timestamp()
        for pod in self._pods_on(node["metadata"]["name"]):
            if pod["metadata"].get("deletionTimestamp"):
                continue
            seconds = tolerated_for(pod, taints)
            if seconds is not None and added + seconds <= now:
                await self._evict(pod)

    async def _evict(self, pod: JSON) -> None:
        meta = pod["metadata"]
        message = f"Marking for deletion Pod {meta['namespace']}/{meta['name']}"
        self.evictions.event(object_reference(pod, "Pod"), "Normal", "TaintManagerEviction",
                             message)  # fmt: skip
        status = dict(pod.get("status") or {})
        condition = {"type": "DisruptionTarget", "status": "True",
                     "reason": "DeletionByTaintManager",
                     "message": "Taint manager: deleting due to NoExecute taint",
                     "lastTransitionTime": pod_status.now()}  # fmt: skip
        status["conditions"] = [*(c for c in status.get("conditions") or []
                                  if c.get("type") != "DisruptionTarget"), condition]  # fmt: skip
        with contextlib.suppress(APIError):  # gone or changed: the next pass decides again
            await self.client.call(self.client.core.replace_namespaced_pod_status, meta["name"],
                                   meta["namespace"], {**pod, "status": status})  # fmt: skip
            body = {"apiVersion": "v1", "kind": "DeleteOptions",
                    "preconditions": {"uid": meta.get("uid")}}  # fmt: skip
            await self.client.call(self.client.core.delete_namespaced_pod, meta["name"],
                                   meta["namespace"], body=body)  # fmt: skip


def _condition(node: JSON, kind: str) -> JSON:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {}
