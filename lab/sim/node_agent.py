"""Node agents: what each node's kubelet writes, as an API client.

Every node of the cluster gets an agent (``watchcache-sim-kubelet/0.1 (NODE)``) that

- renews the node's ``coordination.k8s.io`` Lease in ``kube-node-lease`` every 10 s
  (the kubelet's renew interval: a quarter of the 40 s lease duration), creating it
  when it is missing;
- posts the node's status (conditions with a fresh heartbeat) at start and then every
  ``status_seconds`` (the kubelet's nodeStatusReportFrequency, 5 minutes, when
  nothing changes);
- watches the pods bound to its node (``fieldSelector=spec.nodeName=NODE``, as the
  kubelet does) and runs them: an admitted pod goes ``Pending`` (ContainerCreating),
  then ``Running`` after a short start-up delay;
- ends the pods that are meant to end (:func:`run_seconds`): a pod a Job controls, or
  one annotated ``lab.watchcache.io/run-seconds``, has its containers exit after that
  many seconds (1 by default) with the code its ``lab.watchcache.io/exit-code``
  annotation asks for (0 by default). The pod then goes ``Succeeded`` (code 0) or
  ``Failed`` (restartPolicy ``Never``); otherwise (``OnFailure``, ``Always``) the
  container restarts, as the kubelet restarts it, and runs again;
- serves the kubelet API (:mod:`lab.sim.kubelet_server`: logs, exec, attach,
  port-forward) on the node's address when it is given the cluster CA to authenticate
  the API server with, and posts that address and port in the node's status
  (``addresses``, ``daemonEndpoints.kubeletEndpoint``) as the kubelet does; a node whose
  InternalIP is not on this host's loopback is moved to 127.0.0.1;
- runs a pod's ephemeral containers (``kubectl debug``) as soon as they are added;
- finishes graceful deletions: a pod with ``deletionTimestamp`` is removed with a final
  DELETE (``gracePeriodSeconds=0``, the pod's uid as precondition) once its grace period
  (capped by ``grace_cap`` seconds: the simulated containers stop at once) has passed.

:class:`NodeAgents` starts an agent for every node a nodes informer reports and stops
it when the node goes away, or while the node is annotated
``lab.watchcache.io/kubelet=stopped`` (the lab's way to stop a kubelet: the node lifecycle
controller then finds the node silent).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import random

import aiohttp

from lab.sim import pod_status
from lab.sim.client import JSON, APIError, Client
from lab.sim.containers import Runtime
from lab.sim.events import EventBroadcaster, EventRecorder, object_reference
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers
from lab.sim.kubelet_server import KubeletServer

__all__ = ["NodeAgent", "NodeAgents"]

log = logging.getLogger("watchcache.sim")

LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
RENEW_SECONDS = 10.0
STATUS_SECONDS = 300.0
START_DELAY = (0.3, 1.5)  # seconds from ContainerCreating to Running
GRACE_CAP = 2.0
TERMINAL = ("Succeeded", "Failed")
RUN_SECONDS = "lab.watchcache.io/run-seconds"
# the lab's stand-in for ``systemctl stop kubelet`` on a node: a node annotated
# ``lab.watchcache.io/kubelet=stopped`` has no agent (no Lease renewals, no status, its
# pods left as they are) until the annotation goes
KUBELET = "lab.watchcache.io/kubelet"
EXIT_CODE = "lab.watchcache.io/exit-code"
JOB_RUN_SECONDS = 1.0
TRANSIENT = (APIError, aiohttp.ClientError, TimeoutError, OSError)


def _parse_time(value: str) -> float:
    return dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()


def run_seconds(pod: JSON) -> float | None:
    """How long ``pod``'s containers run before they exit; None: until deleted."""
    meta = pod.get("metadata") or {}
    value = (meta.get("annotations") or {}).get(RUN_SECONDS)
    if value is None:
        controlled_by_job = any(r.get("controller") and r.get("kind") == "Job"
                                for r in meta.get("ownerReferences") or [])  # fmt: skip
        return JOB_RUN_SECONDS if controlled_by_job else None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return JOB_RUN_SECONDS


