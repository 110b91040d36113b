"""The simulated cluster (lab/sim) against a lab-like server, through the real kubectl:
node Leases renew, `kubectl run` ends Running on a node, a Deployment rolls out, is
updated and scaled, Jobs complete or fail, every controller shows under its own user
agent, a pod is deleted gracefully, the garbage collector honours each propagation policy,
a namespace terminates in the background, and a Kopf operator runs unchanged."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import re
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
from proxy.server.certs import new_ca
from tests.e2e.conftest import run_kubectl
from tests.e2e.conftest import wait_until as _wait
from tests.integration.conftest import JSON, KUBECTL, ServerProcess, start_server

pytestmark = pytest.mark.etcd

NODES = 3


@dataclass
class Cluster:
    server: ServerProcess
    kubeconfig: Path
    sim: subprocess.Popen[bytes]
    root_ca: str

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 60) -> str:
        r = run_kubectl(self.kubeconfig, *args, stdin=stdin, timeout=timeout)
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
    (d / "ca.crt").write_bytes(new_ca("sim-root-ca").cert_pem)
    with start_server(etcd.endpoints, None, "--lifecycle-controllers=true") as server:
        plan = seed.Plan(pods=12, nodes=NODES, namespaces=2, configmaps=1)
        result = asyncio.run(seed.seed_with_progress(server.url, plan, quiet=True))
        assert result.ok, result.errors
        log = open(d / "sim.log", "wb")  # noqa: SIM115 - the child's, closed below
        sim = subprocess.Popen(cli_command("sim", "--server", server.url, "--renew-seconds",
                                           "1", "--churn", "2", "--root-ca-file",
                                           str(d / "ca.crt"), "-v"),
                               stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            yield Cluster(server, write_kubeconfig(d / "kubeconfig", server.url), sim,
                          (d / "ca.crt").read_text())  # fmt: skip
        finally:
            stop_process(sim, 20)
            log.close()


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


def _job_pods(cluster: Cluster, job: str) -> list[JSON]:
    items: list[JSON] = cluster.json("get", "pods", "-l", f"batch.kubernetes.io/job-name={job}")[
        "items"]  # fmt: skip
    return items


def test_kubectl_create_job_completes(cluster: Cluster) -> None:
    cluster.kubectl("create", "job", "j", "--image=busybox", "--", "true")
    cluster.kubectl("wait", "--for=condition=complete", "job/j", "--timeout=30s", timeout=40)
    header, row = cluster.kubectl("get", "job", "j").splitlines()
    assert header.split()[:3] == ["NAME", "STATUS", "COMPLETIONS"]
    assert row.split()[:3] == ["j", "Complete", "1/1"]
    job = cluster.json("get", "job", "j")
    status = job["status"]
    assert status["succeeded"] == 1 and "active" not in status and "failed" not in status
    assert status["startTime"] <= status["completionTime"]
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached")]  # fmt: skip
    (pod,) = _job_pods(cluster, "j")
    ref = pod["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"]) == ("Job", "j", job["metadata"]["uid"])
    assert ref["controller"] is ref["blockOwnerDeletion"] is True
    assert pod["metadata"]["labels"]["controller-uid"] == job["metadata"]["uid"]
    assert pod["status"]["phase"] == "Succeeded"
    (container,) = pod["status"]["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 0
    assert container["state"]["terminated"]["reason"] == "Completed"
    cluster.kubectl("delete", "job", "j")  # background: the collector takes its pod
    _wait("the job's pod collected", lambda: not _job_pods(cluster, "j"))


PARALLEL_JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: batch3, namespace: default}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox, command: ["true"]}]
"""


