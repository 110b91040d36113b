"""Column handlers of the core group (``""``, v1): pods, nodes, namespaces, services,
configmaps, secrets, events, serviceaccounts, as kubectl's ``printPod``, ``printNode``, ...
in ``pkg/printers/internalversion/printers.go``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from proxy.printers.columns import (
    AGE,
    JSON,
    NAME,
    Column,
    Row,
    TablePrinter,
    as_int,
    as_list,
    condition_true,
    format_labels,
    lookup,
    name_age,
    object_meta,
    since,
)
from proxy.printers.duration import human_duration, parse_time

__all__ = ["HANDLERS"]

POD_ = "io.k8s.api.core.v1."

# ------------------------------------------------------------------------------- pods

POD_COLUMNS = (
    NAME,
    Column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", description="The aggregate status of the containers in this pod."),
    Column(
        "Restarts",
        description="The number of times the containers in this pod have been restarted "
        "and when the last container in this pod has restarted.",
    ),
    AGE,
    Column("IP", priority=1, doc=POD_ + "PodStatus.podIP"),
    Column("Node", priority=1, doc=POD_ + "PodSpec.nodeName"),
    Column("Nominated Node", priority=1, doc=POD_ + "PodStatus.nominatedNodeName"),
    Column("Readiness Gates", priority=1, doc=POD_ + "PodSpec.readinessGates"),
)

POD_SUCCEEDED = [
    {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": "The pod has completed successfully.",
    }
]
POD_FAILED = [
    {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}
]


def _is_restartable_init(container: JSON) -> bool:
    return isinstance(container, Mapping) and container.get("restartPolicy") == "Always"


@dataclass
class _PodState:
    reason: str
    ready: int = 0
    restarts: int = 0
    last_restart: dt.datetime | None = None
    sidecar_restarts: int = 0
    sidecar_last_restart: dt.datetime | None = None


def _later(a: dt.datetime | None, b: JSON) -> dt.datetime | None:
    when = parse_time(b)
    if when is None:
        return a
    return when if a is None or a < when else a


def _terminated_reason(term: Mapping[str, JSON], prefix: str) -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if as_int(term.get("signal")):
        return f"{prefix}Signal:{as_int(term.get('signal'))}"
    return f"{prefix}ExitCode:{as_int(term.get('exitCode'))}"


def _pod_init_containers(pod: dict[str, JSON], st: _PodState) -> bool:
    """Walk init container statuses; True while the pod is still initializing."""
    specs = {c.get("name"): c for c in as_list(lookup(pod, "spec", "initContainers")) if c}
    n_init = len(as_list(lookup(pod, "spec", "initContainers")))
    for i, cs in enumerate(as_list(lookup(pod, "status", "initContainerStatuses"))):
        restarts = as_int(cs.get("restartCount"))
        finished = lookup(cs, "lastState", "terminated", "finishedAt")
        st.restarts += restarts
        st.last_restart = _later(st.last_restart, finished)
        sidecar = _is_restartable_init(specs.get(cs.get("name")))
        if sidecar:
            st.sidecar_restarts += restarts
            st.sidecar_last_restart = _later(st.sidecar_last_restart, finished)
        term = lookup(cs, "state", "terminated")
        waiting_reason = lookup(cs, "state", "waiting", "reason")
        if isinstance(term, Mapping) and as_int(term.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            st.ready += 1 if cs.get("ready") else 0
            continue
        if isinstance(term, Mapping):
            st.reason = _terminated_reason(term, "Init:")
        elif waiting_reason and waiting_reason != "PodInitializing":
            st.reason = f"Init:{waiting_reason}"
        else:
            st.reason = f"Init:{i}/{n_init}"
        return True
    return False


def _pod_containers(pod: dict[str, JSON], st: _PodState) -> None:
    st.restarts, st.last_restart = st.sidecar_restarts, st.sidecar_last_restart
    has_running = False
    for cs in reversed(as_list(lookup(pod, "status", "containerStatuses"))):
        st.restarts += as_int(cs.get("restartCount"))
        st.last_restart = _later(
            st.last_restart, lookup(cs, "lastState", "terminated", "finishedAt")
        )
        waiting_reason = lookup(cs, "state", "waiting", "reason")
        term = lookup(cs, "state", "terminated")
        if waiting_reason:
            st.reason = str(waiting_reason)
        elif isinstance(term, Mapping):
            st.reason = _terminated_reason(term, "")
        elif cs.get("ready") and isinstance(lookup(cs, "state", "running"), Mapping):
            has_running = True
            st.ready += 1
    if st.reason == "Completed" and has_running:
        ready = condition_true(lookup(pod, "status", "conditions"), "Ready")
        st.reason = "Running" if ready else "NotReady"


def _pod_reason(pod: dict[str, JSON]) -> str:
    phase = str(lookup(pod, "status", "phase") or "")
    reason = str(lookup(pod, "status", "reason") or "") or phase
    for cond in as_list(lookup(pod, "status", "conditions")):
        if lookup(cond, "type") == "PodScheduled" and lookup(cond, "reason") == "SchedulingGated":
            reason = "SchedulingGated"
    return reason


def print_pod(pod: dict[str, JSON], now: dt.datetime) -> Row:
    """kubectl's ``printPod``: READY x/y, STATUS reason, RESTARTS ``n (5m ago)``."""
    phase = lookup(pod, "status", "phase")
    st = _PodState(reason=_pod_reason(pod))
    total = len(as_list(lookup(pod, "spec", "containers")))
    total += sum(
        1 for c in as_list(lookup(pod, "spec", "initContainers")) if _is_restartable_init(c)
    )
    initializing = _pod_init_containers(pod, st)
    if not initializing or condition_true(lookup(pod, "status", "conditions"), "Initialized"):
        _pod_containers(pod, st)
    if object_meta(pod).get("deletionTimestamp"):
        if lookup(pod, "status", "reason") == "NodeLost":
            st.reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            st.reason = "Terminating"
    restarts = str(st.restarts)
    if st.restarts and st.last_restart is not None:
        restarts = f"{st.restarts} ({human_duration(now - st.last_restart)} ago)"
    name, age = name_age(pod, now)
    cells: list[JSON] = [name, f"{st.ready}/{total}", st.reason, restarts, age]
    cells += _pod_wide(pod)
    conditions = POD_SUCCEEDED if phase == "Succeeded" else POD_FAILED if phase == "Failed" else []
    return cells, conditions