def exit_code(pod: JSON) -> int:
    """The code ``pod``'s containers exit with (its exit-code annotation, else 0)."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(EXIT_CODE, "0")
    try:
        return int(value)
    except ValueError:
        return 1


class NodeAgent:
    """The kubelet of node ``name``; ``run`` until cancelled."""

    def __init__(
        self,
        server: str,
        name: str,
        events: EventBroadcaster,
        *,
        renew_seconds: float = RENEW_SECONDS,
        status_seconds: float = STATUS_SECONDS,
        grace_cap: float = GRACE_CAP,
        client_ca: str = "",
    ) -> None:
        self.server = server
        self.client_ca = client_ca
        self.kubelet: KubeletServer | None = None
        self.name = name
        self.renew_seconds = renew_seconds
        self.status_seconds = status_seconds
        self.grace_cap = grace_cap
        self.client = Client(server, "kubelet", name)
        self.recorder: EventRecorder = events.recorder("kubelet", name)
        self.pods = Informer(self.client, self.client.core.list_pod_for_all_namespaces,
                             field_selector=f"spec.nodeName={name}",
                             name=f"kubelet {name} pods")  # fmt: skip
        self.queue: WorkQueue[str] = WorkQueue()
        self.node: JSON = {}
        self.renewals = 0
        self._starting: dict[str, float] = {}  # pod uid -> when its containers run
        self._ending: dict[str, float] = {}  # pod uid -> when its containers exit
        self._killing: set[str] = set()  # pod uids whose containers were told to stop
        self._exited: dict[str, int] = {}  # pod uid -> its attached main process's code

    async def run(self) -> None:
        self.pods.add_handler(lambda kind, pod, old: self.queue.add(key_of(pod)))
        try:
            if self.client_ca:
                await self._serve_kubelet_api()
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self.pods.run())
                tg.create_task(self._lease_loop())
                tg.create_task(self._status_loop())
                tg.create_task(run_workers(f"kubelet {self.name}", self.queue, self.sync_pod, 2))
        finally:
            if self.kubelet is not None:
                await self.kubelet.stop()
            await self.client.close()

    async def _serve_kubelet_api(self) -> None:
        """Listen on the node's address (read first: the status loop posts it)."""
        with contextlib.suppress(*TRANSIENT):
            self.node = await self.client.call(self.client.core.read_node, self.name)
        host = pod_status.kubelet_host(self.node)
        self.kubelet = KubeletServer(self.name, self.pods, Runtime(self.client), self.client_ca,
                                     self.main_process_exited)  # fmt: skip
        await self.kubelet.start(host)

    # -- lease and node status -----------------------------------------------------------

    async def _lease_loop(self) -> None:
        await asyncio.sleep(random.uniform(0, self.renew_seconds))  # spread the nodes
        lease: JSON | None = None
        while True:
            try:
                lease = await self._renew(lease)
                self.renewals += 1
            except TRANSIENT as e:
                log.info("kubelet %s: lease: %s", self.name, e)
                lease = None
            await asyncio.sleep(self.renew_seconds)

    async def _renew(self, lease: JSON | None) -> JSON:
        core = self.client.coordination
        if lease is None:
            try:
                lease = await self.client.call(core.read_namespaced_lease, self.name,
                                               LEASE_NAMESPACE)  # fmt: skip
            except APIError as e:
                if e.status != 404:
                    raise
                return await self.client.call(core.create_namespaced_lease, LEASE_NAMESPACE,
                                              self._new_lease())  # fmt: skip
        lease.setdefault("spec", {})["renewTime"] = pod_status.now_micro()
        lease["spec"]["holderIdentity"] = self.name
        return await self.client.call(core.replace_namespaced_lease, self.name,
                                      LEASE_NAMESPACE, lease)  # fmt: skip

    def _new_lease(self) -> JSON:
        meta: JSON = {"name": self.name, "namespace": LEASE_NAMESPACE}
        uid = (self.node.get("metadata") or {}).get("uid")
        if uid:
            meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": self.name,
                                        "uid": uid}]  # fmt: skip
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                "spec": {"holderIdentity": self.name,
                         "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                         "renewTime": pod_status.now_micro()}}  # fmt: skip

    def _node_status(self) -> JSON:
        status = pod_status.node_heartbeat(self.node)
        if self.kubelet is not None:
            status.update(pod_status.kubelet_endpoint(self.node, self.name,
                                                      pod_status.kubelet_host(self.node),
                                                      self.kubelet.port))  # fmt: skip
        return status

    async def _status_loop(self) -> None:
        while True:
            try:
                self.node = await self.client.call(self.client.core.read_node, self.name)
                self.node = await self.client.call(
                    self.client.core.patch_node_status, self.name,
                    {"status": self._node_status()},
                )  # fmt: skip
            except TRANSIENT as e:
                log.info("kubelet %s: node status: %s", self.name, e)
            await asyncio.sleep(self.status_seconds * random.uniform(0.9, 1.1))

    # -- pods ---------------------------------------------------------------------------

    async def sync_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None:
            return
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            await self._finish_deletion(key, pod)
            return
        status = pod.get("status") or {}
        uid = str(meta.get("uid"))
        if status.get("phase") == "Running":
            if pod_status.ephemeral_to_start(pod):
                await self._write_status(pod, pod_status.ephemeral_started(pod))
                return
            await self._run_to_end(key, pod)
            return
        if status.get("phase") in TERMINAL:
            self._ending.pop(uid, None)
            return
        loop = asyncio.get_running_loop()
        if uid not in self._starting or not status.get("containerStatuses"):
            await self._write_status(pod, pod_status.pending(pod, self.node))
            self._container_events(pod, "Pulling")
            delay = random.uniform(*START_DELAY)
            self._starting[uid] = loop.time() + delay
            self.queue.add_after(key, delay)
            return
        left = self._starting[uid] - loop.time()
        if left > 0:
            self.queue.add_after(key, left)
            return
        await self._write_status(pod, pod_status.running(pod, self.node, self._ips_taken(uid)))
        self._starting.pop(uid, None)
        self._container_events(pod, "Pulled", "Created", "Started")

    async def _run_to_end(self, key: str, pod: JSON) -> None:
        """End the containers of a running pod that is meant to end, once it has run."""
        uid = str(pod["metadata"].get("uid"))
        code = self._exited.pop(uid, None)
        if code is None:
            seconds = run_seconds(pod)
            if seconds is None:
                return
            loop = asyncio.get_running_loop()
            left = self._ending.setdefault(uid, loop.time() + seconds) - loop.time()
            if left > 0:
                self.queue.add_after(key, left)
                return
            code = exit_code(pod)
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        if (code == 0 and policy != "Always") or (code != 0 and policy == "Never"):
            await self._write_status(pod, pod_status.finished(pod, code))
            return
        status = pod.get("status") or {}
        for index in range(len(status.get("containerStatuses") or [])):
            status = pod_status.container_restarted(status, index, code)
        self._ending.pop(uid, None)  # runs again: the next event sets a new end
        await self._write_status(pod, status)
        self._restart_events(pod, status, None, code)

    async def main_process_exited(self, key: str, container: str, code: int) -> None:
        """The main process of ``container`` (the shell ``kubectl run -i`` or ``kubectl
        debug -i`` attached to) exited with ``code``: the container ends as any whose
        process exits (an ephemeral container stays terminated; a pod's containers end
        or restart by its restartPolicy)."""
        pod = self.pods.get(key)
        if pod is None:
            return
        if any(c.get("name") == container
               for c in (pod.get("spec") or {}).get("ephemeralContainers") or []):  # fmt: skip
            await self._write_status(pod, pod_status.ephemeral_exited(pod, container, code))
            return
        self._exited[str(pod["metadata"].get("uid"))] = code
        self.queue.add(key)

    async def restart_container(self) -> str | None:
        """Restart a container of a random running pod of this node, as after a crash:
        its status (restartCount, lastState) is patched. The pod's key, or None."""
        running = [p for p in self.pods.items()
                   if (p.get("status") or {}).get("phase") == "Running"
                   and not p["metadata"].get("deletionTimestamp")]  # fmt: skip
        if not running:
            return None
        pod = random.choice(running)
        index, code = random.randrange(8), random.choice((137, 1, 2))
        status = pod_status.container_restarted(pod.get("status") or {}, index, code)
        meta = pod["metadata"]
        patch = {"metadata": {"uid": meta.get("uid")},
                 "status": {"containerStatuses": status.get("containerStatuses") or []}}
        try:
            await self.client.call(self.client.core.patch_namespaced_pod_status,
                                   meta["name"], meta["namespace"], patch)  # fmt: skip
        except APIError as e:
            if e.status in (404, 409):
                return None
            raise
        self._restart_events(pod, status, index, code)
        return key_of(pod)

    # -- events -------------------------------------------------------------------------

    def _container_events(self, pod: JSON, *reasons: str, only: str | None = None) -> None:
        """The kubelet's Events for each container of ``pod`` (or container ``only``)."""
        restarted = only is not None
        for c in (pod.get("spec") or {}).get("containers") or []:
            name, image = str(c.get("name")), str(c.get("image"))
            if only is not None and name != only:
                continue
            ref = object_reference(pod, "Pod", field_path=f"spec.containers{{{name}}}")
            for reason in reasons:
                self.recorder.event(ref, "Normal", reason,
                                    _container_message(reason, name, image, restarted))

    def _restart_events(self, pod: JSON, status: JSON, index: int | None, code: int) -> None:
        """A container (``index``; None: all) exited with ``code`` and runs again
        (``status``: the pod's new one). One that failed again, restarted before, was
        held in CrashLoopBackOff first: the kubelet's BackOff warning; a first crash is
        restarted at once."""
        containers = (pod.get("spec") or {}).get("containers") or []
        if not containers:
            return
        names = ([str(c.get("name")) for c in containers] if index is None
                 else [str(containers[index % len(containers)].get("name"))])  # fmt: skip
        restarts = {str(c.get("name")): int(c.get("restartCount") or 0)
                    for c in status.get("containerStatuses") or []}  # fmt: skip
        meta = pod.get("metadata") or {}
        for name in names:
            if code != 0 and restarts.get(name, 0) >= 2:
                ref = object_reference(pod, "Pod", field_path=f"spec.containers{{{name}}}")
                self.recorder.event(ref, "Warning", "BackOff",
                                    f"Back-off restarting failed container {name} in pod "
                                    f"{meta.get('name')}_{meta.get('namespace')}"
                                    f"({meta.get('uid')})")  # fmt: skip
            self._container_events(pod, "Pulled", "Created", "Started", only=name)

    def _ips_taken(self, uid: str) -> frozenset[str]:
        """The IPs of the node's other pods (none is given twice)."""
        return frozenset(str(ip) for p in self.pods.items()
                         if p["metadata"].get("uid") != uid
                         and (ip := (p.get("status") or {}).get("podIP")))  # fmt: skip

    async def _write_status(self, pod: JSON, status: JSON) -> None:
        meta = pod["metadata"]
        body = {**pod, "status": status}
        try:
            await self.client.call(self.client.core.replace_namespaced_pod_status,
                                   meta["name"], meta["namespace"], body)  # fmt: skip
        except APIError as e:
            if e.status == 404:
                return
            raise  # 409: retried with the newer pod the watch brings

    async def _finish_deletion(self, key: str, pod: JSON) -> None:
        meta = pod["metadata"]
        grace = min(float(meta.get("deletionGracePeriodSeconds") or 0), self.grace_cap)
        since = _parse_time(meta["deletionTimestamp"]) - float(
            meta.get("deletionGracePeriodSeconds") or 0)  # when deletion was asked
        left = since + grace - dt.datetime.now(dt.UTC).timestamp()
        uid = str(meta.get("uid"))
        if uid not in self._killing and (pod.get("status") or {}).get("phase") == "Running":
            self._killing.add(uid)
            self._container_events(pod, "Killing")
        if left > 0:
            self.queue.add_after(key, left)
            return
        self._starting.pop(str(meta.get("uid")), None)
        self._ending.pop(str(meta.get("uid")), None)
        self._killing.discard(str(meta.get("uid")))
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                "preconditions": {"uid": meta.get("uid")}}  # fmt: skip
        with contextlib.suppress(APIError):  # 404 / 409: gone or replaced already
            await self.client.call(self.client.core.delete_namespaced_pod, meta["name"],
                                   meta["namespace"], body=body)  # fmt: skip


