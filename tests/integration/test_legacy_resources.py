"""What /api/v1 and certificates.k8s.io serve besides stored kinds, as kube-apiserver
1.37: ``bindings`` (POST binds the pod the Binding names), ``componentstatuses`` (the
control plane's health, probed on each GET) and ``certificatesigningrequests/approval``
(only ``status.conditions`` change)."""

from __future__ import annotations

import asyncio

import aiohttp

from tests.integration.conftest import create, denying_policy, pod_body


async def test_discovery_lists_them(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1") as resp:
        resources = {r["name"]: r for r in (await resp.json())["resources"]}
    assert resources["bindings"]["verbs"] == ["create"] and resources["bindings"]["namespaced"]
    cs = resources["componentstatuses"]
    assert (cs["verbs"], cs["shortNames"], cs["namespaced"]) == (["get", "list"], ["cs"], False)
    async with http.get("/apis/certificates.k8s.io/v1") as resp:
        names = [r["name"] for r in (await resp.json())["resources"]]
    assert "certificatesigningrequests/approval" in names


async def test_a_binding_binds_the_pod_it_names(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("p"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"kind": "Node", "name": "node-1"}}  # fmt: skip
    status = await create(http, f"/api/v1/namespaces/{namespace}/bindings", binding)
    assert status["status"] == "Success"
    async with http.get(f"/api/v1/namespaces/{namespace}/pods/p") as resp:
        assert (await resp.json())["spec"]["nodeName"] == "node-1"
    async with http.get(f"/api/v1/namespaces/{namespace}/bindings") as resp:
        assert resp.status == 405


async def test_a_binding_is_admitted_as_the_pods_binding(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """The legacy ``bindings`` resource is the pods' binding storage: a CREATE of it goes
    through admission as one of ``pods/binding`` (a policy on that subresource holds)."""
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("p"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"kind": "Node", "name": "held"}}  # fmt: skip
    path = f"/api/v1/namespaces/{namespace}/bindings?dryRun=All"
    async with denying_policy(http, namespace, "pods/binding", "object.target.name != 'held'",
                              "node held"):  # fmt: skip
        for _ in range(100):  # the policy is in force once the server has seen it
            async with http.post(path, json=binding) as resp:
                code, status = resp.status, await resp.json()
            if code != 201:
                break
            await asyncio.sleep(0.1)
        assert code == 422 and "denied request: node held" in status["message"], status


async def test_component_statuses(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1/componentstatuses") as resp:
        listed = await resp.json()
    assert listed["kind"] == "ComponentStatusList"
    by_name = {i["metadata"]["name"]: i["conditions"][0] for i in listed["items"]}
    assert set(by_name) == {"controller-manager", "scheduler", "etcd-0"}
    assert by_name["etcd-0"] == {"type": "Healthy", "status": "True", "message": "ok"}
    async with http.get("/api/v1/componentstatuses/etcd-0") as resp:
        one = await resp.json()
    assert one["kind"] == "ComponentStatus" and one["metadata"]["name"] == "etcd-0"
    async with http.get("/api/v1/componentstatuses/nope") as resp:
        assert resp.status == 404
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    async with http.get("/api/v1/componentstatuses", headers={"Accept": table}) as resp:
        rendered = await resp.json()
    assert rendered["kind"] == "Table" and len(rendered["rows"]) == 3
    # get and list only: the other verbs have no route (405, as go-restful answers)
    async with http.post("/api/v1/componentstatuses", json={"kind": "ComponentStatus"}) as resp:
        assert resp.status == 405
    async with http.delete("/api/v1/componentstatuses/etcd-0") as resp:
        assert resp.status == 405


_CSR = ("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQlpUQ0J6d0lCQURBbU1TUXdJZ1lEVlFR"
        "RERCdDBaWE4wTFdOemNnPT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==")  # fmt: skip


async def test_approval_changes_only_the_conditions(http: aiohttp.ClientSession) -> None:
    base = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    body = {"metadata": {"name": "approve-me"}, "spec": {
        "request": _CSR, "signerName": "example.com/signer", "usages": ["digital signature"]}}
    async with http.post(base, json=body) as resp:
        created = await resp.json()
        if resp.status != 201:  # the request did not validate: the subresource is moot
            raise AssertionError(created)
    created["status"] = {"conditions": [{"type": "Approved", "reason": "Test",
                                         "message": "approved"}], "certificate": "eA=="}
    created["spec"]["signerName"] = "example.com/other"
    async with http.put(f"{base}/approve-me/approval", json=created) as resp:
        approved = await resp.json()
        assert resp.status == 200, approved
    [condition] = approved["status"]["conditions"]
    assert condition["type"] == "Approved" and condition["status"] == "True"
    assert condition["lastUpdateTime"] and condition["lastTransitionTime"]
    assert "certificate" not in approved["status"]  # status.certificate is /status's
    assert approved["spec"]["signerName"] == "example.com/signer"  # the spec is kept
