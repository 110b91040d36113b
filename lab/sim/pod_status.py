"""Pod and node status as a kubelet writes them: pure functions, no I/O.

A pod the kubelet admits is first ``Pending`` with its containers ``ContainerCreating``,
then ``Running`` with every condition True, an IP from the node's podCIDR and container
statuses that name the image and a container id. A container restart (the churn) moves
the running state into ``lastState.terminated`` and bumps ``restartCount``. A pod whose
containers ran to the end is ``Succeeded`` (every exit code 0) or ``Failed``, its
containers ``terminated`` and its Ready conditions False with reason ``PodCompleted``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress

from lab.seed import NODE_CONDITIONS
from lab.sim.client import JSON

__all__ = ["container_restarted", "finished", "node_heartbeat", "now", "now_micro", "pending",
           "pod_ip", "running"]

CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
              "PodScheduled")  # fmt: skip


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    """A MicroTime (Lease renewTime)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _hex(*parts: object, n: int = 64) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:n]


def _containers(pod: JSON) -> list[JSON]:
    return [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]


def _conditions(
    pod: JSON, true: set[str], stamp: str, not_ready: list[str], reason: str = ""
) -> list[JSON]:
    old = {c.get("type"): c for c in (pod.get("status") or {}).get("conditions") or []}
    out = []
    for kind in CONDITIONS:
        status = "True" if kind in true else "False"
        prev = old.get(kind) or {}
        c: JSON = {"type": kind, "status": status, "lastProbeTime": None,
                   "lastTransitionTime": prev.get("lastTransitionTime") if prev.get(
                       "status") == status else stamp}  # fmt: skip
        if status == "False" and kind in ("Ready", "ContainersReady") and reason:
            c["reason"] = reason  # the kubelet's PodCompleted: no message
        elif status == "False" and kind in ("Ready", "ContainersReady"):
            c["reason"] = "ContainersNotReady"
            c["message"] = f"containers with unready status: [{' '.join(not_ready)}]"
        out.append(c)
    return out


def _host_ip(node: JSON) -> str:
    for a in (node.get("status") or {}).get("addresses") or []:
        if a.get("type") == "InternalIP":
            return str(a.get("address"))
    return ""


def pod_ip(node: JSON, pod: JSON, taken: frozenset[str] = frozenset()) -> str:
    """A stable address for ``pod`` inside the node's podCIDR (10.244.0.0/24 if none),
    not one of ``taken`` (the node's other pods', as host-local IPAM allocates)."""
    cidr = ipaddress.ip_network((node.get("spec") or {}).get("podCIDR") or "10.244.0.0/24",
                                strict=False)  # fmt: skip
    uid = (pod.get("metadata") or {}).get("uid") or ""
    size = max(cidr.num_addresses - 3, 1)
    start = int(_hex(uid, n=8), 16) % size
    for step in range(min(size, len(taken) + 1)):
        ip = str(cidr.network_address + 2 + (start + step) % size)
        if ip not in taken:
            return ip
    return str(cidr.network_address + 2 + start)


def pending(pod: JSON, node: JSON) -> JSON:
    """The status of an admitted pod whose containers are being created."""
    stamp = now()
    names = [str(c.get("name")) for c in _containers(pod)]
    host = _host_ip(node)
    return {
        "phase": "Pending",
        "conditions": _conditions(pod, {"Initialized", "PodScheduled"}, stamp, names),
        "hostIP": host, "hostIPs": [{"ip": host}] if host else [],
        "startTime": (pod.get("status") or {}).get("startTime") or stamp,
        "qosClass": _qos(pod),
        "containerStatuses": [{
            "name": c.get("name"), "image": c.get("image"), "imageID": "",
            "ready": False, "started": False, "restartCount": 0,
            "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {},
        } for c in _containers(pod)],
    }  # fmt: skip


def running(pod: JSON, node: JSON, taken: frozenset[str] = frozenset()) -> JSON:
    """The status of a pod whose containers all run and are ready (its IP not one of
    ``taken``)."""
    stamp = now()
    host = _host_ip(node)
    ip = pod_ip(node, pod, taken)
    uid = (pod.get("metadata") or {}).get("uid") or ""
    return {
        "phase": "Running",
        "conditions": _conditions(pod, set(CONDITIONS), stamp, []),
        "hostIP": host, "hostIPs": [{"ip": host}] if host else [],
        "podIP": ip, "podIPs": [{"ip": ip}],
        "startTime": (pod.get("status") or {}).get("startTime") or stamp,
        "qosClass": _qos(pod),
        "containerStatuses": [{
            "name": c.get("name"), "image": c.get("image"),
            "imageID": f"{str(c.get('image')).split(':')[0]}@sha256:{_hex('img', c.get('image'))}",
            "containerID": f"containerd://{_hex('ctr', uid, c.get('name'))}",
            "ready": True, "started": True, "restartCount": 0,
            "state": {"running": {"startedAt": stamp}}, "lastState": {},
        } for c in _containers(pod)],
    }  # fmt: skip