def _pod_wide(pod: dict[str, JSON]) -> list[JSON]:
    ips = as_list(lookup(pod, "status", "podIPs"))
    ip = str(lookup(ips[0], "ip") or "") if ips else ""
    gates = as_list(lookup(pod, "spec", "readinessGates"))
    gates_cell = "<none>"
    if gates:
        conditions = as_list(lookup(pod, "status", "conditions"))
        true = 0
        for gate in gates:
            for cond in conditions:
                if lookup(cond, "type") == lookup(gate, "conditionType"):
                    true += 1 if lookup(cond, "status") == "True" else 0
                    break
        gates_cell = f"{true}/{len(gates)}"
    return [
        ip or "<none>",
        str(lookup(pod, "spec", "nodeName") or "") or "<none>",
        str(lookup(pod, "status", "nominatedNodeName") or "") or "<none>",
        gates_cell,
    ]


# ----------------------------------------------------------------------- other kinds

NODE_COLUMNS = (
    NAME,
    Column("Status", description="The status of the node"),
    Column("Roles", description="The roles of the node"),
    AGE,
    Column("Version", doc=POD_ + "NodeSystemInfo.kubeletVersion"),
    Column("Internal-IP", priority=1, doc=POD_ + "NodeStatus.addresses"),
    Column("External-IP", priority=1, doc=POD_ + "NodeStatus.addresses"),
    Column("OS-Image", priority=1, doc=POD_ + "NodeSystemInfo.osImage"),
    Column("Kernel-Version", priority=1, doc=POD_ + "NodeSystemInfo.kernelVersion"),
    Column("Container-Runtime", priority=1, doc=POD_ + "NodeSystemInfo.containerRuntimeVersion"),
)

ROLE_PREFIX = "node-role.kubernetes.io/"


