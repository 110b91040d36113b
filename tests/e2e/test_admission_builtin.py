"""The built-in admission plugins end to end (kubectl and the Python client, cached and
uncached): ResourceQuota, the plugin flags. Expected texts are kube-apiserver's."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import KUBECTL
from tests.integration.conftest import ServerProcess

pytestmark = pytest.mark.etcd


@pytest.fixture(scope="module")
def core(e2e_server: ServerProcess) -> Iterator[client.CoreV1Api]:
    with client.ApiClient(client.Configuration(host=e2e_server.url)) as api_client:
        yield client.CoreV1Api(api_client)


def _pod(name: str, resources: Any = None) -> Any:
    return client.V1Pod(metadata=client.V1ObjectMeta(name=name), spec=client.V1PodSpec(
        containers=[client.V1Container(name=name, image="busybox", resources=resources)]))


def _forbidden(call: Any, *args: Any) -> str:
    with pytest.raises(ApiException) as caught:
        call(*args)
    assert caught.value.status == 403
    return str(json.loads(caught.value.body or "{}")["message"])


def test_resource_quota(core: client.CoreV1Api, kubeconfig: Path) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="quota")))
    for name, hard in (("q1", {"pods": "1", "count/secrets": "1"}),
                       ("q2", {"requests.cpu": "1", "limits.memory": "1Gi"})):
        core.create_namespaced_resource_quota("quota", client.V1ResourceQuota(
            metadata=client.V1ObjectMeta(name=name), spec=client.V1ResourceQuotaSpec(hard=hard)))
    fresh: Any = core.read_namespaced_resource_quota("q1", "quota")
    assert (fresh.status.hard, fresh.status.used) == (
        {"pods": "1", "count/secrets": "1"}, {"pods": "0", "count/secrets": "0"})
    assert _forbidden(core.create_namespaced_pod, "quota", _pod("p1")) == (
        'pods "p1" is forbidden: failed quota: q2: must specify limits.memory for: p1; '
        "requests.cpu for: p1")
    sized = {"requests": {"cpu": "500m"}, "limits": {"memory": "512Mi"}}
    core.create_namespaced_pod("quota", _pod("p1", sized))
    assert _forbidden(core.create_namespaced_pod, "quota", _pod("p2", sized)) == (
        'pods "p2" is forbidden: exceeded quota: q1, requested: pods=1, used: pods=1, '
        "limited: pods=1")
    out = subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", "create", "secret",
                          "generic", "s1", "-n", "quota"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    out = subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", "create", "secret",
                          "generic", "s2", "-n", "quota"], capture_output=True, text=True,
                         timeout=60)
    assert ('secrets "s2" is forbidden: exceeded quota: q1, requested: count/secrets=1, used: '
            "count/secrets=1, limited: count/secrets=1") in out.stderr
    q2: Any = core.read_namespaced_resource_quota("q2", "quota")
    assert q2.status.used == {"limits.memory": "512Mi", "requests.cpu": "500m"}
    assert q2.status.hard == {"limits.memory": "1Gi", "requests.cpu": "1"}
    core.delete_namespaced_pod("p1", "quota")  # usage is counted again at the next write
    core.create_namespaced_pod("quota", _pod("p3", sized), dry_run="All")


def test_resource_quota_with_terminating_and_best_effort_scopes(core: client.CoreV1Api) -> None:
    """Upstream's conformance specs 'should verify ResourceQuota with terminating
    scopes' and '... with best effort scope': a scoped quota counts only the pods its
    scopes select (the quota controller and the admission plugin alike)."""
    hard = {"pods": "5", "requests.memory": "1Gi", "limits.memory": "1Gi"}
    quotas = {"scopes-t": (("terminating", "Terminating", hard),
                           ("not-terminating", "NotTerminating", hard)),
              "scopes-be": (("best-effort", "BestEffort", {"pods": "5"}),
                            ("not-best-effort", "NotBestEffort", {"pods": "5"}))}  # fmt: skip
    for namespace, specs in quotas.items():
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        for name, scope, limits in specs:
            spec = client.V1ResourceQuotaSpec(hard=limits, scopes=[scope])
            core.create_namespaced_resource_quota(namespace, client.V1ResourceQuota(
                metadata=client.V1ObjectMeta(name=name), spec=spec))  # fmt: skip

    def used(namespace: str, name: str) -> dict[str, str]:
        quota: Any = core.read_namespaced_resource_quota(name, namespace)
        return dict(quota.status.used)

    sized = {"requests": {"memory": "200Mi"}, "limits": {"memory": "400Mi"}}
    core.create_namespaced_pod("scopes-t", _pod("long-running", sized))
    counted = {"pods": "1", "requests.memory": "200Mi", "limits.memory": "400Mi"}
    assert used("scopes-t", "not-terminating") == counted
    assert used("scopes-t", "terminating") == {"pods": "0", "requests.memory": "0",
                                               "limits.memory": "0"}  # fmt: skip
    deadline = _pod("with-deadline", sized)
    deadline.spec.active_deadline_seconds = 3600
    core.create_namespaced_pod("scopes-t", deadline)
    assert used("scopes-t", "terminating") == counted
    core.create_namespaced_pod("scopes-be", _pod("best-effort-pod"))
    assert (used("scopes-be", "best-effort"), used("scopes-be", "not-best-effort")) == (
        {"pods": "1"}, {"pods": "0"})
    core.create_namespaced_pod("scopes-be", _pod("burstable-pod", sized))
    assert used("scopes-be", "not-best-effort") == {"pods": "1"}


def test_resource_quota_captures_a_pods_extended_resources(core: client.CoreV1Api) -> None:
    """Upstream's conformance spec 'should create a ResourceQuota and capture the life
    of a pod': an extended resource counts as ``requests.<name>``."""
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="dongles")))
    hard = {"requests.example.com/dongle": "3", "requests.ephemeral-storage": "50Gi"}
    core.create_namespaced_resource_quota("dongles", client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="q"), spec=client.V1ResourceQuotaSpec(hard=hard)))
    sized = {"requests": {"example.com/dongle": "2", "ephemeral-storage": "30Gi"},
             "limits": {"example.com/dongle": "2"}}  # fmt: skip
    core.create_namespaced_pod("dongles", _pod("first", sized))
    quota: Any = core.read_namespaced_resource_quota("q", "dongles")
    assert quota.status.used == {"requests.example.com/dongle": "2",
                                 "requests.ephemeral-storage": "30Gi"}  # fmt: skip
    assert _forbidden(core.create_namespaced_pod, "dongles", _pod("second", sized)) == (
        'pods "second" is forbidden: exceeded quota: q, requested: '
        "requests.ephemeral-storage=30Gi,requests.example.com/dongle=2, used: "
        "requests.ephemeral-storage=30Gi,requests.example.com/dongle=2, limited: "
        "requests.ephemeral-storage=50Gi,requests.example.com/dongle=3"
    )


