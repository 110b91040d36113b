"""The rest of a learner's control plane in the simulated cluster, through the real
kubectl: ``kubectl drain`` evicts through pods/eviction and waits on a
PodDisruptionBudget the disruption controller keeps; ``kubectl certificate approve``
gets a CSR issued by the lab CA's signer (and ``deny`` and a refused request show as
upstream's); a node whose kubelet stops goes NotReady with the unreachable taints, and
the pod that tolerates them for two seconds is evicted; the Events are read through
events.k8s.io/v1 too."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from lab import seed
from lab.apiserver import cli_command
from lab.etcd import EtcdCluster
from lab.kubeconfig import write_kubeconfig
from lab.process import stop_process
from proxy.server.certs import new_ca
from tests.csr import csr_object, new_request
from tests.e2e.conftest import run_kubectl
from tests.integration.conftest import JSON, start_server

# drains and kubelets that stop and come back wait out real grace periods: `make slow-test`
pytestmark = [pytest.mark.etcd, pytest.mark.slow]

NODES = 3


@dataclass
class Cluster:
    kubeconfig: Path
    ca_cert: bytes

    def run(
        self, *args: str, stdin: str | None = None, timeout: float = 90
    ) -> subprocess.CompletedProcess[str]:
        return run_kubectl(self.kubeconfig, *args, stdin=stdin, timeout=timeout)

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 90) -> str:
        r = self.run(*args, stdin=stdin, timeout=timeout)
        assert r.returncode == 0, r.stderr + r.stdout
        return r.stdout

    def json(self, *args: str) -> JSON:
        data: JSON = orjson.loads(self.kubectl(*args, "-o", "json"))
        return data


@pytest.fixture(scope="module")
def cluster(etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A seeded server and `watchcache sim` with the CSR signer on a CA of the test's,
    Leases renewed every second and a node silent for 4 s declared NotReady."""
    d = tmp_path_factory.mktemp("control-plane")
    ca = new_ca("sim-signing-ca")
    ca.write(d / "ca.crt", d / "ca.key")
    with start_server(etcd.endpoints, None, "--lifecycle-controllers=true") as server:
        plan = seed.Plan(pods=6, nodes=NODES, namespaces=1, configmaps=1)
        result = asyncio.run(seed.seed_with_progress(server.url, plan, quiet=True))
        assert result.ok, result.errors
        log = open(d / "sim.log", "wb")  # noqa: SIM115 - the child's, closed below
        sim = subprocess.Popen(cli_command(
            "sim", "--server", server.url, "--renew-seconds", "1", "--churn", "0",
            "--cluster-signing-cert-file", str(d / "ca.crt"),
            "--cluster-signing-key-file", str(d / "ca.key"),
            "--node-monitor-period", "1", "--node-monitor-grace-period", "4", "-v"),
            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            yield Cluster(write_kubeconfig(d / "kubeconfig", server.url), ca.cert_pem)
        finally:
            stop_process(sim, 20)
            log.close()


def _wait(what: str, check: Callable[[], object], within: float = 40.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"not within {within} s: {what}")


WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: store, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: store}}
  template:
    metadata: {labels: {app: store}}
    spec: {containers: [{name: store, image: "nginx:1.27"}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: store, namespace: default}
spec:
  minAvailable: 3
  selector: {matchLabels: {app: store}}
"""


def _budget(cluster: Cluster) -> JSON:
    status: JSON = cluster.json("get", "pdb", "store")["status"]
    return status


def test_drain_waits_for_the_disruption_budget(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=WEB)
    cluster.kubectl("rollout", "status", "deploy/store", "--timeout=60s")
    _wait("the budget observed, 3 healthy", lambda: _budget(cluster).get("currentHealthy") == 3)
    status = _budget(cluster)
    assert (status["desiredHealthy"], status["expectedPods"], status["disruptionsAllowed"],
            status["observedGeneration"]) == (3, 3, 0, 1)  # fmt: skip
    assert "ALLOWED DISRUPTIONS" in cluster.kubectl("get", "pdb", "store")
    store = cluster.json("get", "pods", "-l", "app=store")["items"]
    node = store[0]["spec"]["nodeName"]

    blocked = cluster.run("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                          "--force", "--timeout=8s")  # fmt: skip
    assert blocked.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in blocked.stderr
    assert cluster.json("get", "node", node)["spec"]["unschedulable"] is True
    assert cluster.run("get", "pod", store[0]["metadata"]["name"]).returncode == 0

    cluster.kubectl("scale", "deploy/store", "--replicas=4")  # a fourth pod, elsewhere
    _wait("a disruption allowed", lambda: _budget(cluster).get("disruptionsAllowed") == 1)
    out = cluster.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                          "--force", "--timeout=60s")  # fmt: skip
    assert f"evicting pod default/{store[0]['metadata']['name']}" in out
    assert f"pod/{store[0]['metadata']['name']} evicted" in out
    assert f"node/{node} drained" in out
    cluster.kubectl("rollout", "status", "deploy/store", "--timeout=60s")
    pods = cluster.json("get", "pods", "-l", "app=store")["items"]
    assert node not in {p["spec"]["nodeName"] for p in pods}
    cluster.kubectl("uncordon", node)


LONER = """
apiVersion: v1
kind: Pod
metadata: {name: loner, namespace: default, labels: {app: loner}}
spec: {containers: [{name: c, image: "nginx:1.27"}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: loner, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: loner}}
"""


def test_a_budget_over_unmanaged_pods(cluster: Cluster) -> None:
    """maxUnavailable needs the pods' controllers' scale: a pod without one is not
    expected, and the budget says so (upstream's UnmanagedPods warning)."""
    cluster.kubectl("apply", "-f", "-", stdin=LONER)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/loner", "--timeout=30s")
    _wait("observed", lambda: cluster.json("get", "pdb", "loner")["status"].get(
        "currentHealthy") == 1)  # fmt: skip
    status = cluster.json("get", "pdb", "loner")["status"]
    assert (status["expectedPods"], status["desiredHealthy"], status["disruptionsAllowed"]) == (
        0, 0, 0)  # fmt: skip
    _wait("the warning", lambda: "UnmanagedPods" in cluster.kubectl(
        "get", "events", "--field-selector", "involvedObject.name=loner,type=Warning"))
    message = cluster.json("get", "events", "--field-selector",
                           "reason=UnmanagedPods")["items"][0]["message"]  # fmt: skip
    assert message.startswith("Pods selected by this PodDisruptionBudget (selector: app=loner) "
                              "were found to be unmanaged.")  # fmt: skip


def _csr(name: str, org: str, usages: list[str]) -> str:
    """A client CSR for ``name`` in group ``org``, for a day, as JSON."""
    request = new_request(name, org)[1]
    return orjson.dumps(csr_object(name, request, usages, expiration_seconds=86400)).decode()


def _condition_column(cluster: Cluster, name: str) -> str:
    return cluster.kubectl("get", "csr", name, "--no-headers").split()[-1]


def test_certificate_approve_issues_from_the_lab_ca(cluster: Cluster) -> None:
    jane = _csr("jane", "dev", ["digital signature", "client auth"])
    cluster.kubectl("apply", "-f", "-", stdin=jane)
    table = cluster.kubectl("get", "csr", "jane")
    assert table.split("\n")[0].split() == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR",
                                            "REQUESTEDDURATION", "CONDITION"]  # fmt: skip
    assert "kubernetes.io/kube-apiserver-client" in table and "24h" in table
    assert _condition_column(cluster, "jane") == "Pending"
    out = cluster.kubectl("certificate", "approve", "jane")
    assert out.strip() == "certificatesigningrequest.certificates.k8s.io/jane approved"
    _wait("issued", lambda: _condition_column(cluster, "jane") == "Approved,Issued", 20)

    csr = cluster.json("get", "csr", "jane")
    (approved,) = csr["status"]["conditions"]
    assert (approved["type"], approved["status"], approved["reason"]) == (
        "Approved", "True", "KubectlApprove")  # fmt: skip
    assert approved["lastUpdateTime"] and approved["lastTransitionTime"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(csr["status"]["certificate"]))
    ca = x509.load_pem_x509_certificate(cluster.ca_cert)
    cert.verify_directly_issued_by(ca)
    assert cert.subject.rfc4514_string() == "CN=jane,O=dev"
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert lifetime == dt.timedelta(days=1, minutes=5)  # backdated five minutes


def test_certificate_deny_and_a_refused_request(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=_csr("mallory", "dev", ["client auth"]))
    out = cluster.kubectl("certificate", "deny", "mallory")
    assert out.strip() == "certificatesigningrequest.certificates.k8s.io/mallory denied"
    assert _condition_column(cluster, "mallory") == "Denied"
    approve = cluster.run("certificate", "approve", "mallory")
    assert approve.stderr == 'error: certificate signing request "mallory" is already Denied\n'

    cluster.kubectl("apply", "-f", "-", stdin=_csr("server", "dev", ["server auth"]))
    cluster.kubectl("certificate", "approve", "server")
    _wait("failed", lambda: _condition_column(cluster, "server") == "Approved,Failed", 20)
    failed = cluster.json("get", "csr", "server")["status"]["conditions"][-1]
    assert (failed["type"], failed["reason"], failed["message"]) == (
        "Failed", "SignerValidationFailure", "invalid usage for client certificate: server auth")


PINNED = """
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: default}
spec:
  nodeName: NODE
  containers: [{name: c, image: "nginx:1.27"}]
  tolerations:
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute,
     tolerationSeconds: 2}
"""


def test_a_stopped_kubelet_makes_its_node_not_ready(cluster: Cluster) -> None:
    node = seed.node_name(NODES - 1)
    cluster.kubectl("apply", "-f", "-", stdin=PINNED.replace("NODE", node))
    cluster.kubectl("wait", "--for=condition=Ready", "pod/pinned", "--timeout=30s")
    cluster.kubectl("annotate", "node", node, "lab.watchcache.io/kubelet=stopped")

    def status() -> str:
        return cluster.kubectl("get", "node", node, "--no-headers").split()[1]

    _wait("NotReady", lambda: status() == "NotReady", 30)
    got = cluster.json("get", "node", node)
    conditions = {c["type"]: c for c in got["status"]["conditions"]}
    assert {c["status"] for c in conditions.values()} == {"Unknown"}
    assert conditions["Ready"]["reason"] == "NodeStatusUnknown"
    assert conditions["Ready"]["message"] == "Kubelet stopped posting node status."
    _wait("tainted", lambda: len(cluster.json("get", "node", node)["spec"].get("taints", [])) == 2)
    taints = cluster.json("get", "node", node)["spec"]["taints"]
    assert {(t["key"], t["effect"]) for t in taints} == {
        ("node.kubernetes.io/unreachable", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute")}  # fmt: skip
    _wait("the pod evicted", lambda: "deletionTimestamp" in cluster.json(
        "get", "pod", "pinned")["metadata"], 20)  # fmt: skip
    pod = cluster.json("get", "pod", "pinned")
    by_type = {c["type"]: c for c in pod["status"]["conditions"]}
    assert by_type["Ready"]["status"] == "False"
    assert by_type["DisruptionTarget"]["reason"] == "DeletionByTaintManager"
    _wait("the events", lambda: {"NodeNotReady", "TaintManagerEviction"} <= set(
        cluster.kubectl("get", "events", "-o", "jsonpath={.items[*].reason}").split()))
    # the same Events through events.k8s.io/v1, as kube-controller-manager's are seen there
    listed = cluster.json("get", "events.v1.events.k8s.io")["items"]
    (node_event,) = [e for e in listed if e["reason"] == "NodeNotReady"
                     and e["regarding"]["kind"] == "Node"]  # fmt: skip
    assert node_event["apiVersion"] == "events.k8s.io/v1"
    assert node_event["regarding"]["name"] == node
    assert node_event["note"] == f"Node {node} status is now: NodeNotReady"
    assert node_event["reportingController"] == "node-controller"
    assert node_event["deprecatedSource"] == {"component": "node-controller"}

    cluster.kubectl("annotate", "node", node, "lab.watchcache.io/kubelet-")
    _wait("Ready again", lambda: status() == "Ready", 30)
    _wait("untainted", lambda: not cluster.json("get", "node", node)["spec"].get("taints"))
    _wait("the evicted pod gone", lambda: cluster.run("get", "pod", "pinned").returncode != 0)


def test_every_node_not_ready_stops_the_evictions(cluster: Cluster) -> None:
    """Every zone fully disrupted (all kubelets stopped): the node lifecycle controller
    blames its own network, not the nodes — NoSchedule taints, but no NoExecute taint
    stays and no pod is evicted, even one that tolerates unreachable for 2 s only."""
    node = seed.node_name(0)
    cluster.kubectl("apply", "-f", "-", stdin=PINNED.replace("NODE", node)
                    .replace("name: pinned", "name: patient"))  # fmt: skip
    cluster.kubectl("wait", "--for=condition=Ready", "pod/patient", "--timeout=30s")
    cluster.kubectl("annotate", "nodes", "--all", "lab.watchcache.io/kubelet=stopped")

    def taints() -> set[tuple[str, str]]:
        return {(t["key"], t["effect"]) for n in cluster.json("get", "nodes")["items"]
                for t in n["spec"].get("taints") or []}  # fmt: skip

    try:
        _wait("every node NotReady, none tainted NoExecute", lambda: taints() == {
            ("node.kubernetes.io/unreachable", "NoSchedule")}, 40)  # fmt: skip
        time.sleep(4)  # four monitor passes: the controller keeps to it
        assert taints() == {("node.kubernetes.io/unreachable", "NoSchedule")}
        assert "deletionTimestamp" not in cluster.json("get", "pod", "patient")["metadata"]
    finally:
        cluster.kubectl("annotate", "nodes", "--all", "lab.watchcache.io/kubelet-")
    _wait("Ready and untainted again", lambda: not taints(), 40)
    cluster.kubectl("delete", "pod", "patient", "--wait=false")
