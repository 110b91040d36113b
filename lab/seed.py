"""``watchcache seed``: a realistic data set, POSTed through the API with a progress bar.

Two halves, kept apart so the first is unit-tested without a network:

- pure generators (:func:`pod`, :func:`node`, :func:`namespace`, :func:`configmap`,
  :func:`plan`) build objects the way kube-apiserver stores them: pods with containers,
  resources, volumes, tolerations, conditions, container statuses, IPs and
  managedFields, 2-4 KB each, spread round-robin over nodes (``spec.nodeName``) and
  namespaces. Everything is derived from the object's index, so the same ``--pods``
  always produces the same names and bytes, and seeding indices [a, b) later extends
  a data set seeded with [0, a).
- :func:`seed` POSTs a plan with bounded concurrency. It is idempotent: a 409
  AlreadyExists counts as "existing", not as a failure.

The server records who wrote what (managedFields) as the writes of a real cluster
leave it: pods are server-side applied by ``kube-controller-manager`` (create-on-apply)
and their status applied through ``/status`` by ``kubelet``; configmaps are applied by
``kubectl``; nodes are created by ``kubelet``, namespaces by ``kubectl-create``. The
generators' own ``managedFields`` (what kube-apiserver shows for such a pod) are not
sent: the server writes its own.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import aiohttp

from storage.interfaces import JSONObject

APPS: tuple[tuple[str, str, str], ...] = (
    # (app, tier, image)
    ("web", "frontend", "registry.k8s.io/nginx-slim:0.27"),
    ("api", "backend", "ghcr.io/example/api:1.14.2"),
    ("worker", "backend", "ghcr.io/example/worker:1.14.2"),
    ("cache", "data", "docker.io/library/redis:7.4.1"),
    ("db", "data", "docker.io/library/postgres:16.4"),
    ("queue", "data", "docker.io/library/rabbitmq:3.13"),
    ("auth", "backend", "ghcr.io/example/auth:2.3.0"),
    ("search", "backend", "docker.io/library/opensearch:2.17.0"),
    ("billing", "backend", "ghcr.io/example/billing:0.9.8"),
    ("frontend", "frontend", "ghcr.io/example/frontend:5.1.0"),
)
CREATED = "2026-11-29T09:00:00Z"
STARTED = "2026-11-29T09:00:07Z"


def _h(*parts: object, n: int = 10) -> str:
    """A stable lowercase hex digest of ``parts`` (names, uids, hashes)."""
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:n]


def _uid(*parts: object) -> str:
    d = _h(*parts, n=32)
    return f"{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:32]}"


def namespace_name(i: int) -> str:
    """``default`` first, then ``team-01``, ``team-02``, ..."""
    return "default" if i == 0 else f"team-{i:02d}"


def node_name(i: int) -> str:
    return f"node-{i:03d}"


# kube's rand.String alphabet (no vowels, no 0/1/3); a 5-char suffix has 27**5 values.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIXES = len(_ALPHABET) ** 5
_SCRAMBLE = 7_368_787  # coprime with 27**5, so index -> suffix is a bijection


def _suffix(n: int) -> str:
    """A random-looking but unique 5-char suffix for ``n`` < 27**5."""
    v = (n * _SCRAMBLE + 1_234_567) % _SUFFIXES
    out = []
    for _ in range(5):
        v, r = divmod(v, len(_ALPHABET))
        out.append(_ALPHABET[r])
    return "".join(out)


def pod_name(i: int) -> str:
    """A Deployment-style name ``<app>-<replicaset hash>-<5 chars>``, unique per index."""
    app = APPS[i % len(APPS)][0]
    return f"{app}-{_h('rs', app, n=10)}-{_suffix(i)}"


def pod_ip(i: int, nodes: int) -> str:
    """Pod ``i``'s IP: inside its node's podCIDR (``10.N.0.0/16``), one of its own, so no
    two pods share one (``pods/proxy`` and ``services/proxy`` reach a pod by it)."""
    n, j = i % max(nodes, 1), i // max(nodes, 1) + 2
    return f"10.{n & 255}.{(j >> 8) & 255}.{j & 255}"


def node_ip(i: int) -> str:
    """Node ``i``'s InternalIP: on this host's loopback (127.0.0.0/8 is all loopback),
    so the API server reaches the simulated kubelet there (the same length as a
    172.20.x.y address: the seeded bytes do not change)."""
    return f"127.20.{(i >> 8) & 255}.{i & 255}"


def namespace(i: int) -> JSONObject:
    name = namespace_name(i)
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
    }


# A healthy node's conditions as the kubelet writes them (type, status, reason,
# message: pkg/kubelet/nodestatus/setters.go), also what the simulated kubelets post
NODE_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory",
     "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)  # fmt: skip


def node(i: int) -> JSONObject:
    """A Ready node with capacity, conditions and addresses (~2 KB)."""
    name = node_name(i)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "m6i.2xlarge",
                "topology.kubernetes.io/zone": f"zone-{'abc'[i % 3]}",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": f"10.{i & 255}.0.0/16", "providerID": f"lab://{name}"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110",
                         "ephemeral-storage": "100Gi"},
            "allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "110",
                            "ephemeral-storage": "92Gi"},
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": m,
                 "lastHeartbeatTime": STARTED, "lastTransitionTime": CREATED}
                for t, s, r, m in NODE_CONDITIONS
            ],
            "addresses": [{"type": "InternalIP", "address": node_ip(i)},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": _h("machine", i, n=32), "systemUUID": _uid("sys", i),
                "bootID": _uid("boot", i), "kernelVersion": "6.8.0-48-generic",
                "osImage": "Ubuntu 24.04.1 LTS", "containerRuntimeVersion": "containerd://1.7.22",
                "kubeletVersion": "v1.37.0", "kubeProxyVersion": "v1.37.0",
                "operatingSystem": "linux", "architecture": "amd64",
            },
        },
    }  # fmt: skip


def configmap(i: int, namespaces: int) -> JSONObject:
    """An application config of ~1 KB."""
    ns = namespace_name(i % max(namespaces, 1))
    app = APPS[i % len(APPS)][0]
    settings = "\n".join(f"{app}.setting.{k} = value-{_h(app, i, k, n=16)}" for k in range(16))
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{app}-config-{i}", "namespace": ns,
                     "labels": {"app": app, "tier": APPS[i % len(APPS)][1]}},
        "data": {"app.properties": settings, "LOG_LEVEL": "info", "REPLICAS": str(i % 5 + 1)},
    }  # fmt: skip


def _managed_fields(app: str) -> list[JSONObject]:
    """managedFields as kube-controller-manager and the kubelet leave them."""
    spec_fields: JSONObject = {
        "f:containers": {f'k:{{"name":"{app}"}}': {
            ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
            "f:resources": {"f:limits": {}, "f:requests": {}}, "f:env": {},
        }},
        "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
        "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
    }
    status_fields: JSONObject = {
        "f:conditions": {f'k:{{"type":"{t}"}}': {".": {}, "f:status": {}}
                         for t in ("Ready",)},
        "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {},
        "f:podIPs": {}, "f:startTime": {},
    }
    return [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": CREATED, "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {}, "f:ownerReferences": {}},
                      "f:spec": spec_fields}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": STARTED,
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": status_fields},
         "subresource": "status"},
    ]  # fmt: skip


def pod_spec(i: int, nodes: int) -> JSONObject:
    app, tier, image = APPS[i % len(APPS)]
    return {
        "containers": [{
            "name": app, "image": image, "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "APP", "value": app}, {"name": "TIER", "value": tier},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.name"}}}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                          "limits": {"cpu": "500m", "memory": "512Mi"}},
            "volumeMounts": [
                {"name": "config", "mountPath": "/etc/app"},
                {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/"
                 "serviceaccount", "readOnly": True},
            ],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }],
        "volumes": [
            {"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
            {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt",
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ]}},
        ],
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300},
        ],
        "nodeName": node_name(i % max(nodes, 1)),
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler", "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30, "securityContext": {},
        "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
    }  # fmt: skip


def pod_status(i: int, nodes: int) -> JSONObject:
    app, _, image = APPS[i % len(APPS)]
    conds = ("Initialized", "Ready", "ContainersReady", "PodScheduled")
    return {
        "phase": "Running", "qosClass": "Burstable",
        "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                        "lastTransitionTime": STARTED} for t in conds],
        "hostIP": node_ip(i % max(nodes, 1)),
        "hostIPs": [{"ip": node_ip(i % max(nodes, 1))}],
        "podIP": pod_ip(i, nodes), "podIPs": [{"ip": pod_ip(i, nodes)}], "startTime": CREATED,
        "containerStatuses": [{
            "name": app, "ready": True, "started": True, "restartCount": 0, "image": image,
            "imageID": f"{image.split(':')[0]}@sha256:{_h('img', image, n=64)}",
            "containerID": f"containerd://{_h('ctr', i, n=64)}",
            "state": {"running": {"startedAt": STARTED}}, "lastState": {},
        }],
    }  # fmt: skip


POD_SIZES = ("default", "small")


def pod(i: int, nodes: int, namespaces: int, size: str = "default") -> JSONObject:
    """Pod number ``i``: on node ``i % nodes``, in namespace ``i % namespaces``.
    ``size="small"``: the same pod with one plain container and a short status, ~2 KB
    stored (the default is ~4 KB): the many small objects of issue 25's memory goal."""
    if size == "small":
        return _small_pod(i, nodes, namespaces)
    app, tier, _ = APPS[i % len(APPS)]
    rs_hash = _h("rs", app, n=10)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(i),
            "generateName": f"{app}-{rs_hash}-",
            "namespace": namespace_name(i % max(namespaces, 1)),
            "labels": {"app": app, "tier": tier, "pod-template-hash": rs_hash},
            "annotations": {"kubectl.kubernetes.io/default-container": app},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-{rs_hash}",
                "uid": _uid("rs", app), "controller": True, "blockOwnerDeletion": True,
            }],
            "managedFields": _managed_fields(app),
        },
        "spec": pod_spec(i, nodes),
        "status": pod_status(i, nodes),
    }  # fmt: skip