def _node_roles(labels: JSON) -> str:
    roles: set[str] = set()
    for key, value in (labels or {}).items():
        if key.startswith(ROLE_PREFIX) and key[len(ROLE_PREFIX) :]:
            roles.add(key[len(ROLE_PREFIX) :])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    return ",".join(sorted(roles)) or "<none>"


def _node_address(node: dict[str, JSON], kind: str) -> str:
    for addr in as_list(lookup(node, "status", "addresses")):
        if lookup(addr, "type") == kind:
            return str(lookup(addr, "address") or "")
    return "<none>"


def print_node(node: dict[str, JSON], now: dt.datetime) -> Row:
    status: list[str] = []
    for cond in as_list(lookup(node, "status", "conditions")):
        if lookup(cond, "type") == "Ready":
            status = ["Ready" if lookup(cond, "status") == "True" else "NotReady"]
    status = status or ["Unknown"]
    if lookup(node, "spec", "unschedulable") is True:
        status.append("SchedulingDisabled")
    info = lookup(node, "status", "nodeInfo") or {}
    name, age = name_age(node, now)
    cells: list[JSON] = [
        name,
        ",".join(status),
        _node_roles(object_meta(node).get("labels")),
        age,
        str(info.get("kubeletVersion", "")),
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        str(info.get("osImage") or "<unknown>"),
        str(info.get("kernelVersion") or "<unknown>"),
        str(info.get("containerRuntimeVersion") or "<unknown>"),
    ]
    return cells, []


NAMESPACE_COLUMNS = (NAME, Column("Status", description="The status of the namespace"), AGE)