def finished(pod: JSON, exit_code: int) -> JSON:
    """The status of a running pod whose containers all exited with ``exit_code``:
    ``Succeeded`` for 0, else ``Failed`` (the kubelet's phase for restartPolicy Never)."""
    stamp = now()
    out = dict(pod.get("status") or {})
    out["phase"] = "Succeeded" if exit_code == 0 else "Failed"
    out["conditions"] = _conditions(pod, {"Initialized", "PodScheduled"}, stamp, [],
                                    "PodCompleted")  # fmt: skip
    statuses = []
    for c in out.get("containerStatuses") or []:
        started = ((c.get("state") or {}).get("running") or {}).get("startedAt") or stamp
        statuses.append({**c, "ready": False, "started": False, "state": {"terminated": {
            "exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
            "startedAt": started, "finishedAt": stamp, "containerID": c.get("containerID", ""),
        }}})  # fmt: skip
    out["containerStatuses"] = statuses
    return out


def container_restarted(status: JSON, index: int, exit_code: int = 137) -> JSON:
    """``status`` after container ``index`` was killed and started again."""
    stamp = now()
    out = dict(status)
    statuses = [dict(c) for c in status.get("containerStatuses") or []]
    if not statuses:
        return out
    c = statuses[index % len(statuses)]
    started = ((c.get("state") or {}).get("running") or {}).get("startedAt") or stamp
    count = int(c.get("restartCount") or 0) + 1
    c["lastState"] = {"terminated": {
        "exitCode": exit_code, "reason": "OOMKilled" if exit_code == 137 else "Error",
        "startedAt": started, "finishedAt": stamp,
        "containerID": c.get("containerID", ""),
    }}  # fmt: skip
    c["state"] = {"running": {"startedAt": stamp}}
    c["restartCount"] = count
    c["containerID"] = f"containerd://{_hex('ctr', c.get('containerID'), count)}"
    statuses[index % len(statuses)] = c
    out["containerStatuses"] = statuses
    return out


def _qos(pod: JSON) -> str:
    resources = [c.get("resources") or {} for c in _containers(pod)]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    if all(r.get("limits") and r.get("requests", r.get("limits")) == r.get("limits")
           for r in resources):  # fmt: skip
        return "Guaranteed"
    return "Burstable"


def node_heartbeat(node: JSON) -> JSON:
    """The node's status conditions with a fresh heartbeat (Ready=True, no pressure)."""
    stamp = now()
    old = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
    out = []
    for kind, status, reason, msg in NODE_CONDITIONS:
        prev = old.get(kind) or {}
        since = prev.get("lastTransitionTime") if prev.get("status") == status else stamp
        out.append({"type": kind, "status": status, "reason": reason, "message": msg,
                    "lastHeartbeatTime": stamp, "lastTransitionTime": since or stamp})  # fmt: skip
    return {"conditions": out}


def kubelet_host(node: JSON) -> str:
    """The address the node's kubelet API listens on: its InternalIP when that is a
    loopback address of this host (the lab's nodes are 127.20.x.y), else 127.0.0.1."""
    host = _host_ip(node)
    try:
        if host and ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    return "127.0.0.1"


def kubelet_endpoint(node: JSON, name: str, host: str, port: int) -> JSON:
    """The node status fields the kubelet posts about its API: where it listens."""
    out: JSON = {"daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}
    if _host_ip(node) != host:
        out["addresses"] = [{"type": "InternalIP", "address": host},
                            {"type": "Hostname", "address": name}]  # fmt: skip
    return out


def ephemeral_to_start(pod: JSON) -> list[JSON]:
    """The pod's ephemeral containers that have no status yet."""
    known = {c.get("name") for c in (pod.get("status") or {}).get("ephemeralContainerStatuses")
             or []}  # fmt: skip
    return [c for c in (pod.get("spec") or {}).get("ephemeralContainers") or []
            if c.get("name") not in known]  # fmt: skip


def ephemeral_started(pod: JSON) -> JSON:
    """The pod's status with its new ephemeral containers running (they have no
    readiness: ``ready`` false, as the kubelet reports them)."""
    stamp = now()
    uid = (pod.get("metadata") or {}).get("uid") or ""
    out = dict(pod.get("status") or {})
    statuses = list(out.get("ephemeralContainerStatuses") or [])
    for c in ephemeral_to_start(pod):
        statuses.append({
            "name": c.get("name"), "image": c.get("image"),
            "imageID": f"{str(c.get('image')).split(':')[0]}@sha256:{_hex('img', c.get('image'))}",
            "containerID": f"containerd://{_hex('ctr', uid, c.get('name'))}",
            "ready": False, "restartCount": 0,
            "state": {"running": {"startedAt": stamp}}, "lastState": {},
        })  # fmt: skip
    out["ephemeralContainerStatuses"] = statuses
    return out


def ephemeral_exited(pod: JSON, name: str, code: int) -> JSON:
    """The pod's status with ephemeral container ``name`` terminated with ``code``."""
    stamp = now()
    out = dict(pod.get("status") or {})
    statuses = []
    for c in out.get("ephemeralContainerStatuses") or []:
        if c.get("name") == name and "running" in (c.get("state") or {}):
            started = c["state"]["running"].get("startedAt") or stamp
            c = {**c, "state": {"terminated": {
                "exitCode": code, "reason": "Completed" if code == 0 else "Error",
                "startedAt": started, "finishedAt": stamp, "containerID": c.get("containerID", ""),
            }}}  # fmt: skip
        statuses.append(c)
    out["ephemeralContainerStatuses"] = statuses
    return out