def _small_pod(i: int, nodes: int, namespaces: int) -> JSONObject:
    app, _, image = APPS[i % len(APPS)]
    rs_hash = _h("rs", app, n=10)
    node = i % max(nodes, 1)
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": pod_name(i), "namespace": namespace_name(i % max(namespaces, 1)),
            "labels": {"app": app, "pod-template-hash": rs_hash},
        },
        "spec": {
            "containers": [{"name": app, "image": image, "imagePullPolicy": "IfNotPresent",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}],
            "nodeName": node_name(node), "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "serviceAccountName": "default",
        },
        "status": {
            "phase": "Running", "hostIP": node_ip(node), "podIP": pod_ip(i, nodes),
            "containerStatuses": [{
                "name": app, "ready": True, "started": True, "restartCount": 0,
                "image": image, "containerID": f"containerd://{_h('ctr', i, n=64)}",
                "state": {"running": {"startedAt": STARTED}},
            }],
        },
    }  # fmt: skip


# -- plans -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Item:
    """One object to create: the collection path it is POSTed to, and its body."""

    resource: str
    path: str
    body: JSONObject


def _ns_path(ns: str, resource: str) -> str:
    return f"/api/v1/namespaces/{ns}/{resource}"


@dataclass(frozen=True)
class Plan:
    """A data set: counts and index ranges. Iterating it yields Items in creation order
    (namespaces first, so that namespaced objects never land in a missing namespace)."""

    pods: int
    nodes: int
    namespaces: int
    configmaps: int = 0
    pods_from: int = 0
    pod_size: str = "default"  # POD_SIZES

    def __post_init__(self) -> None:
        for name in ("pods", "nodes", "namespaces", "configmaps", "pods_from"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.pods > self.pods_from and (self.nodes < 1 or self.namespaces < 1):
            raise ValueError("pods need at least one node and one namespace")

    def __len__(self) -> int:
        return self.namespaces + self.nodes + self.configmaps + (self.pods - self.pods_from)

    def __iter__(self) -> Iterator[Item]:
        for i in range(self.namespaces):
            yield Item("namespaces", "/api/v1/namespaces", namespace(i))
        for i in range(self.nodes):
            yield Item("nodes", "/api/v1/nodes", node(i))
        for i in range(self.configmaps):
            cm = configmap(i, self.namespaces)
            yield Item("configmaps", _ns_path(cm["metadata"]["namespace"], "configmaps"), cm)
        yield from self.pod_items()

    def pod_items(self) -> Iterator[Item]:
        for i in range(self.pods_from, self.pods):
            p = pod(i, self.nodes, self.namespaces, self.pod_size)
            yield Item("pods", _ns_path(p["metadata"]["namespace"], "pods"), p)

    def without_pods(self) -> Plan:
        return Plan(0, self.nodes, self.namespaces, self.configmaps)


# -- I/O -------------------------------------------------------------------------------


@dataclass
class SeedResult:
    """Counts per resource: created, already existing, failed (with the first errors)."""

    created: dict[str, int] = field(default_factory=dict)
    existing: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    status_writes: int = 0

    def count(self, bucket: dict[str, int], resource: str) -> None:
        bucket[resource] = bucket.get(resource, 0) + 1

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self, sep: str = "; ") -> str:
        """One part per resource (``pods: 300 created, 2 existed``), joined by ``sep``."""
        parts = []
        for r in sorted(set(self.created) | set(self.existing) | set(self.failed)):
            s = f"{r}: {self.created.get(r, 0)} created"
            if self.existing.get(r):
                s += f", {self.existing[r]} existed"
            if self.failed.get(r):
                s += f", {self.failed[r]} FAILED"
            parts.append(s)
        return sep.join(parts)


