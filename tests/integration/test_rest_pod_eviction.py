"""``pods/eviction`` as kube-apiserver's EvictionREST: a delete guarded by the pod's
PodDisruptionBudget, whose status the server decrements itself (the budget's status is
written here as the disruption controller would)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import create, denying_policy, pod_body

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


def eviction(name: str, **delete_options: object) -> JSON:
    body: JSON = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


async def _call(http: aiohttp.ClientSession, method: str, path: str,
                body: JSON | None = None) -> tuple[int, JSON]:  # fmt: skip
    async with http.request(method, path, json=body) as resp:
        data: JSON = await resp.json()
        return resp.status, data


async def running_pod(http: aiohttp.ClientSession, namespace: str, name: str, *,
                      ready: bool = True, app: str = "web") -> JSON:  # fmt: skip
    """A pod as a kubelet left it: Running, Ready or not."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    pod = await create(http, pods, pod_body(name, labels={"app": app}, node="node-a"))
    pod["status"] = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}  # fmt: skip
    code, pod = await _call(http, "PUT", f"{pods}/{name}/status", pod)
    assert code == 200, pod
    return pod


async def budget(http: aiohttp.ClientSession, namespace: str, name: str, *,
                 allowed: int, healthy: int = 2, desired: int = 1, observed: int = 1,
                 app: str = "web", **spec: object) -> JSON:  # fmt: skip
    """A PodDisruptionBudget over ``app=web`` with the status a controller wrote."""
    pdbs = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
    pdb = await create(http, pdbs, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
        "spec": {"minAvailable": desired, "selector": {"matchLabels": {"app": app}}, **spec}})
    assert pdb["status"] == {"currentHealthy": 0, "desiredHealthy": 0,
                             "disruptionsAllowed": 0, "expectedPods": 0}  # created without one
    pdb["status"] = {"observedGeneration": observed, "disruptionsAllowed": allowed,
                     "currentHealthy": healthy, "desiredHealthy": desired,
                     "expectedPods": healthy}  # fmt: skip
    code, pdb = await _call(http, "PUT", f"{pdbs}/{name}/status", pdb)
    assert code == 200, pdb
    return pdb


