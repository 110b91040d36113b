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
- is tainted ``node.kubernetes.io/unreachable`` with effect ``NoSchedule`` at once and
  ``NoExecute`` as its zone's eviction rate allows (:mod:`lab.sim.zone_eviction`:
  ``--node-eviction-rate``, ``--secondary-node-eviction-rate``,
  ``--unhealthy-zone-threshold``, ``--large-cluster-size-threshold``; none while every
  zone is fully disrupted) — ``node.kubernetes.io/not-ready`` when the kubelet itself
  reports Ready False, an existing NoExecute taint swapped at once; the taints go once it
  is Ready again (a ``NodeReady`` Event).

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
from lab.sim.zone_eviction import FULL, INITIAL, EvictionRates, TokenBucket, zone_of, zone_state

__all__ = ["GRACE_PERIOD", "MONITOR_PERIOD", "NodeLifecycleController", "has_no_execute",
           "taints_for", "tolerated_for"]  # fmt: skip

log = logging.getLogger("watchcache.sim")

MONITOR_PERIOD = 5.0
GRACE_PERIOD = 50.0
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def taints_for(
    ready: str, taints: list[JSON], now: str, no_execute: bool | None = True
) -> list[JSON]:
    """``taints`` with the controller's own set for a Ready condition of ``ready``
    (True: none; False: not-ready; Unknown: unreachable); one already there is kept
    (its timeAdded too). ``no_execute``: True, the NoExecute taint too (its zone's
    limiter let it through); None, only one already there, swapped to this key at once
    as upstream does; False, none (every zone is fully disrupted)."""
    key = {"False": NOT_READY, "Unknown": UNREACHABLE}.get(ready)
    others = [t for t in taints if t.get("key") not in (UNREACHABLE, NOT_READY)]
    if key is None:
        return others
    held = [t for t in taints if t.get("key") == key]
    out = others + ([t for t in held if t.get("effect") == "NoSchedule"]
                    or [{"key": key, "effect": "NoSchedule"}])  # fmt: skip
    tainted = any(t.get("effect") == "NoExecute" and t.get("key") in (UNREACHABLE, NOT_READY)
                  for t in taints)  # fmt: skip
    if no_execute or (no_execute is None and tainted):
        out += ([t for t in held if t.get("effect") == "NoExecute"]
                or [{"key": key, "effect": "NoExecute", "timeAdded": now}])  # fmt: skip
    return out


