"""The simulated cluster (lab/sim) against a lab-like server, through the real kubectl:
node Leases renew, `kubectl run` ends Running on a node, a Deployment rolls out, is
updated and scaled, every controller shows under its own user agent, a pod is deleted
gracefully, the garbage collector honours each propagation policy, a namespace
terminates in the background, and a Kopf operator runs unchanged."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from lab import seed
from lab.apiserver import cli_command
from lab.etcd import EtcdCluster
from lab.kubeconfig import write_kubeconfig
from lab.process import stop_process
from tests.integration.conftest import JSON, KUBECTL, ServerProcess, start_server

pytestmark = pytest.mark.etcd

NODES = 3


@dataclass
class Cluster:
    server: ServerProcess
    kubeconfig: Path
    sim: subprocess.Popen[bytes]

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 60) -> str:
        r = subprocess.run([str(KUBECTL), "--kubeconfig", str(self.kubeconfig), *args],
                           input=stdin, capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, r.stderr + r.stdout
        return r.stdout

    def json(self, *args: str) -> JSON:
        data: JSON = orjson.loads(self.kubectl(*args, "-o", "json"))
        return data


@pytest.fixture(scope="module")
def cluster(etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A server seeded with a few nodes and pods, and `watchcache sim` against it (Leases
    renewed every second to keep the test short)."""
    d = tmp_path_factory.mktemp("sim")
    with start_server(etcd.endpoints, None, "--lifecycle-controllers=true") as server:
        plan = seed.Plan(pods=12, nodes=NODES, namespaces=2, configmaps=1)
        result = asyncio.run(seed.seed_with_progress(server.url, plan, quiet=True))
        assert result.ok, result.errors
        log = open(d / "sim.log", "wb")  # noqa: SIM115 - the child's, closed below
        sim = subprocess.Popen(cli_command("sim", "--server", server.url, "--renew-seconds",
                                           "1", "--churn", "2", "-v"),
                               stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            yield Cluster(server, write_kubeconfig(d / "kubeconfig", server.url), sim)
        finally:
            stop_process(sim, 20)
            log.close()


def _wait(what: str, check: object, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.3)
    raise AssertionError(f"not within {within} s: {what}")


def test_node_leases_renew(cluster: Cluster) -> None:
    def leases() -> dict[str, str]:
        items = cluster.json("get", "leases", "-n", "kube-node-lease")["items"]
        return {i["metadata"]["name"]: i["spec"]["renewTime"] for i in items}

    _wait("a Lease per node", lambda: len(leases()) == NODES)
    first = leases()
    assert set(first) == {seed.node_name(i) for i in range(NODES)}
    _wait("every Lease renewed", lambda: all(v > first[k] for k, v in leases().items()), 10)
    lease = cluster.json("get", "lease", "-n", "kube-node-lease", seed.node_name(0))
    assert lease["spec"]["holderIdentity"] == seed.node_name(0)
    assert lease["spec"]["leaseDurationSeconds"] == 40


def test_kubectl_run_goes_pending_then_running(cluster: Cluster) -> None:
    cluster.kubectl("run", "web", "--image=nginx:1.27")
    cluster.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s", timeout=40)
    pod = cluster.json("get", "pod", "web")
    assert pod["spec"]["nodeName"] in {seed.node_name(i) for i in range(NODES)}
    status = pod["status"]
    assert status["phase"] == "Running" and status["podIP"] and status["hostIP"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["PodScheduled"] == conditions["Ready"] == "True"
    (container,) = status["containerStatuses"]
    assert container["ready"] and "running" in container["state"]
    assert container["image"] == "nginx:1.27" and container["containerID"].startswith("containerd://")


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, namespace: default}
spec:
  replicas: 4
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec: {containers: [{name: shop, image: "nginx:1.27"}]}
"""


def test_deployment_rolls_out_updates_and_scales(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=DEPLOYMENT)
    out = cluster.kubectl("rollout", "status", "deploy/shop", "--timeout=60s", timeout=70)
    assert 'deployment "shop" successfully rolled out' in out
    cluster.kubectl("set", "image", "deploy/shop", "shop=nginx:1.28")
    out = cluster.kubectl("rollout", "status", "deploy/shop", "--timeout=60s", timeout=70)
    assert "successfully rolled out" in out
    rses = cluster.json("get", "rs", "-l", "app=shop")["items"]
    by_image = {rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs for rs in rses}
    assert by_image["nginx:1.28"]["spec"]["replicas"] == 4
    assert by_image["nginx:1.27"]["spec"]["replicas"] == 0
    assert by_image["nginx:1.28"]["metadata"]["annotations"][
        "deployment.kubernetes.io/revision"] == "2"  # fmt: skip
    cluster.kubectl("scale", "deploy/shop", "--replicas=6")
    cluster.kubectl("rollout", "status", "deploy/shop", "--timeout=60s", timeout=70)
    d = cluster.json("get", "deploy", "shop")
    assert d["status"]["readyReplicas"] == d["status"]["updatedReplicas"] == 6
    pods = cluster.json("get", "pods", "-l", "app=shop")["items"]
    running = [p for p in pods if p["status"].get("phase") == "Running"
               and not p["metadata"].get("deletionTimestamp")]  # the old ones may terminate
    assert len(running) == 6


def test_controllers_are_clients_with_their_own_user_agents(cluster: Cluster) -> None:
    access = [orjson.loads(line.split("watchcache.access: ", 1)[1])
              for line in cluster.server.log().splitlines() if "watchcache.access: " in line]
    agents = {a["userAgent"].split("/")[0] for a in access}
    assert {"watchcache-sim-kubelet", "watchcache-sim-scheduler",
            "watchcache-sim-controller-manager"} <= agents  # fmt: skip
    # informers: LIST with resourceVersion=0 (from the cache), then WATCH
    lists = [a for a in access if a["userAgent"].startswith("watchcache-sim-controller-manager")
             and a["verb"] == "LIST"]  # fmt: skip
    assert lists and all("resourceVersion=0" in a["path"] for a in lists)
    binds = [a for a in access if a["verb"] == "POST" and a["path"].endswith("/binding")]
    assert binds and all(a["userAgent"].startswith("watchcache-sim-scheduler") for a in binds)


def _deployment(name: str, replicas: int = 2) -> str:
    return (DEPLOYMENT.replace("name: shop", f"name: {name}").replace("app: shop", f"app: {name}")
            .replace("replicas: 4", f"replicas: {replicas}"))  # fmt: skip


def _names(cluster: Cluster, kind: str, selector: str) -> list[str]:
    items = cluster.json("get", kind, "-l", selector)["items"]
    return [i["metadata"]["name"] for i in items]


def test_kubectl_delete_pod_is_graceful(cluster: Cluster) -> None:
    cluster.kubectl("run", "brief", "--image=nginx:1.27")
    cluster.kubectl("wait", "--for=condition=Ready", "pod/brief", "--timeout=30s", timeout=40)
    cluster.kubectl("delete", "pod", "brief", "--wait=false")
    pod = cluster.json("get", "pod", "brief")  # still there: its kubelet finishes it
    assert pod["metadata"]["deletionTimestamp"]
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
    cluster.kubectl("wait", "--for=delete", "pod/brief", "--timeout=30s", timeout=40)


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_garbage_collection_per_propagation_policy(cluster: Cluster, cascade: str) -> None:
    name = f"gc-{cascade}"
    cluster.kubectl("apply", "-f", "-", stdin=_deployment(name))
    cluster.kubectl("rollout", "status", f"deploy/{name}", "--timeout=60s", timeout=70)
    (rs,) = _names(cluster, "rs", f"app={name}")
    pods = _names(cluster, "pods", f"app={name}")
    assert len(pods) == 2
    cluster.kubectl("delete", "deploy", name, f"--cascade={cascade}", "--wait=false")
    if cascade == "foreground":  # the owner waits for its dependents
        d = cluster.json("get", "deploy", name)
        assert d["metadata"]["finalizers"] == ["foregroundDeletion"]
    cluster.kubectl("wait", "--for=delete", f"deploy/{name}", "--timeout=30s", timeout=40)
    if cascade == "orphan":
        orphan = cluster.json("get", "rs", rs)
        assert not orphan["metadata"].get("ownerReferences")
        assert sorted(_names(cluster, "pods", f"app={name}")) == sorted(pods)
        cluster.kubectl("delete", "rs", rs)  # tidy: its pods go in the background
        return
    cluster.kubectl("wait", "--for=delete", f"rs/{rs}", "--timeout=30s", timeout=40)
    _wait("the pods collected", lambda: not _names(cluster, "pods", f"app={name}"))


NAMESPACE = """
apiVersion: v1
kind: Namespace
metadata: {name: ending}
"""


def test_a_namespace_terminates_in_the_background(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=NAMESPACE)
    cluster.kubectl("run", "-n", "ending", "inside", "--image=nginx:1.27")
    cluster.kubectl("wait", "-n", "ending", "--for=condition=Ready", "pod/inside",
                    "--timeout=30s", timeout=40)  # fmt: skip
    cluster.kubectl("delete", "namespace", "ending", "--wait=false")
    ns = cluster.json("get", "namespace", "ending")
    assert ns["status"]["phase"] == "Terminating"
    cluster.kubectl("wait", "--for=delete", "namespace/ending", "--timeout=40s", timeout=50)


KOPF_OPERATOR = Path(__file__).with_name("kopf_operator.py")


def _annotation(cluster: Cluster, kind: str, name: str, key: str) -> str | None:
    annotations = cluster.json("get", kind, name)["metadata"].get("annotations") or {}
    value = annotations.get(f"lab.watchcache.io/{key}")
    return str(value) if value is not None else None


def test_a_kopf_operator_runs_unchanged(cluster: Cluster, tmp_path: Path) -> None:
    """Kopf, a third-party operator framework, lists, watches and patches through the
    server as against any cluster (tests/e2e/kopf_operator.py)."""
    kopf = Path(sys.executable).parent / "kopf"
    log = open(tmp_path / "kopf.log", "wb")  # noqa: SIM115 - the child's, closed below
    operator = subprocess.Popen(
        [str(kopf), "run", "--standalone", "--namespace=default", str(KOPF_OPERATOR)],
        stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
    )  # fmt: skip
    try:
        cluster.kubectl("apply", "-f", "-", stdin=KOPF_CONFIGMAP)
        _wait("kopf counted 2 keys",
              lambda: _annotation(cluster, "configmap", "kopf-cm", "keys") == "2")
        cluster.kubectl("patch", "configmap", "kopf-cm", "--type=merge",
                        "-p", '{"data": {"c": "3"}}')  # fmt: skip
        _wait("kopf saw the update",
              lambda: _annotation(cluster, "configmap", "kopf-cm", "keys") == "3")
        deployment = _deployment("kopf-web").replace(
            "metadata: {name: kopf-web, namespace: default}",
            'metadata: {name: kopf-web, namespace: default, labels: {kopf-example: "yes"}}')
        cluster.kubectl("apply", "-f", "-", stdin=deployment)
        _wait("kopf followed the Deployment's status",
              lambda: _annotation(cluster, "deploy", "kopf-web", "available") == "2")
    finally:
        stop_process(operator, 20)
        log.close()
    assert "Traceback" not in (tmp_path / "kopf.log").read_text()


KOPF_CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata: {name: kopf-cm, namespace: default, labels: {kopf-example: "yes"}}
data: {a: "1", b: "2"}
"""