def print_namespace(ns: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(ns, now)
    return [name, str(lookup(ns, "status", "phase") or ""), age], []


SERVICE_COLUMNS = (
    NAME,
    Column("Type", doc=POD_ + "ServiceSpec.type"),
    Column("Cluster-IP", doc=POD_ + "ServiceSpec.clusterIP"),
    Column("External-IP", doc=POD_ + "ServiceSpec.externalIPs"),
    Column("Port(s)", doc=POD_ + "ServiceSpec.ports"),
    AGE,
    Column("Selector", priority=1, doc=POD_ + "ServiceSpec.selector"),
)


def _load_balancer_ips(svc: dict[str, JSON]) -> str:
    found = []
    for ing in as_list(lookup(svc, "status", "loadBalancer", "ingress")):
        if lookup(ing, "ip"):
            found.append(str(ing["ip"]))
        elif lookup(ing, "hostname"):
            found.append(str(ing["hostname"]))
    return ",".join(found)


def _service_external_ip(svc: dict[str, JSON]) -> str:
    stype = lookup(svc, "spec", "type") or "ClusterIP"
    external = [str(ip) for ip in as_list(lookup(svc, "spec", "externalIPs"))]
    if stype in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if stype == "LoadBalancer":
        lb = _load_balancer_ips(svc)
        results = ([*lb.split(",")] if lb else []) + external
        return ",".join(results) or "<pending>"
    if stype == "ExternalName":
        return str(lookup(svc, "spec", "externalName") or "")
    return "<unknown>"


def _service_ports(svc: dict[str, JSON]) -> str:
    pieces = []
    for port in as_list(lookup(svc, "spec", "ports")):
        proto = port.get("protocol") or "TCP"
        if as_int(port.get("nodePort")) > 0:
            pieces.append(f"{as_int(port.get('port'))}:{as_int(port.get('nodePort'))}/{proto}")
        else:
            pieces.append(f"{as_int(port.get('port'))}/{proto}")
    return ",".join(pieces) or "<none>"


def print_service(svc: dict[str, JSON], now: dt.datetime) -> Row:
    cluster_ips = as_list(lookup(svc, "spec", "clusterIPs"))
    internal = str(cluster_ips[0]) if cluster_ips else str(lookup(svc, "spec", "clusterIP") or "")
    name, age = name_age(svc, now)
    cells: list[JSON] = [
        name,
        str(lookup(svc, "spec", "type") or "ClusterIP"),
        internal or "<none>",
        _service_external_ip(svc),
        _service_ports(svc),
        age,
        format_labels(lookup(svc, "spec", "selector")),
    ]
    return cells, []


CONFIGMAP_COLUMNS = (NAME, Column("Data", doc=POD_ + "ConfigMap.data"), AGE)


def print_configmap(cm: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(cm, now)
    count = len(cm.get("data") or {}) + len(cm.get("binaryData") or {})
    return [name, count, age], []


SECRET_COLUMNS = (
    NAME,
    Column("Type", doc=POD_ + "Secret.type"),
    Column("Data", doc=POD_ + "Secret.data"),
    AGE,
)


def print_secret(secret: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(secret, now)
    data = secret.get("data") or {}
    data_keys = set(data) | set(secret.get("stringData") or {})
    return [name, str(secret.get("type") or ""), len(data_keys), age], []


EVENT_COLUMNS = (
    Column("Last Seen", doc=POD_ + "Event.lastTimestamp"),
    Column("Type", doc=POD_ + "Event.type"),
    Column("Reason", doc=POD_ + "Event.reason"),
    Column("Object", doc=POD_ + "Event.involvedObject"),
    Column("Subobject", priority=1, doc=POD_ + "ObjectReference.fieldPath"),
    Column("Source", priority=1, doc=POD_ + "Event.source"),
    Column("Message", doc=POD_ + "Event.message"),
    Column("First Seen", priority=1, doc=POD_ + "Event.firstTimestamp"),
    Column("Count", priority=1, doc=POD_ + "Event.count"),
    Column("Name", priority=1, format="name", doc="ObjectMeta.name"),
)


def _event_source(ev: dict[str, JSON]) -> str:
    component = lookup(ev, "source", "component") or ev.get("reportingComponent") or ""
    instance = lookup(ev, "source", "host") or ev.get("reportingInstance") or ""
    if not component:
        return ""
    return f"{component}, {instance}" if instance else str(component)


def print_event(ev: dict[str, JSON], now: dt.datetime) -> Row:
    first = since(ev.get("firstTimestamp"), now)
    if parse_time(ev.get("firstTimestamp")) is None:
        first = since(ev.get("eventTime"), now)
    last = since(ev.get("lastTimestamp"), now)
    if parse_time(ev.get("lastTimestamp")) is None:
        last = first
    count = as_int(ev.get("count"))
    series = ev.get("series")
    if isinstance(series, Mapping):
        last = since(series.get("lastObservedTime"), now)
        count = as_int(series.get("count"))
    elif count == 0:
        count = 1
    kind = str(lookup(ev, "involvedObject", "kind") or "").lower()
    obj_name = lookup(ev, "involvedObject", "name")
    target = f"{kind}/{obj_name}" if obj_name else kind
    cells: list[JSON] = [
        last,
        str(ev.get("type") or ""),
        str(ev.get("reason") or ""),
        target,
        str(lookup(ev, "involvedObject", "fieldPath") or ""),
        _event_source(ev),
        str(ev.get("message") or "").strip(),
        first,
        count,
        str(object_meta(ev).get("name", "")),
    ]
    return cells, []


SERVICEACCOUNT_COLUMNS = (NAME, Column("Secrets", doc=POD_ + "ServiceAccount.secrets"), AGE)


def print_serviceaccount(sa: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(sa, now)
    return [name, len(as_list(sa.get("secrets"))), age], []


# kubectl's handlers for the core group, by resource
HANDLERS: dict[str, TablePrinter] = {
    "pods": TablePrinter(POD_COLUMNS, print_pod),
    "nodes": TablePrinter(NODE_COLUMNS, print_node),
    "namespaces": TablePrinter(NAMESPACE_COLUMNS, print_namespace),
    "services": TablePrinter(SERVICE_COLUMNS, print_service),
    "configmaps": TablePrinter(CONFIGMAP_COLUMNS, print_configmap),
    "secrets": TablePrinter(SECRET_COLUMNS, print_secret),
    "events": TablePrinter(EVENT_COLUMNS, print_event),
    "serviceaccounts": TablePrinter(SERVICEACCOUNT_COLUMNS, print_serviceaccount),
}