Progress = Callable[[Item], None]


APPLY = "application/apply-patch+yaml"
# who writes each kind of seeded object in a real cluster (its managedFields manager)
CREATORS = {"namespaces": "kubectl-create", "nodes": "kubelet"}
APPLIERS = {"pods": "kube-controller-manager", "configmaps": "kubectl"}


def _request(item: Item) -> tuple[str, str, bytes, dict[str, str]]:
    """(method, path, body, headers) of the write that seeds ``item``."""
    import orjson

    body = {k: v for k, v in item.body.items() if k != "status" or item.resource != "pods"}
    body["metadata"] = {k: v for k, v in body["metadata"].items() if k != "managedFields"}
    manager = APPLIERS.get(item.resource)
    if manager is None:
        creator = CREATORS.get(item.resource, "watchcache-seed")
        return "POST", f"{item.path}?fieldManager={creator}", orjson.dumps(body), {}
    path = f"{item.path}/{body['metadata']['name']}?fieldManager={manager}"
    return "PATCH", path, orjson.dumps(body), {"Content-Type": APPLY}


async def _create(
    session: aiohttp.ClientSession, base: str, item: Item, result: SeedResult, retries: int = 5
) -> None:
    method, path, data, headers = _request(item)
    headers.setdefault("Content-Type", "application/json")
    for attempt in range(retries):
        async with session.request(method, base + path, data=data, headers=headers) as r:
            body = await r.read()
            if r.status == 201 or (r.status in (200, 202) and method == "POST"):
                result.count(result.created, item.resource)
                if item.resource == "pods":
                    await _apply_pod_status(session, base, item, result)
                return
            if r.status in (200, 409):  # an apply of an existing object, or AlreadyExists
                result.count(result.existing, item.resource)
                return
            retry_after = r.headers.get("Retry-After")
            if r.status in (429, 500, 503, 504) and attempt + 1 < retries:
                await asyncio.sleep(float(retry_after or 0.2 * (attempt + 1)))
                continue
            result.count(result.failed, item.resource)
            if len(result.errors) < 5:
                result.errors.append(f"POST {item.path} -> {r.status}: {body[:300]!r}")
            return