def test_service_account_tolerations_priority(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="pods")))
    core.create_namespaced_service_account("pods", client.V1ServiceAccount(
        metadata=client.V1ObjectMeta(name="default")))
    pod: Any = core.create_namespaced_pod("pods", _pod("a"))
    spec = pod.spec
    assert (spec.service_account_name, spec.priority, spec.preemption_policy) == (
        "default", 0, "PreemptLowerPriority")
    [volume] = spec.volumes
    assert volume.name.startswith("kube-api-access-") and len(volume.name) == 21
    assert [s.service_account_token.path for s in volume.projected.sources
            if s.service_account_token] == ["token"]
    [mount] = spec.containers[0].volume_mounts
    assert (mount.name, mount.mount_path, mount.read_only) == (
        volume.name, "/var/run/secrets/kubernetes.io/serviceaccount", True)
    assert [(t.key, t.effect, t.toleration_seconds) for t in spec.tolerations] == [
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300)]
    missing = _pod("b")
    missing.spec.service_account_name = "robot"
    assert _forbidden(core.create_namespaced_pod, "pods", missing) == (
        'pods "b" is forbidden: error looking up service account pods/robot: serviceaccount '
        '"robot" not found')
    unknown = _pod("c")
    unknown.spec.priority_class_name = "nosuch"
    assert _forbidden(core.create_namespaced_pod, "pods", unknown) == (
        'pods "c" is forbidden: no PriorityClass with name nosuch was found')
    critical = _pod("d")
    critical.spec.priority_class_name = "system-node-critical"
    created: Any = core.create_namespaced_pod("pods", critical)
    assert created.spec.priority == 2000001000
    forced = _pod("e")
    forced.spec.priority = 5
    assert _forbidden(core.create_namespaced_pod, "pods", forced) == (
        'pods "e" is forbidden: the integer value of priority (5) must not be provided in pod '
        "spec; priority admission controller computed 0 from the given PriorityClass name")


def test_limit_ranger(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="limits")))
    core.create_namespaced_limit_range("limits", client.V1LimitRange(
        metadata=client.V1ObjectMeta(name="lr"), spec=client.V1LimitRangeSpec(limits=[
            client.V1LimitRangeItem(type="Container",
                                    default={"cpu": "500m", "memory": "256Mi"},
                                    default_request={"cpu": "100m"}, max={"cpu": "1"},
                                    min={"memory": "64Mi"})])))
    pod: Any = core.create_namespaced_pod("limits", _pod("a"))
    assert pod.metadata.annotations["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container a; cpu, memory limit for "
        "container a")
    resources = pod.spec.containers[0].resources
    assert (resources.requests, resources.limits) == (
        {"cpu": "100m", "memory": "256Mi"}, {"cpu": "500m", "memory": "256Mi"})
    assert pod.status.qos_class == "Burstable"  # of the resources LimitRanger set
    both = {"limits": {"cpu": "2"}, "requests": {"memory": "10Mi"}}
    assert _forbidden(core.create_namespaced_pod, "limits", _pod("b", both)) == (
        'pods "b" is forbidden: [minimum memory usage per Container is 64Mi, but request is '
        "10Mi, maximum cpu usage per Container is 1, but limit is 2]")
