"""Server-side printing: ``meta.k8s.io`` Tables, as kube-apiserver answers ``as=Table``.

kubectl asks every ``get`` with ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io,
application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json`` and prints the
cells it gets back. The columns and cells here are those of kubectl's printers in
``pkg/printers/internalversion/printers.go`` (pods, nodes, namespaces, deployments,
replicasets, statefulsets, daemonsets, services, configmaps, secrets, serviceaccounts,
events, jobs, cronjobs, leases, RBAC roles and bindings), generated as the apiserver
does: always "wide" (columns with ``priority`` 1 are hidden by kubectl unless ``-o
wide``). Every other resource gets NAME and AGE, as custom resources without printer
columns do. (kube's ``rest.DefaultTableConvertor`` prints "Name" and "Created At"; it
is only reached by types with no printer at all, which a user never sees for built-in
kinds; :func:`default_columns_table` offers it.)

Pure functions: no I/O; ``now`` is passed in so ages are testable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from proxy.openapi.schemas import definitions
from proxy.registry.served_resource import NamedResource

__all__ = [
    "META_GROUP",
    "TABLE_VERSIONS",
    "AcceptedFormat",
    "NotAcceptableError",
    "TableError",
    "TableResource",
    "TableWatchEncoder",
    "as_partial_object_metadata",
    "as_partial_object_metadata_list",
    "default_columns_table",
    "human_duration",
    "parse_accept",
    "table_watch_event",
    "to_table",
]

JSON = Any
IncludeObject = Literal["None", "Metadata", "Object"]
META_GROUP = "meta.k8s.io"
TABLE_VERSIONS = ("v1", "v1beta1")


TableResource = NamedResource  # what printing needs (proxy.registry.served_resource)


class TableError(ValueError):
    """A bad table request; ``status_code`` 400 (BadRequest)."""

    status_code = 400
    reason = "BadRequest"


# ------------------------------------------------------------------------ durations


def human_duration(delta: dt.timedelta) -> str:
    """apimachinery's ``duration.HumanDuration``: ``45s``, ``5m3s``, ``3h10m``, ``2d4h``, ``3y``."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if dy == 0 else f"{years}y{dy}d"
    return f"{hours // 24 // 365}y"


def parse_time(value: JSON) -> dt.datetime | None:
    """An RFC 3339 timestamp (``2024-01-02T03:04:05Z``, micro-time too), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _since(value: JSON, now: dt.datetime) -> str:
    """kubectl's ``translateTimestampSince``: ``<unknown>`` for a missing time."""
    when = parse_time(value)
    return "<unknown>" if when is None else human_duration(now - when)


# ---------------------------------------------------------------------------- columns


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "string"
    format: str = ""
    priority: int = 0
    doc: str = ""  # "Definition.field" whose schema description describes the column
    description: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description or _doc(self.doc),
            "priority": self.priority,
        }


def _doc(ref: str) -> str:
    """The description (Go SwaggerDoc) of ``Definition.field`` in the API schemas."""
    if not ref:
        return ""
    definition, _, fld = ref.rpartition(".")
    prefix = "io.k8s.apimachinery.pkg.apis.meta.v1." if definition == "ObjectMeta" else ""
    schema = definitions().get(prefix + definition, {})
    prop = schema.get("properties", {}).get(fld, {})
    return str(prop.get("description", ""))


NAME = Column("Name", format="name", doc="ObjectMeta.name")
AGE = Column("Age", doc="ObjectMeta.creationTimestamp")
POD_ = "io.k8s.api.core.v1."
TEMPLATE_COLUMNS = (
    Column("Containers", priority=1, description="Names of each container in the template."),
    Column(
        "Images", priority=1, description="Images referenced by each container in the template."
    ),
)

Row = tuple[list[JSON], list[dict[str, JSON]]]  # cells, conditions
Printer = Callable[[dict[str, JSON], dt.datetime], Row]


@dataclass(frozen=True)
class TablePrinter:
    columns: tuple[Column, ...]
    print_row: Printer