async def _apply_pod_status(
    session: aiohttp.ClientSession, base: str, item: Item, result: SeedResult
) -> None:
    """The kubelet's write: the pod's status applied through /status."""
    import orjson

    meta = item.body["metadata"]
    config = {"apiVersion": "v1", "kind": "Pod", "status": item.body["status"],
              "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}  # fmt: skip
    url = f"{base}{item.path}/{meta['name']}/status?fieldManager=kubelet"
    async with session.patch(url, data=orjson.dumps(config),
                             headers={"Content-Type": APPLY}) as r:  # fmt: skip
        await r.read()
        if r.status == 200:
            result.status_writes += 1
        elif len(result.errors) < 5:
            result.errors.append(f"PATCH {url} -> {r.status} (status kept as created)")


async def seed(
    server: str,
    plan: Plan,
    *,
    concurrency: int = 32,
    progress: Progress | None = None,
    token: str | None = None,
) -> SeedResult:
    """POST every item of ``plan`` to ``server``, at most ``concurrency`` in flight.

    Namespaces are created before anything else (they gate namespaced creates). Never
    raises for HTTP errors: they are counted in the result; connection errors propagate.
    """
    result = SeedResult()
    base = server.rstrip("/")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(
        connector=connector, headers=headers, timeout=timeout
    ) as session:
        items = iter(plan)
        first = [next(items) for _ in range(plan.namespaces)]
        await _run(session, base, iter(first), result, concurrency, progress)
        await _run(session, base, items, result, concurrency, progress)
    return result


async def _run(
    session: aiohttp.ClientSession,
    base: str,
    items: Iterator[Item],
    result: SeedResult,
    concurrency: int,
    progress: Progress | None,
) -> None:
    async def worker() -> None:
        # Workers share one iterator: no queue holding the whole plan in memory.
        for item in items:
            await _create(session, base, item, result)
            if progress is not None:
                progress(item)

    async with asyncio.TaskGroup() as tg:
        for _ in range(concurrency):
            tg.create_task(worker())


async def seed_with_progress(
    server: str, plan: Plan, *, concurrency: int = 32, token: str | None = None,
    quiet: bool = False,
) -> SeedResult:
    """:func:`seed` with a ``rich`` progress bar (one task per resource)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )  # fmt: skip

    totals = {"namespaces": plan.namespaces, "nodes": plan.nodes,
              "configmaps": plan.configmaps, "pods": plan.pods - plan.pods_from}  # fmt: skip
    with Progress(
        TextColumn("{task.description:<11}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), disable=quiet, transient=False,
    ) as bar:  # fmt: skip
        tasks = {r: bar.add_task(r, total=n) for r, n in totals.items() if n}
        return await seed(
            server, plan, concurrency=concurrency, token=token,
            progress=lambda item: bar.advance(tasks[item.resource]),
        )  # fmt: skip


def add_plan_arguments(p: argparse.ArgumentParser, *, pods: int, nodes: int, namespaces: int,
                       configmaps: int) -> None:  # fmt: skip
    p.add_argument("--pods", type=int, default=pods, help=f"pods (default {pods})")
    p.add_argument("--nodes", type=int, default=nodes, help=f"nodes (default {nodes})")
    p.add_argument("--namespaces", type=int, default=namespaces,
                   help=f"namespaces (default {namespaces})")
    p.add_argument("--configmaps", type=int, default=configmaps,
                   help=f"configmaps (default {configmaps})")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="watchcache seed", description=__doc__.split("\n\n")[0])
    add_plan_arguments(p, pods=1000, nodes=10, namespaces=5, configmaps=50)
    p.add_argument("--server", default="http://127.0.0.1:8080", help="API server URL")
    p.add_argument("--token", default=None, help="bearer token, if the server wants one")
    p.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    p.add_argument("--pods-from", type=int, default=0,
                   help="first pod index (extend a data set seeded earlier)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    try:
        plan = Plan(a.pods, a.nodes, a.namespaces, a.configmaps, pods_from=a.pods_from)
    except ValueError as e:
        p.error(str(e))
    try:
        result = asyncio.run(seed_with_progress(
            a.server, plan, concurrency=a.concurrency, token=a.token, quiet=a.quiet))
    except aiohttp.ClientError as e:
        print(f"watchcache seed: cannot reach {a.server}: {e}", file=sys.stderr)
        return 1
    print(result.summary())
    for err in result.errors:
        print(f"  {err}", file=sys.stderr)
    return 0 if result.ok else 1


async def seed_etcd(endpoints: list[str], plan: Plan, *, concurrency: int = 64) -> int:
    """Write the plan's pods straight into etcd, as kube-apiserver stores them (uid,
    creationTimestamp, managedFields; the storage's protobuf encoding), at most
    ``concurrency`` puts in flight: the 100,000-pod bench seeds in about a minute
    instead of 200,000 API writes. The namespaces and nodes go through the API
    (``seed``). Returns the pods written."""
    return await put_pods(endpoints, (item.body for item in plan.pod_items()),
                          concurrency=concurrency)  # fmt: skip


async def put_pods(endpoints: list[str], pods: Iterable[JSONObject], *,
                   prefix: str = "/registry", concurrency: int = 64) -> int:  # fmt: skip
    """Put ``pods`` (each with its namespace) under ``<prefix>/pods/`` of the etcd at
    ``endpoints`` in kube-apiserver's protobuf storage encoding, with what its create
    would have added: any kube-apiserver reading that etcd (watchcache, or a reference
    the bench started on an etcd of its own) serves them as its own."""
    from etcdclient import EtcdClient
    from storage.codec import codec_for
    from storage.media_types import PROTOBUF

    codec = codec_for(PROTOBUF)
    bodies = iter(pods)
    written = 0

    async def worker(c: EtcdClient) -> None:
        nonlocal written
        for body in bodies:
            meta = body["metadata"]
            meta["uid"] = _uid("pod", meta["namespace"], meta["name"])
            meta["creationTimestamp"] = CREATED
            meta["managedFields"] = _managed_fields(meta["labels"]["app"])
            key = f"{prefix}/pods/{meta['namespace']}/{meta['name']}"
            await c.put(key.encode(), codec.encode(body))
            written += 1

    async with EtcdClient(endpoints, request_timeout=60) as c, asyncio.TaskGroup() as tg:
        for _ in range(concurrency):
            tg.create_task(worker(c))
    return written


async def create_items(
    session: aiohttp.ClientSession, server: str, items: Iterable[Item], *, concurrency: int = 32
) -> SeedResult:
    """POST ``items`` through an open ``session`` (its credentials and TLS: a reference
    kube-apiserver's), at most ``concurrency`` in flight; pods get their status too."""
    result = SeedResult()
    await _run(session, server.rstrip("/"), iter(items), result, concurrency, None)
    return result