async def test_a_budget_with_room_is_decremented_and_the_pod_deleted(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await running_pod(http, namespace, "web-1")
    await budget(http, namespace, "web", allowed=1)
    code, status = await _call(http, "POST", f"{pods}/web-1/eviction", eviction("web-1"))
    assert code == 201, status
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                      "status": "Success", "code": 201}  # fmt: skip
    code, _ = await _call(http, "GET", f"{pods}/web-1")
    assert code == 404
    code, pdb = await _call(http, "GET",
                            f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web")
    assert pdb["status"]["disruptionsAllowed"] == 0
    assert set(pdb["status"]["disruptedPods"]) == {"web-1"}
    (condition,) = pdb["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed", "False", "InsufficientPods")  # fmt: skip


async def test_no_disruption_left_is_429_with_the_budget_cause(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await running_pod(http, namespace, "web-1")
    await budget(http, namespace, "web", allowed=0, healthy=1, desired=1)
    async with http.post(f"{pods}/web-1/eviction", json=eviction("web-1")) as resp:
        status: JSON = await resp.json()
        assert resp.status == 429 and "Retry-After" not in resp.headers
    assert status == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": TOO_MANY, "reason": "TooManyRequests",
        "details": {"causes": [{"reason": "DisruptionBudget", "message":
                                "The disruption budget web needs 1 healthy pods and has 1 "
                                "currently"}]},
        "code": 429}  # fmt: skip
    code, _ = await _call(http, "GET", f"{pods}/web-1")
    assert code == 200


async def test_an_unobserved_budget_is_429_retry_after_10(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await running_pod(http, namespace, "web-1")
    await budget(http, namespace, "web", allowed=5, observed=0)
    async with http.post(f"{pods}/web-1/eviction", json=eviction("web-1")) as resp:
        status: JSON = await resp.json()
        assert resp.status == 429 and resp.headers["Retry-After"] == "10"
    assert status["details"] == {"causes": [{"reason": "DisruptionBudget", "message":
                                             "The disruption budget web is still being "
                                             "processed by the server."}],
                                 "retryAfterSeconds": 10}  # fmt: skip


async def test_dry_run_evicts_nothing(http: aiohttp.ClientSession, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await running_pod(http, namespace, "web-1")
    pdb = await budget(http, namespace, "web", allowed=1)
    for path, body in ((f"{pods}/web-1/eviction?dryRun=All", eviction("web-1")),
                       (f"{pods}/web-1/eviction", eviction("web-1", dryRun=["All"]))):
        code, status = await _call(http, "POST", path, body)
        assert code == 201, status
    code, _ = await _call(http, "GET", f"{pods}/web-1")
    assert code == 200
    code, after = await _call(http, "GET",
                              f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web")
    assert after["metadata"]["resourceVersion"] == pdb["metadata"]["resourceVersion"]


async def test_pods_the_budget_does_not_count(http: aiohttp.ClientSession, namespace: str) -> None:
    """A pending pod needs no budget; an unready one goes while the budget is met (or
    always, with AlwaysAllow) without using a disruption."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await create(http, pods, pod_body("pending", labels={"app": "web"}))
    await running_pod(http, namespace, "unready", ready=False)
    await running_pod(http, namespace, "other", ready=False, app="db")
    await budget(http, namespace, "web", allowed=0, healthy=1, desired=1)
    await budget(http, namespace, "db", allowed=0, healthy=0, desired=1, app="db",
                 unhealthyPodEvictionPolicy="AlwaysAllow")  # fmt: skip
    for name in ("pending", "unready", "other"):
        code, status = await _call(http, "POST", f"{pods}/{name}/eviction", eviction(name))
        assert code == 201, (name, status)
    code, pdb = await _call(http, "GET",
                            f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web")
    assert "disruptedPods" not in pdb["status"]


async def test_eviction_errors(http: aiohttp.ClientSession, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    pod = await running_pod(http, namespace, "web-1")
    code, status = await _call(http, "POST", f"{pods}/web-1/eviction", eviction("other"))
    assert code == 400 and status["message"] == "name in URL does not match name in Eviction object"
    code, status = await _call(http, "POST", f"{pods}/absent/eviction", eviction("absent"))
    assert code == 404 and status["message"] == 'pods "absent" not found'
    code, status = await _call(http, "POST", f"{pods}/web-1/eviction",
                               eviction("web-1", preconditions={"uid": "not-the-uid"}))
    assert code == 409 and status["message"] == (
        'Operation cannot be fulfilled on Pod "web-1": the UID in the precondition '
        f"(not-the-uid) does not match the UID in record ({pod['metadata']['uid']}). The "
        "object might have been deleted and then recreated")  # fmt: skip
    await budget(http, namespace, "one", allowed=1)
    await budget(http, namespace, "two", allowed=1)
    code, status = await _call(http, "POST", f"{pods}/web-1/eviction", eviction("web-1"))
    assert code == 500 and status["message"] == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource "
        "does not support.")  # fmt: skip


async def test_discovery_lists_pods_eviction(http: aiohttp.ClientSession) -> None:
    """kubectl drain evicts only where discovery lists pods/eviction with its group and
    version (CheckEvictionSupport); else it deletes."""
    async with http.get("/api/v1") as resp:
        found = {r["name"]: r for r in (await resp.json())["resources"]}
    assert found["pods/eviction"] == {"name": "pods/eviction", "singularName": "",
                                      "namespaced": True, "group": "policy", "version": "v1",
                                      "kind": "Eviction", "verbs": ["create"]}  # fmt: skip


async def test_eviction_in_protobuf(http: aiohttp.ClientSession, namespace: str) -> None:
    """client-go's typed clients (the descheduler, the cluster autoscaler) post their
    Eviction as protobuf; its deleteOptions come through."""
    from storage.protobuf.serializer import get_serializer

    pods = f"/api/v1/namespaces/{namespace}/pods"
    pod = await running_pod(http, namespace, "web-1")
    body = get_serializer().encode(eviction("web-1", preconditions={"uid": "not-the-uid"}))
    headers = {"Content-Type": "application/vnd.kubernetes.protobuf"}
    async with http.post(f"{pods}/web-1/eviction", data=body, headers=headers) as resp:
        assert resp.status == 409, await resp.read()
    body = get_serializer().encode(eviction("web-1", preconditions={"uid": pod["metadata"]["uid"]}))
    async with http.post(f"{pods}/web-1/eviction", data=body, headers=headers) as resp:
        assert resp.status == 201, await resp.read()
    code, _ = await _call(http, "GET", f"{pods}/web-1")
    assert code == 404


async def test_an_eviction_is_admitted(http: aiohttp.ClientSession, namespace: str) -> None:
    """A CREATE of pods/eviction goes through admission (with the Eviction as its
    object), as upstream's: a ValidatingAdmissionPolicy on it can pause evictions."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await running_pod(http, namespace, "web-1")
    async with denying_policy(http, namespace, "pods/eviction", "object.kind != 'Eviction'",
                              "evictions are paused") as name:  # fmt: skip
        for _ in range(100):  # the policy is in force once the server has seen it
            code, status = await _call(http, "POST", f"{pods}/web-1/eviction?dryRun=All",
                                       eviction("web-1"))  # fmt: skip
            if code != 201:
                break
            await asyncio.sleep(0.1)
        assert (code, status["reason"]) == (422, "Invalid"), status  # no reason set: Invalid
        assert status["message"] == (
            f"pods \"web-1\" is forbidden: ValidatingAdmissionPolicy '{name}' with binding "
            f"'{name}' denied request: evictions are paused")  # fmt: skip
