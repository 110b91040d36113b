"""APIService objects through the REST layer, as kube-apiserver serves them: stored as
JSON at ``/registry/apiregistration.k8s.io/apiservices/<name>`` (as a v1.32
kube-apiserver stores them), cluster-scoped, ``/status`` apart from the spec, the port
defaulted, validation in one 422, a Table with Service/Available, and the local
APIServices registered at start."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from etcdclient import EtcdClient
from tests.integration.conftest import ServerProcess, create

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
BASE = "/apis/apiregistration.k8s.io/v1/apiservices"


def _remote(name: str = "v1alpha1.apiservices-it.example.com") -> JSON:
    version, _, group = name.partition(".")
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": 1000,
                     "versionPriority": 15, "insecureSkipTLSVerify": True,
                     "service": {"namespace": "default", "name": "nowhere"}},
            "status": {"conditions": [{"type": "Available", "status": "True"}]}}  # fmt: skip


async def _put(http: aiohttp.ClientSession, path: str, versionPriority: int, status: JSON) -> JSON:
    """GET, change, PUT; again on 409 (the availability controller writes the status
    too, as kube-aggregator's: a client retries its conflicts)."""
    while True:
        async with http.get(path) as resp:
            current = await resp.json()
        current["spec"]["versionPriority"] = versionPriority
        current["status"] = status
        async with http.put(path, json=current) as resp:
            if resp.status != 409:
                body: JSON = await resp.json()
                assert resp.status == 200, body
                return body


async def test_crud_key_status_and_defaults(server: ServerProcess) -> None:
    async with aiohttp.ClientSession(base_url=server.url) as http:
        created = await create(http, BASE, _remote())
        name = created["metadata"]["name"]
        assert created["spec"]["service"]["port"] == 443  # defaulted, as upstream
        assert "status" not in created  # PrepareForCreate drops the client's status
        key = f"{server.prefix}/apiregistration.k8s.io/apiservices/{name}"
        async with EtcdClient(list(server.etcd_servers)) as client:
            stored = await client.get(key.encode())
        assert stored.kv is not None and stored.kv.value.startswith(b"{")  # JSON, as upstream
        # the main resource ignores status; /status ignores spec
        by_hand = {"conditions": [{"type": "Available", "status": "False", "reason": "ByHand",
                                   "message": "m"}]}  # fmt: skip
        updated = await _put(http, f"{BASE}/{name}", versionPriority=16, status=by_hand)
        assert updated["spec"]["versionPriority"] == 16
        assert by_hand["conditions"][0] not in updated.get("status", {}).get("conditions", [])
        status = await _put(http, f"{BASE}/{name}/status", versionPriority=99, status=by_hand)
        assert status["spec"]["versionPriority"] == 16
        assert status["status"] == by_hand
        async with http.delete(f"{BASE}/{name}") as resp:
            assert resp.status == 200


async def test_validation_in_one_422(server: ServerProcess) -> None:
    bad = _remote("v1.apiservices-it.example.com")
    bad["metadata"]["name"] = "v1.apiservices-it-bad"
    bad["spec"]["caBundle"] = "aGVsbG8="
    async with (
        aiohttp.ClientSession(base_url=server.url) as http,
        http.post(BASE, json=bad) as resp,
    ):
        body = await resp.json()
    assert resp.status == 422
    assert body["message"] == (
        'APIService.apiregistration.k8s.io "v1.apiservices-it-bad" is invalid: [metadata.name: '
        'Invalid value: "v1.apiservices-it-bad": must be `spec.version+"."+spec.group`: '
        '"v1.apiservices-it.example.com", spec.insecureSkipTLSVerify: Invalid value: true: may '
        "not be true if caBundle is present]"
    )


async def test_local_apiservices_registered_at_start(server: ServerProcess) -> None:
    async with aiohttp.ClientSession(base_url=server.url) as http:
        async with http.get(f"{BASE}/v1.apps") as resp:
            apps = await resp.json()
        table_type = "application/json;as=Table;v=v1;g=meta.k8s.io"
        async with http.get(f"{BASE}/v1.", headers={"Accept": table_type}) as resp:
            table = await resp.json()
    assert apps["spec"] == {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800,
                            "versionPriority": 15}  # fmt: skip
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Service", "Available", "Age"]  # fmt: skip
    assert table["rows"][0]["cells"][:3] == ["v1.", "Local", "True"]


async def test_automanaged_true_apiservice_of_an_unserved_group_is_removed(
    server: ServerProcess,
) -> None:
    """Upstream's autoregister deletes an ``automanaged: "true"`` APIService whose
    group-version is no longer served (a deleted CRD's); ``onstart`` ones it keeps."""
    body = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1.gone.example.com",
                         "labels": {"kube-aggregator.kubernetes.io/automanaged": "true"}},
            "spec": {"group": "gone.example.com", "version": "v1",
                     "groupPriorityMinimum": 1000, "versionPriority": 100}}  # fmt: skip
    async with aiohttp.ClientSession(base_url=server.url) as http:
        await create(http, BASE, body)
        deadline = asyncio.get_running_loop().time() + 15
        while True:
            async with http.get(f"{BASE}/v1.gone.example.com") as resp:
                if resp.status == 404:
                    break
            assert asyncio.get_running_loop().time() < deadline, "not removed"
            await asyncio.sleep(0.2)  # the controller's round: nothing to await


async def test_status_conditions_validated_as_upstream(server: ServerProcess) -> None:
    """kube-apiserver 1.32: 422 ``status.conditions[0].status: Unsupported value:
    "Maybe": supported values: "True", "False", "Unknown"`` (a condition without a type
    is not checked)."""
    name = "v1.status-it.example.com"
    body = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name},
            "spec": {"group": "status-it.example.com", "version": "v1",
                     "groupPriorityMinimum": 100, "versionPriority": 10}}  # fmt: skip
    patch = {"status": {"conditions": [
        {"type": "Available", "status": "Maybe", "reason": "x", "message": "y",
         "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}  # fmt: skip
    headers = {"Content-Type": "application/merge-patch+json"}
    async with aiohttp.ClientSession(base_url=server.url) as http:
        await create(http, BASE, body)
        async with http.patch(f"{BASE}/{name}/status", json=patch, headers=headers) as resp:
            answer = await resp.json()
        async with http.delete(f"{BASE}/{name}"):
            pass
    assert (resp.status, answer["message"]) == (
        422,
        f'APIService.apiregistration.k8s.io "{name}" is invalid: status.conditions[0].status: '
        'Unsupported value: "Maybe": supported values: "True", "False", "Unknown"',
    )
