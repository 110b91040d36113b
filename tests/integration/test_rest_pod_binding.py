"""``pods/binding`` as kube-apiserver's BindingREST: a scheduler's POST sets
spec.nodeName and PodScheduled=True once; a bound or deleting pod is 409 Conflict."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import create, pod_body

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]


def binding(name: str, node: str, **meta: object) -> JSON:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, **meta},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip


async def _post(http: aiohttp.ClientSession, path: str, body: JSON) -> tuple[int, JSON]:
    async with http.post(path, json=body) as resp:
        data: JSON = await resp.json()
        return resp.status, data


async def test_binding_assigns_the_node_once(http: aiohttp.ClientSession, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    pod = await create(http, pods, pod_body("p1"))
    code, status = await _post(http, f"{pods}/p1/binding",
                               binding("p1", "node-a", annotations={"by": "test"}))  # fmt: skip
    assert code == 201, status
    assert status["kind"] == "Status" and status["status"] == "Success" and status["code"] == 201
    async with http.get(f"{pods}/p1") as resp:
        bound: JSON = await resp.json()
    assert bound["spec"]["nodeName"] == "node-a"
    assert bound["metadata"]["annotations"] == {"by": "test"}
    assert int(bound["metadata"]["resourceVersion"]) > int(pod["metadata"]["resourceVersion"])
    scheduled = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled and scheduled[0]["status"] == "True"

    code, status = await _post(http, f"{pods}/p1/binding", binding("p1", "node-b"))
    assert code == 409 and status["reason"] == "Conflict"
    assert status["message"] == ('Operation cannot be fulfilled on pods/binding "p1": '
                                 'pod p1 is already assigned to node "node-a"')  # fmt: skip
    assert status["details"] == {"name": "p1", "kind": "pods/binding"}


async def test_binding_errors(http: aiohttp.ClientSession, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await create(http, pods, pod_body("p2"))
    code, status = await _post(http, f"{pods}/p2/binding", binding("other", "node-a"))
    assert code == 400 and status["message"] == "name in URL does not match name in Binding object"
    code, status = await _post(http, f"{pods}/absent/binding", binding("absent", "node-a"))
    assert code == 404 and status["message"] == 'pods "absent" not found'
    code, status = await _post(http, f"{pods}/p2/binding",
                               binding("p2", "node-a", uid="not-the-uid"))  # fmt: skip
    assert code == 409 and "Precondition failed: UID in precondition" in status["message"]
    async with http.get(f"/api/v1/namespaces/{namespace}/pods/p2/binding") as resp:
        assert resp.status == 405


async def test_discovery_lists_pods_binding(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1") as resp:
        found = {r["name"]: r for r in (await resp.json())["resources"]}
    assert found["pods/binding"]["verbs"] == ["create"]
    assert found["pods/binding"]["kind"] == "Binding"


async def test_binding_in_protobuf(http: aiohttp.ClientSession, namespace: str) -> None:
    """client-go's scheduler posts its Binding as protobuf (the body decoded like any
    typed body of a one-kind endpoint); the answer is the same 201 Success."""
    from storage.protobuf.serializer import get_serializer

    pods = f"/api/v1/namespaces/{namespace}/pods"
    await create(http, pods, pod_body("pb"))
    body = get_serializer().encode(binding("pb", "node-pb"))
    headers = {"Content-Type": "application/vnd.kubernetes.protobuf"}
    async with http.post(f"{pods}/pb/binding", data=body, headers=headers) as resp:
        assert resp.status == 201, await resp.read()
    async with http.get(f"{pods}/pb") as resp:
        assert (await resp.json())["spec"]["nodeName"] == "node-pb"