def _container_message(reason: str, name: str, image: str, restarted: bool) -> str:
    """The kubelet's message for ``reason`` about container ``name`` (a restarted
    container's image is on the node already)."""
    if reason == "Pulled":
        if restarted:
            return f'Container image "{image}" already present on machine'
        ms = random.randint(300, 1500)
        return (f'Successfully pulled image "{image}" in {ms}ms ({ms}ms including waiting). '
                f"Image size: {random.randint(2, 80) * 1_000_003} bytes.")  # fmt: skip
    return {"Pulling": f'Pulling image "{image}"', "Created": f"Created container: {name}",
            "Started": f"Started container {name}",
            "Killing": f"Stopping container {name}"}[reason]  # fmt: skip


class NodeAgents:
    """An agent per node that ``nodes`` (a nodes informer) reports."""

    def __init__(
        self,
        server: str,
        nodes: Informer,
        events: EventBroadcaster,
        client_ca: str = "",
        **agent_options: float,
    ) -> None:
        self.server = server
        self.client_ca = client_ca
        self.events = events
        self.nodes = nodes
        self.agent_options = agent_options
        self.agents: dict[str, NodeAgent] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._changed = asyncio.Event()

    async def run(self) -> None:
        self.nodes.add_handler(lambda kind, node, old: self._changed.set())
        try:
            while True:
                await self._changed.wait()
                self._changed.clear()
                self._reconcile()
        finally:
            for task in self._tasks.values():
                task.cancel()
            for task in self._tasks.values():
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _reconcile(self) -> None:
        names = {key_of(n) for n in self.nodes.items()
                 if ((n.get("metadata") or {}).get("annotations") or {}).get(KUBELET)
                 != "stopped"}  # fmt: skip
        for name in names - set(self._tasks):
            agent = NodeAgent(self.server, name, self.events, client_ca=self.client_ca,
                              **self.agent_options)  # fmt: skip
            self.agents[name] = agent
            self._tasks[name] = asyncio.create_task(agent.run(), name=f"kubelet-{name}")
        for name in set(self._tasks) - names:
            self._tasks.pop(name).cancel()
            self.agents.pop(name, None)