def test_job_with_completions_and_parallelism(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=PARALLEL_JOB)
    most_active = 0

    def complete() -> bool:
        nonlocal most_active
        status = cluster.json("get", "job", "batch3").get("status") or {}
        most_active = max(most_active, int(status.get("active") or 0))
        return any(c["type"] == "Complete" for c in status.get("conditions") or [])

    _wait("batch3 complete", complete)
    status = cluster.json("get", "job", "batch3")["status"]
    assert status["succeeded"] == 3 and most_active <= 2
    pods = _job_pods(cluster, "batch3")
    assert [p["status"]["phase"] for p in pods] == ["Succeeded"] * 3
    assert "3/3" in cluster.kubectl("get", "job", "batch3")


FAILING_JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: doomed, namespace: default}
spec:
  backoffLimit: 1
  template:
    metadata: {annotations: {lab.watchcache.io/exit-code: "1"}}
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox, command: ["false"]}]
"""


def test_failing_job_hits_its_backoff_limit(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=FAILING_JOB)
    cluster.kubectl("wait", "--for=condition=failed", "job/doomed", "--timeout=30s",
                    timeout=40)  # fmt: skip
    status = cluster.json("get", "job", "doomed")["status"]
    assert status["failed"] == 2 and "succeeded" not in status and "active" not in status
    assert [(c["type"], c["reason"]) for c in status["conditions"]] == [
        ("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
    assert "completionTime" not in status
    pods = _job_pods(cluster, "doomed")
    assert [p["status"]["phase"] for p in pods] == ["Failed"] * 2
    terminated = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (1, "Error")
    assert cluster.kubectl("get", "job", "doomed").splitlines()[1].split()[1] == "Failed"


def test_a_suspended_job_runs_once_resumed(cluster: Cluster) -> None:
    job = PARALLEL_JOB.replace("batch3", "later").replace("completions: 3", "completions: 1")
    cluster.kubectl("apply", "-f", "-", stdin=job.replace("spec:\n  completions",
                                                          "spec:\n  suspend: true\n  completions"))
    _wait("the Suspended condition", lambda: any(
        c["type"] == "Suspended" and c["status"] == "True"
        for c in cluster.json("get", "job", "later").get("status", {}).get("conditions", [])))
    assert not _job_pods(cluster, "later")
    cluster.kubectl("patch", "job", "later", "--type=merge", "-p", '{"spec": {"suspend": false}}')
    cluster.kubectl("wait", "--for=condition=complete", "job/later", "--timeout=30s", timeout=40)
    conditions = cluster.json("get", "job", "later")["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [
        ("Suspended", "False", "JobResumed"), ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached")]  # fmt: skip


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


def _events(cluster: Cluster, *selector: str) -> list[JSON]:
    items: list[JSON] = cluster.json("get", "events", *selector)["items"]
    return items


def _reasons(events: list[JSON]) -> dict[str, JSON]:
    return {e["reason"]: e for e in events}


def test_kubectl_describe_pod_shows_the_scheduler_and_kubelet_events(cluster: Cluster) -> None:
    cluster.kubectl("run", "ev", "--image=nginx:1.27")
    cluster.kubectl("wait", "--for=condition=Ready", "pod/ev", "--timeout=30s", timeout=40)
    pod = cluster.json("get", "pod", "ev")
    node = pod["spec"]["nodeName"]
    wanted = {"Scheduled", "Pulling", "Pulled", "Created", "Started"}
    _wait("the pod's Events", lambda: wanted <= set(_reasons(
        _events(cluster, "--field-selector", "involvedObject.name=ev"))), 15)  # fmt: skip
    events = _reasons(_events(cluster, "--field-selector", "involvedObject.name=ev"))
    scheduled = events["Scheduled"]
    assert scheduled["message"] == f"Successfully assigned default/ev to {node}"
    assert scheduled["source"] == {"component": "default-scheduler"}
    assert scheduled["involvedObject"]["uid"] == pod["metadata"]["uid"]
    started = events["Started"]
    assert started["message"] == "Started container ev"
    assert started["source"] == {"component": "kubelet", "host": node}
    assert started["involvedObject"]["fieldPath"] == "spec.containers{ev}"
    assert events["Pulling"]["message"] == 'Pulling image "nginx:1.27"'
    assert events["Created"]["message"] == "Created container: ev"
    out = cluster.kubectl("describe", "pod", "ev")
    block = out.split("\nEvents:", 1)[1]
    assert re.search(r"Type\s+Reason\s+Age\s+From\s+Message", block), block
    assert re.search(rf"Normal\s+Scheduled\s+\S+\s+default-scheduler\s+Successfully "
                     rf"assigned default/ev to {node}", block), block  # fmt: skip
    # kubectl prefixes an Event's fieldPath (the kubelet's container events carry one)
    assert re.search(r"Normal\s+Started\s+\S+\s+kubelet\s+spec.containers\{ev\}: Started "
                     r"container ev", block), block  # fmt: skip
    # `kubectl get events` sorts nothing itself: every Event is one row of the table
    table = cluster.kubectl("get", "events", "--field-selector", "involvedObject.name=ev")
    assert table.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT",
                                             "MESSAGE"]  # fmt: skip
    assert "pod/ev" in table and "Started container ev" in table
    cluster.kubectl("delete", "pod", "ev", "--wait=false")
    _wait("the kubelet's Killing Event", lambda: "Killing" in _reasons(
        _events(cluster, "--field-selector", "involvedObject.name=ev")))  # fmt: skip
    killing = _reasons(_events(cluster, "--field-selector", "involvedObject.name=ev"))["Killing"]
    assert killing["message"] == "Stopping container ev"


def test_the_controllers_record_what_they_do(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=_deployment("recorded", 2))
    cluster.kubectl("rollout", "status", "deploy/recorded", "--timeout=60s", timeout=70)
    (rs,) = _names(cluster, "rs", "app=recorded")
    _wait("ScalingReplicaSet", lambda: "ScalingReplicaSet" in _reasons(
        _events(cluster, "--field-selector", "involvedObject.name=recorded")))  # fmt: skip
    scaling = _reasons(_events(cluster, "--field-selector", "involvedObject.name=recorded"))
    assert scaling["ScalingReplicaSet"]["message"] == f"Scaled up replica set {rs} from 0 to 2"
    assert scaling["ScalingReplicaSet"]["source"] == {"component": "deployment-controller"}
    pods = sorted(_names(cluster, "pods", "app=recorded"))
    _wait("SuccessfulCreate per pod", lambda: len(_events(
        cluster, "--field-selector", f"involvedObject.name={rs},reason=SuccessfulCreate")) == 2)
    created = _events(cluster, "--field-selector", f"involvedObject.name={rs}")
    assert sorted(e["message"] for e in created) == [f"Created pod: {p}" for p in pods]
    assert "Created pod: " in cluster.kubectl("describe", "rs", rs)
    cluster.kubectl("scale", "deploy/recorded", "--replicas=1")
    _wait("scaled down", lambda: any(e["message"] == f"Scaled down replica set {rs} from 2 to 1"
                                     for e in _events(cluster, "--field-selector",
                                                      "involvedObject.name=recorded")))
    _wait("SuccessfulDelete", lambda: "SuccessfulDelete" in _reasons(
        _events(cluster, "--field-selector", f"involvedObject.name={rs}")))  # fmt: skip
    cluster.kubectl("create", "job", "recorded-job", "--image=busybox", "--", "true")
    cluster.kubectl("wait", "--for=condition=complete", "job/recorded-job", "--timeout=30s",
                    timeout=40)  # fmt: skip
    _wait("Completed", lambda: "Completed" in _reasons(
        _events(cluster, "--field-selector", "involvedObject.name=recorded-job")))  # fmt: skip
    job_events = _reasons(_events(cluster, "--field-selector", "involvedObject.name=recorded-job"))
    assert job_events["Completed"]["message"] == "Job completed"
    assert job_events["SuccessfulCreate"]["source"] == {"component": "job-controller"}


CRASHING = """
apiVersion: v1
kind: Pod
metadata:
  name: crashing
  namespace: default
  annotations: {lab.watchcache.io/run-seconds: "0.3", lab.watchcache.io/exit-code: "1"}