def _meta(obj: Mapping[str, JSON]) -> Mapping[str, JSON]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _get(obj: Mapping[str, JSON] | None, *path: str) -> JSON:
    cur: JSON = obj
    for part in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def _list(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []


def _int(value: JSON) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _name_age(obj: dict[str, JSON], now: dt.datetime) -> tuple[str, str]:
    meta = _meta(obj)
    return str(meta.get("name", "")), _since(meta.get("creationTimestamp"), now)


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


def _condition_true(conditions: JSON, ctype: str) -> bool:
    return any(_get(c, "type") == ctype and _get(c, "status") == "True" for c in _list(conditions))


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
    if _int(term.get("signal")):
        return f"{prefix}Signal:{_int(term.get('signal'))}"
    return f"{prefix}ExitCode:{_int(term.get('exitCode'))}"


def _pod_init_containers(pod: dict[str, JSON], st: _PodState) -> bool:
    """Walk init container statuses; True while the pod is still initializing."""
    specs = {c.get("name"): c for c in _list(_get(pod, "spec", "initContainers")) if c}
    n_init = len(_list(_get(pod, "spec", "initContainers")))
    for i, cs in enumerate(_list(_get(pod, "status", "initContainerStatuses"))):
        restarts = _int(cs.get("restartCount"))
        finished = _get(cs, "lastState", "terminated", "finishedAt")
        st.restarts += restarts
        st.last_restart = _later(st.last_restart, finished)
        sidecar = _is_restartable_init(specs.get(cs.get("name")))
        if sidecar:
            st.sidecar_restarts += restarts
            st.sidecar_last_restart = _later(st.sidecar_last_restart, finished)
        term = _get(cs, "state", "terminated")
        waiting_reason = _get(cs, "state", "waiting", "reason")
        if isinstance(term, Mapping) and _int(term.get("exitCode")) == 0:
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
    for cs in reversed(_list(_get(pod, "status", "containerStatuses"))):
        st.restarts += _int(cs.get("restartCount"))
        st.last_restart = _later(st.last_restart, _get(cs, "lastState", "terminated", "finishedAt"))
        waiting_reason = _get(cs, "state", "waiting", "reason")
        term = _get(cs, "state", "terminated")
        if waiting_reason:
            st.reason = str(waiting_reason)
        elif isinstance(term, Mapping):
            st.reason = _terminated_reason(term, "")
        elif cs.get("ready") and isinstance(_get(cs, "state", "running"), Mapping):
            has_running = True
            st.ready += 1
    if st.reason == "Completed" and has_running:
        ready = _condition_true(_get(pod, "status", "conditions"), "Ready")
        st.reason = "Running" if ready else "NotReady"


def _pod_reason(pod: dict[str, JSON]) -> str:
    phase = str(_get(pod, "status", "phase") or "")
    reason = str(_get(pod, "status", "reason") or "") or phase
    for cond in _list(_get(pod, "status", "conditions")):
        if _get(cond, "type") == "PodScheduled" and _get(cond, "reason") == "SchedulingGated":
            reason = "SchedulingGated"
    return reason


def print_pod(pod: dict[str, JSON], now: dt.datetime) -> Row:
    """kubectl's ``printPod``: READY x/y, STATUS reason, RESTARTS ``n (5m ago)``."""
    phase = _get(pod, "status", "phase")
    st = _PodState(reason=_pod_reason(pod))
    total = len(_list(_get(pod, "spec", "containers")))
    total += sum(1 for c in _list(_get(pod, "spec", "initContainers")) if _is_restartable_init(c))
    initializing = _pod_init_containers(pod, st)
    if not initializing or _condition_true(_get(pod, "status", "conditions"), "Initialized"):
        _pod_containers(pod, st)
    if _meta(pod).get("deletionTimestamp"):
        if _get(pod, "status", "reason") == "NodeLost":
            st.reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            st.reason = "Terminating"
    restarts = str(st.restarts)
    if st.restarts and st.last_restart is not None:
        restarts = f"{st.restarts} ({human_duration(now - st.last_restart)} ago)"
    name, age = _name_age(pod, now)
    cells: list[JSON] = [name, f"{st.ready}/{total}", st.reason, restarts, age]
    cells += _pod_wide(pod)
    conditions = POD_SUCCEEDED if phase == "Succeeded" else POD_FAILED if phase == "Failed" else []
    return cells, conditions


def _pod_wide(pod: dict[str, JSON]) -> list[JSON]:
    ips = _list(_get(pod, "status", "podIPs"))
    ip = str(_get(ips[0], "ip") or "") if ips else ""
    gates = _list(_get(pod, "spec", "readinessGates"))
    gates_cell = "<none>"
    if gates:
        conditions = _list(_get(pod, "status", "conditions"))
        true = 0
        for gate in gates:
            for cond in conditions:
                if _get(cond, "type") == _get(gate, "conditionType"):
                    true += 1 if _get(cond, "status") == "True" else 0
                    break
        gates_cell = f"{true}/{len(gates)}"
    return [
        ip or "<none>",
        str(_get(pod, "spec", "nodeName") or "") or "<none>",
        str(_get(pod, "status", "nominatedNodeName") or "") or "<none>",
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
    for addr in _list(_get(node, "status", "addresses")):
        if _get(addr, "type") == kind:
            return str(_get(addr, "address") or "")
    return "<none>"


def print_node(node: dict[str, JSON], now: dt.datetime) -> Row:
    status: list[str] = []
    for cond in _list(_get(node, "status", "conditions")):
        if _get(cond, "type") == "Ready":
            status = ["Ready" if _get(cond, "status") == "True" else "NotReady"]
    status = status or ["Unknown"]
    if _get(node, "spec", "unschedulable") is True:
        status.append("SchedulingDisabled")
    info = _get(node, "status", "nodeInfo") or {}
    name, age = _name_age(node, now)
    cells: list[JSON] = [
        name,
        ",".join(status),
        _node_roles(_meta(node).get("labels")),
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
    name, age = _name_age(ns, now)
    return [name, str(_get(ns, "status", "phase") or ""), age], []


def format_label_selector(selector: JSON) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()``: ``a=b,c in (d,e)``; ``""`` if empty."""
    if not isinstance(selector, Mapping):
        return ""
    parts: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        parts.append((key, f"{key}={value}"))
    for expr in _list(selector.get("matchExpressions")):
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in _list(expr.get("values"))))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(op), key)
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts, key=lambda p: p[0]))


def _template_wide(obj: dict[str, JSON], selector: str) -> list[JSON]:
    containers = _list(_get(obj, "spec", "template", "spec", "containers"))
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return [names, images, selector]


APPS = "io.k8s.api.apps.v1."
DEPLOYMENT_COLUMNS = (
    NAME,
    Column("Ready", description="Number of the pod with ready state"),
    Column("Up-to-date", doc=APPS + "DeploymentStatus.updatedReplicas"),
    Column("Available", doc=APPS + "DeploymentStatus.availableReplicas"),
    AGE,
    *TEMPLATE_COLUMNS,
    Column("Selector", priority=1, doc=APPS + "DeploymentSpec.selector"),
)


def print_deployment(d: dict[str, JSON], now: dt.datetime) -> Row:
    desired = _int(_get(d, "spec", "replicas"))
    ready = _int(_get(d, "status", "readyReplicas"))
    name, age = _name_age(d, now)
    cells: list[JSON] = [
        name,
        f"{ready}/{desired}",
        _int(_get(d, "status", "updatedReplicas")),
        _int(_get(d, "status", "availableReplicas")),
        age,
        *_template_wide(d, format_label_selector(_get(d, "spec", "selector"))),
    ]
    return cells, []


REPLICASET_COLUMNS = (
    NAME,
    Column("Desired", type="integer", doc=APPS + "ReplicaSetSpec.replicas"),
    Column("Current", type="integer", doc=APPS + "ReplicaSetStatus.replicas"),
    Column("Ready", type="integer", doc=APPS + "ReplicaSetStatus.readyReplicas"),
    AGE,
    *TEMPLATE_COLUMNS,
    Column("Selector", priority=1, doc=APPS + "ReplicaSetSpec.selector"),
)


def print_replicaset(rs: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = _name_age(rs, now)
    cells: list[JSON] = [
        name,
        _int(_get(rs, "spec", "replicas")),
        _int(_get(rs, "status", "replicas")),
        _int(_get(rs, "status", "readyReplicas")),
        age,
        *_template_wide(rs, format_label_selector(_get(rs, "spec", "selector"))),
    ]
    return cells, []


SERVICE_COLUMNS = (
    NAME,
    Column("Type", doc=POD_ + "ServiceSpec.type"),
    Column("Cluster-IP", doc=POD_ + "ServiceSpec.clusterIP"),
    Column("External-IP", doc=POD_ + "ServiceSpec.externalIPs"),
    Column("Port(s)", doc=POD_ + "ServiceSpec.ports"),
    AGE,
    Column("Selector", priority=1, doc=POD_ + "ServiceSpec.selector"),
)


def format_labels(labels: JSON) -> str:
    """``labels.FormatLabels``: sorted ``k=v`` joined by commas, ``<none>`` if empty."""
    if not isinstance(labels, Mapping) or not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def _load_balancer_ips(svc: dict[str, JSON]) -> str:
    found = []
    for ing in _list(_get(svc, "status", "loadBalancer", "ingress")):
        if _get(ing, "ip"):
            found.append(str(ing["ip"]))
        elif _get(ing, "hostname"):
            found.append(str(ing["hostname"]))
    return ",".join(found)


def _service_external_ip(svc: dict[str, JSON]) -> str:
    stype = _get(svc, "spec", "type") or "ClusterIP"
    external = [str(ip) for ip in _list(_get(svc, "spec", "externalIPs"))]
    if stype in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if stype == "LoadBalancer":
        lb = _load_balancer_ips(svc)
        results = ([*lb.split(",")] if lb else []) + external
        return ",".join(results) or "<pending>"
    if stype == "ExternalName":
        return str(_get(svc, "spec", "externalName") or "")
    return "<unknown>"


def _service_ports(svc: dict[str, JSON]) -> str:
    pieces = []
    for port in _list(_get(svc, "spec", "ports")):
        proto = port.get("protocol") or "TCP"
        if _int(port.get("nodePort")) > 0:
            pieces.append(f"{_int(port.get('port'))}:{_int(port.get('nodePort'))}/{proto}")
        else:
            pieces.append(f"{_int(port.get('port'))}/{proto}")
    return ",".join(pieces) or "<none>"


def print_service(svc: dict[str, JSON], now: dt.datetime) -> Row:
    cluster_ips = _list(_get(svc, "spec", "clusterIPs"))
    internal = str(cluster_ips[0]) if cluster_ips else str(_get(svc, "spec", "clusterIP") or "")
    name, age = _name_age(svc, now)
    cells: list[JSON] = [
        name,
        str(_get(svc, "spec", "type") or "ClusterIP"),
        internal or "<none>",
        _service_external_ip(svc),
        _service_ports(svc),
        age,
        format_labels(_get(svc, "spec", "selector")),
    ]
    return cells, []


CONFIGMAP_COLUMNS = (NAME, Column("Data", doc=POD_ + "ConfigMap.data"), AGE)


def print_configmap(cm: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = _name_age(cm, now)
    count = len(cm.get("data") or {}) + len(cm.get("binaryData") or {})
    return [name, count, age], []


SECRET_COLUMNS = (
    NAME,
    Column("Type", doc=POD_ + "Secret.type"),
    Column("Data", doc=POD_ + "Secret.data"),
    AGE,
)


def print_secret(secret: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = _name_age(secret, now)
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
    component = _get(ev, "source", "component") or ev.get("reportingComponent") or ""
    instance = _get(ev, "source", "host") or ev.get("reportingInstance") or ""
    if not component:
        return ""
    return f"{component}, {instance}" if instance else str(component)


def print_event(ev: dict[str, JSON], now: dt.datetime) -> Row:
    first = _since(ev.get("firstTimestamp"), now)
    if parse_time(ev.get("firstTimestamp")) is None:
        first = _since(ev.get("eventTime"), now)
    last = _since(ev.get("lastTimestamp"), now)
    if parse_time(ev.get("lastTimestamp")) is None:
        last = first
    count = _int(ev.get("count"))
    series = ev.get("series")
    if isinstance(series, Mapping):
        last = _since(series.get("lastObservedTime"), now)
        count = _int(series.get("count"))
    elif count == 0:
        count = 1
    kind = str(_get(ev, "involvedObject", "kind") or "").lower()
    obj_name = _get(ev, "involvedObject", "name")
    target = f"{kind}/{obj_name}" if obj_name else kind
    cells: list[JSON] = [
        last,
        str(ev.get("type") or ""),
        str(ev.get("reason") or ""),
        target,
        str(_get(ev, "involvedObject", "fieldPath") or ""),
        _event_source(ev),
        str(ev.get("message") or "").strip(),
        first,
        count,
        str(_meta(ev).get("name", "")),
    ]
    return cells, []


BATCH = "io.k8s.api.batch.v1."
JOB_COLUMNS = (
    NAME,
    Column("Status", description="Status of the job."),
    Column("Completions", doc=BATCH + "JobStatus.succeeded"),
    Column("Duration", description="Time required to complete the job."),
    AGE,
    *TEMPLATE_COLUMNS,
    Column("Selector", priority=1, doc=BATCH + "JobSpec.selector"),
)

JOB_STATUS_ORDER = ("Complete", "Failed")
JOB_STATUS_AFTER_TERMINATING = (
    ("Suspended", "Suspended"),
    ("FailureTarget", "FailureTarget"),
    ("SuccessCriteriaMet", "SuccessCriteriaMet"),
)


def _job_status(job: dict[str, JSON]) -> str:
    conditions = _get(job, "status", "conditions")
    for ctype in JOB_STATUS_ORDER:
        if _condition_true(conditions, ctype):
            return ctype
    if _meta(job).get("deletionTimestamp"):
        return "Terminating"
    for ctype, label in JOB_STATUS_AFTER_TERMINATING:
        if _condition_true(conditions, ctype):
            return label
    return "Running"


def print_job(job: dict[str, JSON], now: dt.datetime) -> Row:
    succeeded = _int(_get(job, "status", "succeeded"))
    completions = _get(job, "spec", "completions")
    parallelism = _int(_get(job, "spec", "parallelism"))
    if isinstance(completions, int):
        done = f"{succeeded}/{completions}"
    elif parallelism > 1:
        done = f"{succeeded}/1 of {parallelism}"
    else:
        done = f"{succeeded}/1"
    start = parse_time(_get(job, "status", "startTime"))
    end = parse_time(_get(job, "status", "completionTime"))
    took = "" if start is None else human_duration((end or now) - start)
    selector = format_label_selector(_get(job, "spec", "selector")) or "<none>"
    name, age = _name_age(job, now)
    cells: list[JSON] = [name, _job_status(job), done, took, age]
    return cells + _template_wide(job, selector), []


STATEFULSET_COLUMNS = (
    NAME,
    Column("Ready", description="Number of the pod with ready state"),
    AGE,
    *TEMPLATE_COLUMNS,
)


def print_statefulset(sts: dict[str, JSON], now: dt.datetime) -> Row:
    ready = _int(_get(sts, "status", "readyReplicas"))
    desired = _int(_get(sts, "spec", "replicas"))
    name, age = _name_age(sts, now)
    return [name, f"{ready}/{desired}", age, *_template_wide(sts, "")[:2]], []


DAEMONSET_COLUMNS = (
    NAME,
    Column("Desired", type="integer", doc=APPS + "DaemonSetStatus.desiredNumberScheduled"),
    Column("Current", type="integer", doc=APPS + "DaemonSetStatus.currentNumberScheduled"),
    Column("Ready", type="integer", doc=APPS + "DaemonSetStatus.numberReady"),
    Column("Up-to-date", type="integer", doc=APPS + "DaemonSetStatus.updatedNumberScheduled"),
    Column("Available", type="integer", doc=APPS + "DaemonSetStatus.numberAvailable"),
    Column("Node Selector", doc=POD_ + "PodSpec.nodeSelector"),
    AGE,
    *TEMPLATE_COLUMNS,
    Column("Selector", priority=1, doc=APPS + "DaemonSetSpec.selector"),
)


def print_daemonset(ds: dict[str, JSON], now: dt.datetime) -> Row:
    status = ds.get("status") or {}
    name, age = _name_age(ds, now)
    node_selector = format_labels(_get(ds, "spec", "template", "spec", "nodeSelector"))
    selector = format_label_selector(_get(ds, "spec", "selector")) or "<none>"
    cells: list[JSON] = [
        name,
        _int(status.get("desiredNumberScheduled")),
        _int(status.get("currentNumberScheduled")),
        _int(status.get("numberReady")),
        _int(status.get("updatedNumberScheduled")),
        _int(status.get("numberAvailable")),
        node_selector,
        age,
        *_template_wide(ds, selector),
    ]
    return cells, []


CRONJOB_COLUMNS = (
    NAME,
    Column("Schedule", doc=BATCH + "CronJobSpec.schedule"),
    Column("Timezone", doc=BATCH + "CronJobSpec.timeZone"),
    Column("Suspend", type="boolean", doc=BATCH + "CronJobSpec.suspend"),
    Column("Active", type="integer", doc=BATCH + "CronJobStatus.active"),
    Column("Last Schedule", doc=BATCH + "CronJobStatus.lastScheduleTime"),
    AGE,
    *TEMPLATE_COLUMNS,
    Column("Selector", priority=1, doc=BATCH + "JobSpec.selector"),
)


def print_cronjob(cj: dict[str, JSON], now: dt.datetime) -> Row:
    last = _get(cj, "status", "lastScheduleTime")
    job_spec = _get(cj, "spec", "jobTemplate", "spec") or {}
    containers = _list(_get(job_spec, "template", "spec", "containers"))
    selector = format_label_selector(job_spec.get("selector")) or "<none>"
    name, age = _name_age(cj, now)
    cells: list[JSON] = [
        name,
        str(_get(cj, "spec", "schedule") or ""),
        str(_get(cj, "spec", "timeZone") or "<none>"),
        # kube defaults spec.suspend to false, so its printer never meets it unset.
        "True" if _get(cj, "spec", "suspend") is True else "False",
        len(_list(_get(cj, "status", "active"))),
        "<none>" if last is None else _since(last, now),
        age,
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
        selector,
    ]
    return cells, []


LEASE_COLUMNS = (
    NAME,
    Column("Holder", doc="io.k8s.api.coordination.v1.LeaseSpec.holderIdentity"),
    AGE,
)


def print_lease(lease: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = _name_age(lease, now)
    return [name, str(_get(lease, "spec", "holderIdentity") or ""), age], []


SERVICEACCOUNT_COLUMNS = (NAME, Column("Secrets", doc=POD_ + "ServiceAccount.secrets"), AGE)


def print_serviceaccount(sa: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = _name_age(sa, now)
    return [name, len(_list(sa.get("secrets"))), age], []


CREATED_AT = Column("Created At", type="date", doc="ObjectMeta.creationTimestamp")
ROLE_COLUMNS = (NAME, CREATED_AT)


def _created_at(obj: dict[str, JSON]) -> str:
    when = parse_time(_meta(obj).get("creationTimestamp"))
    return "" if when is None else when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def print_role(role: dict[str, JSON], now: dt.datetime) -> Row:
    return [str(_meta(role).get("name", "")), _created_at(role)], []


RBAC = "io.k8s.api.rbac.v1."
ROLEBINDING_COLUMNS = (
    NAME,
    Column("Role", doc=RBAC + "RoleBinding.roleRef"),
    AGE,
    Column("Users", priority=1, description="Users in the roleBinding"),
    Column("Groups", priority=1, description="Groups in the roleBinding"),
    Column("ServiceAccounts", priority=1, description="ServiceAccounts in the roleBinding"),
)


def print_rolebinding(rb: dict[str, JSON], now: dt.datetime) -> Row:
    users, groups, sas = [], [], []
    for subject in _list(rb.get("subjects")):
        kind, sname = subject.get("kind"), str(subject.get("name", ""))
        if kind == "User":
            users.append(sname)
        elif kind == "Group":
            groups.append(sname)
        elif kind == "ServiceAccount":
            sas.append(f"{subject.get('namespace', '')}/{sname}")
    role = f"{_get(rb, 'roleRef', 'kind') or ''}/{_get(rb, 'roleRef', 'name') or ''}"
    name, age = _name_age(rb, now)
    return [name, role, age, ", ".join(users), ", ".join(groups), ", ".join(sas)], []


def print_generic(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = _name_age(obj, now)
    return [name, age], []


GENERIC = TablePrinter((NAME, AGE), print_generic)

PRINTERS: dict[tuple[str, str], TablePrinter] = {
    ("", "Pod"): TablePrinter(POD_COLUMNS, print_pod),
    ("", "Node"): TablePrinter(NODE_COLUMNS, print_node),
    ("", "Namespace"): TablePrinter(NAMESPACE_COLUMNS, print_namespace),
    ("apps", "Deployment"): TablePrinter(DEPLOYMENT_COLUMNS, print_deployment),
    ("apps", "ReplicaSet"): TablePrinter(REPLICASET_COLUMNS, print_replicaset),
    ("", "Service"): TablePrinter(SERVICE_COLUMNS, print_service),
    ("", "ConfigMap"): TablePrinter(CONFIGMAP_COLUMNS, print_configmap),
    ("", "Secret"): TablePrinter(SECRET_COLUMNS, print_secret),
    ("", "Event"): TablePrinter(EVENT_COLUMNS, print_event),
    ("batch", "Job"): TablePrinter(JOB_COLUMNS, print_job),
    ("apps", "StatefulSet"): TablePrinter(STATEFULSET_COLUMNS, print_statefulset),
    ("apps", "DaemonSet"): TablePrinter(DAEMONSET_COLUMNS, print_daemonset),
    ("batch", "CronJob"): TablePrinter(CRONJOB_COLUMNS, print_cronjob),
    ("coordination.k8s.io", "Lease"): TablePrinter(LEASE_COLUMNS, print_lease),
    ("", "ServiceAccount"): TablePrinter(SERVICEACCOUNT_COLUMNS, print_serviceaccount),
    ("rbac.authorization.k8s.io", "Role"): TablePrinter(ROLE_COLUMNS, print_role),
    ("rbac.authorization.k8s.io", "ClusterRole"): TablePrinter(ROLE_COLUMNS, print_role),
    ("rbac.authorization.k8s.io", "RoleBinding"): TablePrinter(
        ROLEBINDING_COLUMNS, print_rolebinding
    ),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): TablePrinter(
        ROLEBINDING_COLUMNS, print_rolebinding
    ),
}


def printer_for(resource: TableResource) -> TablePrinter:
    """The printer of a kind (group, kind); NAME/AGE for kinds without one."""
    return PRINTERS.get((resource.group, resource.kind), GENERIC)


# ----------------------------------------------------------------------------- tables

LIST_META_KEYS = ("resourceVersion", "continue", "remainingItemCount")


def _row_object(obj: dict[str, JSON], include_object: IncludeObject, table_version: str) -> JSON:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return as_partial_object_metadata(obj, table_version)


def to_table(
    resource: TableResource,
    objects: Sequence[dict[str, JSON]],
    *,
    include_object: str = "Metadata",
    list_meta: Mapping[str, JSON] | None = None,
    now: dt.datetime,
    table_version: str = "v1",
    no_headers: bool = False,
) -> dict[str, JSON]:
    """A ``meta.k8s.io/<table_version>`` Table of ``objects`` (one row each, in order).

    ``list_meta`` is the list's metadata (resourceVersion, continue,
    remainingItemCount copied over); ``None`` for a single-object GET, whose table then
    carries that object's resourceVersion. ``include_object`` is the ``includeObject``
    option: ``Metadata`` (default, rows carry PartialObjectMetadata), ``Object`` (the
    whole object) or ``None`` (``"object": null``); anything else raises TableError
    (400, ``unrecognized includeObject value: "x"``). ``no_headers`` drops the column
    definitions (``TableOptions.noHeaders``).
    """
    include = include_object or "Metadata"
    if include not in ("None", "Metadata", "Object"):
        raise TableError(f'unrecognized includeObject value: "{include_object}"')
    if table_version not in TABLE_VERSIONS:
        raise TableError(f"unsupported Table version {table_version!r}")
    printer = printer_for(resource)
    rows = []
    for obj in objects:
        cells, conditions = printer.print_row(obj, now)
        row: dict[str, JSON] = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(obj, cast(IncludeObject, include), table_version)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": f"{META_GROUP}/{table_version}",
        "metadata": _table_meta(objects, list_meta),
        "columnDefinitions": [] if no_headers else [c.to_json() for c in printer.columns],
        "rows": rows,
    }


def _table_meta(
    objects: Sequence[dict[str, JSON]], list_meta: Mapping[str, JSON] | None
) -> dict[str, JSON]:
    if list_meta is None:
        rv = _meta(objects[0]).get("resourceVersion") if len(objects) == 1 else None
        return {"resourceVersion": rv} if rv else {}
    return {k: list_meta[k] for k in LIST_META_KEYS if list_meta.get(k) not in (None, "")}


def table_watch_event(
    resource: TableResource,
    event_type: str,
    obj: dict[str, JSON],
    *,
    include_object: str = "Metadata",
    now: dt.datetime,
    table_version: str = "v1",
    no_headers: bool = False,
) -> dict[str, JSON]:
    """A watch event whose object is a one-row Table, as ``kubectl get -w`` reads them.

    ERROR events (their object is a Status) and BOOKMARK events pass through unchanged,
    as kube-apiserver does not print them.
    """
    if event_type in ("ERROR", "BOOKMARK"):
        return {"type": event_type, "object": obj}
    table = to_table(
        resource,
        [obj],
        include_object=include_object,
        list_meta=None,
        now=now,
        table_version=table_version,
        no_headers=no_headers,
    )
    return {"type": event_type, "object": table}


class TableWatchEncoder:
    """Turns one watch stream's events into Table events, as kube-apiserver does.

    The first printed event carries the column definitions; later ones omit them
    (kube's ``watchEmbeddedEncoder`` sets ``noHeaders`` after the first object).
    ERROR (Status) and BOOKMARK events pass through untransformed. One encoder per
    watch stream; not shared between tasks.
    """

    def __init__(
        self,
        resource: TableResource,
        *,
        include_object: str = "Metadata",
        table_version: str = "v1",
        no_headers: bool = False,
    ) -> None:
        self.resource = resource
        self.include_object = include_object
        self.table_version = table_version
        self._sent_headers = no_headers

    def encode(self, event_type: str, obj: dict[str, JSON], now: dt.datetime) -> dict[str, JSON]:
        """The ``{"type": ..., "object": <Table>}`` event for one watch event."""
        event = table_watch_event(
            self.resource,
            event_type,
            obj,
            include_object=self.include_object,
            now=now,
            table_version=self.table_version,
            no_headers=self._sent_headers,
        )
        if event_type not in ("ERROR", "BOOKMARK"):
            self._sent_headers = True
        return event


def as_partial_object_metadata(obj: Mapping[str, JSON], version: str = "v1") -> dict[str, JSON]:
    """``meta.AsPartialObjectMetadata``: the object's metadata only (``as=PartialObjectMetadata``;
    also the object of each watch event when a client watches with PartialObjectMetadataList)."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"{META_GROUP}/{version}",
        "metadata": dict(_meta(obj)),
    }


def as_partial_object_metadata_list(
    objects: Sequence[Mapping[str, JSON]], list_meta: Mapping[str, JSON], version: str = "v1"
) -> dict[str, JSON]:
    """A PartialObjectMetadataList (``as=PartialObjectMetadataList``) of a list response."""
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": f"{META_GROUP}/{version}",
        "metadata": {k: list_meta[k] for k in LIST_META_KEYS if list_meta.get(k) not in (None, "")},
        "items": [as_partial_object_metadata(o, version) for o in objects],
    }