def has_no_execute(node: JSON) -> bool:
    """The node carries the controller's NoExecute taint (either key)."""
    return any(t.get("effect") == "NoExecute" and t.get("key") in (UNREACHABLE, NOT_READY)
               for t in (node.get("spec") or {}).get("taints") or [])  # fmt: skip


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
        rates: EvictionRates | None = None,
    ) -> None:  # fmt: skip
        self.client = Client(server, "node-controller")
        self.nodes, self.pods = nodes, pods
        list_leases = functools.partial(self.client.coordination.list_namespaced_lease,
                                        LEASE_NAMESPACE)  # fmt: skip
        self.leases = Informer(self.client, list_leases, name="node leases")
        self.recorder = events.recorder("node-controller")
        self.evictions = events.recorder("taint-eviction-controller")
        self.monitor_period, self.grace_period = monitor_period, grace_period
        self.rates = rates or EvictionRates()
        # the nodes as this pass last wrote them (the informer may lag a write)
        self._current: dict[str, JSON] = {}
        # node name -> (what was last heard: heartbeat and lease renew time, when seen)
        self._heard: dict[str, tuple[tuple[str, str], float]] = {}
        # per zone: its state, its NoExecute tainting limiter and queue (node names)
        self._zone_states: dict[str, str] = {}
        self._limiters: dict[str, TokenBucket] = {}
        self._tainting: dict[str, dict[str, None]] = {}
        self._all_disrupted = False

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
            ready: dict[str, str] = {}
            self._current = {}
            for node in self.nodes.items():
                try:
                    ready[node["metadata"]["name"]] = await self._monitor_node(node)
                except TRANSIENT as e:
                    log.info("node-controller %s: %s", node["metadata"]["name"], e)
            try:
                await self._handle_disruption(ready)
                await self._taint_pass()
            except TRANSIENT as e:
                log.info("node-controller: %s", e)
            for node in self.nodes.items():
                try:
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

    async def _monitor_node(self, node: JSON) -> str:
        """Conditions and NoSchedule taints at once; a node not Ready and not yet
        tainted NoExecute queued in its zone, a Ready one untainted. Its Ready status."""
        ready = _condition(node, "Ready")
        if self._silent_for(node) > self.grace_period and ready.get("status") != "Unknown":
            node = await self._mark_unknown(node)
            ready = _condition(node, "Ready")
        status = str(ready.get("status") or "Unknown")
        name, zone = node["metadata"]["name"], zone_of(node)
        queue = self._tainting.setdefault(zone, {})
        if status == "True" or has_no_execute(node):
            queue.pop(name, None)
        else:
            queue.setdefault(name, None)
        wanted = taints_for(status, self._taints(node), pod_status.now(), no_execute=None)
        self._current[name] = await self._set_taints(node, wanted) or node
        return status

    @staticmethod
    def _taints(node: JSON) -> list[JSON]:
        return list((node.get("spec") or {}).get("taints") or [])

    async def _set_taints(self, node: JSON, wanted: list[JSON]) -> JSON | None:
        """The node with ``wanted`` taints as the server now has it (None: it changed
        meanwhile, the next pass sees the newer one)."""
        taints = self._taints(node)
        if wanted == taints:
            return node
        node = {**node, "spec": {**(node.get("spec") or {}), "taints": wanted}}
        if not wanted:
            node["spec"].pop("taints")
        try:
            written = await self.client.call(self.client.core.replace_node,
                                             node["metadata"]["name"], node)  # fmt: skip
        except APIError:
            return None
        if not any(t.get("key") in (UNREACHABLE, NOT_READY) for t in wanted) and any(
                t.get("key") == UNREACHABLE for t in taints):  # fmt: skip
            self._node_event(node, "NodeReady")
        return written

    async def _handle_disruption(self, ready: dict[str, str]) -> None:
        """``handleDisruption``: each zone's state and tainting rate; every zone fully
        disrupted stops all tainting and lifts the NoExecute taints."""
        zones: dict[str, list[str]] = {}
        for node in self.nodes.items():
            name = node["metadata"]["name"]
            status = ready.get(name, str(_condition(node, "Ready").get("status") or "Unknown"))
            zones.setdefault(zone_of(node), []).append(status)
        states = {z: zone_state(r, self.rates.unhealthy_zone_threshold) for z, r in zones.items()}
        now = asyncio.get_running_loop().time()
        all_full = bool(states) and all(v == FULL for v in states.values())
        was_full = self._all_disrupted
        self._all_disrupted = all_full
        for zone in states:
            self._limiters.setdefault(zone, TokenBucket(self.rates.rate, now))
        if all_full and not was_full:
            log.warning("node-controller: every node is not Ready; entering master disruption "
                        "mode (no NoExecute tainting)")  # fmt: skip
            for node in self.nodes.items():  # markNodeAsReachable
                name = node["metadata"]["name"]
                node = self._current.get(name) or node
                wanted = taints_for(ready.get(name, "Unknown"), self._taints(node),
                                    pod_status.now(), no_execute=False)  # fmt: skip
                self._current[name] = await self._set_taints(node, wanted) or node
            for zone in states:
                self._limiters[zone] = self._limiters[zone].swap(0.0, now)
        elif was_full and not all_full:
            log.warning("node-controller: some nodes are Ready; exiting master disruption mode")
            self._heard.clear()  # every node gets a fresh grace period
        if all_full:
            self._zone_states = states
            return
        for zone, state in states.items():
            if was_full or self._zone_states.get(zone, INITIAL) != state:
                rate = self.rates.for_zone(state, len(zones[zone]))
                self._limiters[zone] = self._limiters[zone].swap(rate, now)
        self._zone_states = states

    async def _taint_pass(self) -> None:
        """``doNoExecuteTaintingPass``: each zone's queued nodes tainted NoExecute as
        its limiter allows."""
        now = asyncio.get_running_loop().time()
        for zone, queue in self._tainting.items():
            limiter = self._limiters.get(zone)
            while queue and limiter is not None and limiter.try_accept(now):
                name = next(iter(queue))
                del queue[name]
                node = self._current.get(name) or self.nodes.get(name)
                status = str(_condition(node, "Ready").get("status") or "Unknown") if node else ""
                if node is None or status == "True":
                    continue
                wanted = taints_for(status, self._taints(node), pod_status.now())
                if await self._set_taints(node, wanted) is None:
                    queue[name] = None  # retried (the token is spent, as upstream's)

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