spec:
  restartPolicy: Always
  containers: [{name: app, image: busybox}]
"""


def test_a_repeated_event_is_one_event_with_a_count(cluster: Cluster) -> None:
    """client-go's correlator: the same BackOff again is a PATCH of the Event's count and
    lastTimestamp, not a new Event; `describe` shows it as 'xN over'."""
    cluster.kubectl("apply", "-f", "-", stdin=CRASHING)

    def backoffs() -> list[JSON]:
        return _events(cluster, "--field-selector", "involvedObject.name=crashing,reason=BackOff")

    _wait("BackOff three times", lambda: sum(e.get("count", 1) for e in backoffs()) >= 3, 40)
    (backoff,) = backoffs()
    uid = cluster.json("get", "pod", "crashing")["metadata"]["uid"]
    assert backoff["type"] == "Warning" and backoff["count"] >= 3
    assert backoff["message"] == (f"Back-off restarting failed container app in pod "
                                  f"crashing_default({uid})")  # fmt: skip
    # whole seconds: three back-offs of a fast crash loop may fall in one
    assert backoff["firstTimestamp"] <= backoff["lastTimestamp"]
    assert "Back-off restarting failed container app" in cluster.kubectl(
        "describe", "pod", "crashing")  # fmt: skip
    assert " over " in cluster.kubectl("describe", "pod", "crashing").split("\nEvents:")[1]
    cluster.kubectl("delete", "pod", "crashing", "--wait=false")


def _seconds(timestamp: str) -> float:
    return dt.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").timestamp()


def _try_json(cluster: Cluster, *args: str) -> JSON | None:
    r = subprocess.run([str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), *args, "-o",
                        "json"], capture_output=True, text=True, timeout=30)  # fmt: skip
    return orjson.loads(r.stdout) if r.returncode == 0 else None


def test_a_new_namespace_gets_its_default_service_account_and_root_ca(cluster: Cluster) -> None:
    """The serviceaccounts controller and the root CA publisher, within a second of the
    namespace's creation; a deleted or altered object is put back."""
    # the simulation running (it starts with the module: it may still be listing)
    _wait("the sim's controllers synced", lambda: _try_json(
        cluster, "get", "cm", "kube-root-ca.crt", "-n", "kube-public") is not None, 60)
    cluster.kubectl("create", "namespace", "fresh")
    _wait("default ServiceAccount and kube-root-ca.crt", lambda: (
        _try_json(cluster, "get", "sa", "default", "-n", "fresh") is not None
        and _try_json(cluster, "get", "cm", "kube-root-ca.crt", "-n", "fresh") is not None),
        10)  # fmt: skip
    # within a second, by the server's clock (timestamps have whole seconds: a second
    # apart on the clock is up to two): kubectl's own runs would time the test machine
    born = _seconds(cluster.json("get", "namespace", "fresh")["metadata"]["creationTimestamp"])
    for kind, name in (("sa", "default"), ("cm", "kube-root-ca.crt")):
        stamp = cluster.json("get", kind, name, "-n", "fresh")["metadata"]["creationTimestamp"]
        assert _seconds(stamp) - born <= 2, (kind, stamp)
    cm = cluster.json("get", "cm", "kube-root-ca.crt", "-n", "fresh")
    assert cm["data"] == {"ca.crt": cluster.root_ca}
    assert cm["metadata"]["annotations"]["kubernetes.io/description"].startswith(
        "Contains a CA bundle that can be used to verify the kube-apiserver")  # fmt: skip
    # every namespace, the system ones and the seeded ones too
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert _try_json(cluster, "get", "sa", "default", "-n", ns) is not None, ns
        assert _try_json(cluster, "get", "cm", "kube-root-ca.crt", "-n", ns) is not None, ns
    cluster.kubectl("delete", "sa", "default", "-n", "fresh")
    _wait("default ServiceAccount back", lambda: _try_json(
        cluster, "get", "sa", "default", "-n", "fresh") is not None, 10)  # fmt: skip
    cluster.kubectl("patch", "cm", "kube-root-ca.crt", "-n", "fresh", "--type=merge", "-p",
                    '{"data": {"ca.crt": "tampered", "extra": "x"}}')  # fmt: skip
    _wait("kube-root-ca.crt restored", lambda: cluster.json(
        "get", "cm", "kube-root-ca.crt", "-n", "fresh")["data"] == {"ca.crt": cluster.root_ca},
        10)  # fmt: skip
    cluster.kubectl("delete", "namespace", "fresh", "--wait=false")