def default_columns_table(
    objects: Sequence[dict[str, JSON]], *, table_version: str = "v1"
) -> dict[str, JSON]:
    """kube's ``rest.DefaultTableConvertor``: Name and ``Created At`` (RFC 3339)."""
    columns = (NAME, CREATED_AT)
    rows = [
        {
            "cells": [_meta(o).get("name", ""), _meta(o).get("creationTimestamp") or ""],
            "object": _row_object(o, "Metadata", table_version),
        }
        for o in objects
    ]
    return {
        "kind": "Table",
        "apiVersion": f"{META_GROUP}/{table_version}",
        "metadata": {},
        "columnDefinitions": [c.to_json() for c in columns],
        "rows": rows,
    }


# ------------------------------------------------------------------------ negotiation

Format = Literal["table", "partial", "partial-list", "json", "yaml", "protobuf"]
JSON_MEDIA = "application/json"
YAML_MEDIA = "application/yaml"
PROTOBUF_MEDIA = "application/vnd.kubernetes.protobuf"
ACCEPTED_MEDIA = (JSON_MEDIA, YAML_MEDIA, PROTOBUF_MEDIA)


@dataclass(frozen=True)
class AcceptedFormat:
    """The response a request asked for.

    ``format``: ``table`` (a meta.k8s.io Table), ``partial`` / ``partial-list``
    (PartialObjectMetadata[List]), ``json`` or ``yaml`` (the object itself).
    ``media_type``: the encoding (application/json or application/yaml).
    ``version``: the meta.k8s.io version for table/partial formats (``v1``/``v1beta1``).
    ``content_type``: the response Content-Type header to send.
    """

    format: Format
    media_type: str = JSON_MEDIA
    version: str = ""

    @property
    def content_type(self) -> str:
        if self.format == "table":
            return f"{self.media_type};as=Table;v={self.version};g={META_GROUP}"
        if self.format == "partial":
            return f"{self.media_type};as=PartialObjectMetadata;v={self.version};g={META_GROUP}"
        if self.format == "partial-list":
            return f"{self.media_type};as=PartialObjectMetadataList;v={self.version};g={META_GROUP}"
        return self.media_type


class NotAcceptableError(ValueError):
    """No media range of the Accept header can be served: 406 NotAcceptable."""

    status_code = 406
    reason = "NotAcceptable"

    def __init__(self, accepted: Sequence[str] = (JSON_MEDIA, YAML_MEDIA)) -> None:
        super().__init__(f"only the following media types are accepted: {', '.join(accepted)}")


def _media_ranges(header: str) -> list[tuple[float, str, dict[str, str]]]:
    ranges = []
    for n, clause in enumerate(header.split(",")):
        parts = [p.strip() for p in clause.split(";")]
        if not parts[0]:
            continue
        params: dict[str, str] = {}
        for p in parts[1:]:
            key, _, value = p.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 0.0
        ranges.append((q, f"{n:04d}", {"": parts[0].lower(), **params}))
    ranges.sort(key=lambda r: (-r[0], r[1]))  # by q, then the client's order
    return [r for r in ranges if r[0] > 0]


_PLAIN: dict[str, Format] = {JSON_MEDIA: "json", YAML_MEDIA: "yaml", PROTOBUF_MEDIA: "protobuf"}


def _as_format(media: dict[str, str], is_list: bool, protobuf: bool) -> AcceptedFormat | None:
    mtype = media[""]
    if mtype in ("*/*", "application/*", "application/json", "application/json-seq"):
        base = JSON_MEDIA
    elif mtype in (YAML_MEDIA, "application/yml", "text/yaml"):
        base = YAML_MEDIA
    elif mtype == PROTOBUF_MEDIA and protobuf:
        base = PROTOBUF_MEDIA
    else:
        return None  # cbor, ... are not served
    kind = media.get("as", "")
    if not kind:
        return AcceptedFormat(_PLAIN[base], base)
    if media.get("g") != META_GROUP or media.get("v") not in TABLE_VERSIONS:
        return None
    version = media["v"]
    if kind == "Table":
        return AcceptedFormat("table", base, version) if base != PROTOBUF_MEDIA else None
    if kind == "PartialObjectMetadata" and not is_list:
        return AcceptedFormat("partial", base, version)
    if kind == "PartialObjectMetadataList" and is_list:
        return AcceptedFormat("partial-list", base, version)
    return None


def parse_accept(
    header: str | None, *, is_list: bool = False, protobuf: bool = False
) -> AcceptedFormat:
    """The format to answer with for an ``Accept`` header (``None``/empty: JSON).

    Media ranges are tried by q-value, then in the client's order; the first one served
    wins. ``as=Table`` needs ``g=meta.k8s.io`` and ``v=v1|v1beta1``; PartialObjectMetadata
    is for a single object, PartialObjectMetadataList for lists and watches
    (``is_list``). ``protobuf``: the resource can be served as protobuf (the object
    and PartialObjectMetadata[List]; a Table never is, as upstream). Raises
    :class:`NotAcceptableError` (406) when nothing fits.
    """
    if not header or not header.strip():
        return AcceptedFormat("json")
    for _, _, media in _media_ranges(header):
        found = _as_format(media, is_list, protobuf)
        if found is not None:
            return found
    raise NotAcceptableError()