def test_node_conditions_read_as_the_kubelet_writes_them(cluster: Cluster) -> None:
    """The seeded nodes and every status the node agents post carry the kubelet's
    condition reasons and messages (pkg/kubelet/nodestatus/setters.go)."""
    node = seed.node_name(1)

    def posted() -> bool:  # the agent's first status, after the seeded one
        conditions = cluster.json("get", "node", node)["status"]["conditions"]
        return all(c["lastHeartbeatTime"] > seed.STARTED for c in conditions)

    _wait("the node agent's status", posted)
    conditions = {c["type"]: c for c in cluster.json("get", "node", node)["status"]["conditions"]}
    assert {t: (c["status"], c["reason"], c["message"]) for t, c in conditions.items()} == {
        "MemoryPressure": ("False", "KubeletHasSufficientMemory",
                           "kubelet has sufficient memory available"),
        "DiskPressure": ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        "PIDPressure": ("False", "KubeletHasSufficientPID",
                        "kubelet has sufficient PID available"),
        "Ready": ("True", "KubeletReady", "kubelet is posting ready status"),
    }  # fmt: skip
    described = cluster.kubectl("describe", "node", node)
    assert re.search(r"Ready\s+True\s+.+KubeletReady\s+kubelet is posting ready status",
                     described), described  # fmt: skip


def test_no_controllers_leaves_scheduling_and_controllers_to_a_real_control_plane(
    etcd: EtcdCluster, tmp_path: Path
) -> None:
    """``watchcache sim --no-controllers`` (what ``watchcache lab --no-controllers``
    runs beside a real kube-controller-manager and kube-scheduler): the kubelets renew
    and run the pods bound to their nodes; nothing schedules, reconciles a ReplicaSet or
    makes a namespace's default ServiceAccount."""
    with start_server(etcd.endpoints, None, "--lifecycle-controllers=true") as server:
        plan = seed.Plan(pods=0, nodes=1, namespaces=1, configmaps=0)
        assert asyncio.run(seed.seed_with_progress(server.url, plan, quiet=True)).ok
        log = open(tmp_path / "sim.log", "wb")  # noqa: SIM115 - the child's, closed below
        sim = subprocess.Popen(cli_command("sim", "--server", server.url, "--renew-seconds",
                                           "1", "--churn", "0", "--no-controllers"),
                               stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            cluster = Cluster(server, write_kubeconfig(tmp_path / "kubeconfig", server.url),
                              sim, "")  # fmt: skip
            node = seed.node_name(0)
            cluster.kubectl("run", "bound", "--image=nginx",
                            f"--overrides={{\"spec\": {{\"nodeName\": \"{node}\"}}}}")
            cluster.kubectl("run", "unbound", "--image=nginx")
            cluster.kubectl("create", "namespace", "plain")
            cluster.kubectl("wait", "--for=condition=Ready", "pod/bound", "--timeout=30s",
                            timeout=40)  # fmt: skip
            time.sleep(3)  # what a simulated scheduler or controller would have done by now
            assert not cluster.json("get", "pod", "unbound")["spec"].get("nodeName")
            assert cluster.json("get", "serviceaccounts", "-n", "plain")["items"] == []
        finally:
            stop_process(sim, 20)
            log.close()
