"""DELETE as kube-apiserver's generic registry does it (proxy/registry/deletion.py):
finalizers keep an object until they are removed; with --lifecycle-controllers a bound
pod is deleted gracefully, propagationPolicy adds the garbage collector's finalizers
and a namespace goes Terminating until /finalize lifts its spec.finalizers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from lab.etcd import EtcdCluster
from tests.integration.conftest import create, pod_body, start_server

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]


@pytest.fixture(scope="module")
async def lifecycle(etcd: EtcdCluster) -> AsyncIterator[aiohttp.ClientSession]:
    with start_server(etcd.endpoints, None, "--lifecycle-controllers=true") as server:
        async with aiohttp.ClientSession(base_url=server.url) as http:
            yield http


async def _ns(http: aiohttp.ClientSession, name: str) -> str:
    await create(http, "/api/v1/namespaces", {"metadata": {"name": name}})
    return name


async def _call(http: aiohttp.ClientSession, method: str, path: str,
                body: JSON | None = None, ctype: str = "application/json") -> tuple[int, JSON]:
    async with http.request(method, path, json=body,
                            headers={"Content-Type": ctype}) as resp:  # fmt: skip
        return resp.status, await resp.json()


def _cm(name: str, finalizers: list[str] | None = None) -> JSON:
    meta: JSON = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


async def test_finalizers_keep_the_object_until_removed(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """Without --lifecycle-controllers too: finalizers are the object's own contract."""
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(http, cms, _cm("held", ["example.com/hold"]))
    code, obj = await _call(http, "DELETE", f"{cms}/held")
    assert code == 200 and obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    code, obj = await _call(http, "GET", f"{cms}/held")
    assert code == 200 and obj["metadata"]["finalizers"] == ["example.com/hold"]
    code, obj = await _call(http, "PATCH", f"{cms}/held", {"metadata": {"finalizers": None}},
                            "application/merge-patch+json")  # fmt: skip
    assert code == 200
    code, _ = await _call(http, "GET", f"{cms}/held")
    assert code == 404


async def test_a_kept_object_checks_preconditions_and_dry_run(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """A DELETE that would only mark an object (finalizers) checks DeleteOptions'
    preconditions as upstream's BeforeDelete (409 on the kind, object unchanged), and a
    dry run marks nothing."""
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(http, cms, _cm("kept", ["example.com/hold"]))
    wrong = {"kind": "DeleteOptions", "preconditions": {"uid": "not-its-uid"}}
    code, status = await _call(http, "DELETE", f"{cms}/kept", wrong)
    assert code == 409 and status["reason"] == "Conflict", status
    assert status["message"].startswith('Operation cannot be fulfilled on ConfigMap "kept": '
                                        "the UID in the precondition (not-its-uid)")  # fmt: skip
    code, obj = await _call(http, "DELETE", f"{cms}/kept?dryRun=All")
    assert code == 200 and obj["metadata"]["deletionTimestamp"]
    code, obj = await _call(http, "GET", f"{cms}/kept")
    assert code == 200 and "deletionTimestamp" not in obj["metadata"]
    await _call(http, "PATCH", f"{cms}/kept", {"metadata": {"finalizers": None}},
                "application/merge-patch+json")  # fmt: skip
    code, _ = await _call(http, "GET", f"{cms}/kept")
    assert code == 200  # not being deleted: lifting its finalizers does not delete it


async def test_a_bound_pod_is_deleted_gracefully(lifecycle: aiohttp.ClientSession) -> None:
    ns = await _ns(lifecycle, "graceful")
    pods = f"/api/v1/namespaces/{ns}/pods"
    await create(lifecycle, pods, pod_body("bound", node="node-1"))
    await create(lifecycle, pods, pod_body("unbound"))
    code, obj = await _call(lifecycle, "DELETE", f"{pods}/bound")
    assert code == 200 and obj["metadata"]["deletionGracePeriodSeconds"] == 30
    assert obj["metadata"]["deletionTimestamp"]
    code, obj = await _call(lifecycle, "DELETE", f"{pods}/bound",
                            {"kind": "DeleteOptions", "gracePeriodSeconds": 60})  # fmt: skip
    assert code == 200 and obj["metadata"]["deletionGracePeriodSeconds"] == 30  # only shorter
    code, _ = await _call(lifecycle, "GET", f"{pods}/bound")
    assert code == 200
    code, _ = await _call(lifecycle, "DELETE", f"{pods}/bound",
                          {"kind": "DeleteOptions", "gracePeriodSeconds": 0})  # the kubelet's
    assert code == 200
    assert (await _call(lifecycle, "GET", f"{pods}/bound"))[0] == 404
    code, _ = await _call(lifecycle, "DELETE", f"{pods}/unbound")  # no node: at once
    assert code == 200 and (await _call(lifecycle, "GET", f"{pods}/unbound"))[0] == 404


@pytest.mark.parametrize(("policy", "finalizer"),
                         [("Foreground", "foregroundDeletion"), ("Orphan", "orphan")])
async def test_propagation_policy_adds_the_collectors_finalizer(
    lifecycle: aiohttp.ClientSession, policy: str, finalizer: str
) -> None:
    ns = await _ns(lifecycle, f"policy-{policy.lower()}")
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    await create(lifecycle, cms, _cm("owner"))
    code, obj = await _call(lifecycle, "DELETE", f"{cms}/owner",
                            {"kind": "DeleteOptions", "propagationPolicy": policy})  # fmt: skip
    assert code == 200 and obj["metadata"]["finalizers"] == [finalizer]
    await create(lifecycle, cms, _cm("gone"))
    code, _ = await _call(lifecycle, "DELETE", f"{cms}/gone",
                          {"kind": "DeleteOptions", "propagationPolicy": "Background"})
    assert code == 200 and (await _call(lifecycle, "GET", f"{cms}/gone"))[0] == 404


async def test_orphan_dependents_false_is_accepted_202(lifecycle: aiohttp.ClientSession) -> None:
    ns = await _ns(lifecycle, "accepted")
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    await create(lifecycle, cms, _cm("held", ["example.com/hold"]))
    code, _ = await _call(lifecycle, "DELETE", f"{cms}/held",
                          {"kind": "DeleteOptions", "orphanDependents": False})
    assert code == 202


async def test_a_namespace_terminates_until_finalized(lifecycle: aiohttp.ClientSession) -> None:
    ns = await _ns(lifecycle, "ending")
    await create(lifecycle, f"/api/v1/namespaces/{ns}/configmaps", _cm("inside"))
    code, obj = await _call(lifecycle, "DELETE", f"/api/v1/namespaces/{ns}")
    assert code == 200 and obj["status"]["phase"] == "Terminating"
    assert obj["spec"]["finalizers"] == ["kubernetes"] and obj["metadata"]["deletionTimestamp"]
    code, status = await _call(lifecycle, "POST", f"/api/v1/namespaces/{ns}/configmaps",
                               _cm("late"))  # fmt: skip
    assert code == 403 and status["message"] == (
        f'configmaps "late" is forbidden: unable to create new content in namespace {ns} '
        "because it is being terminated")  # fmt: skip
    assert status["details"]["causes"] == [{
        "reason": "NamespaceTerminating", "message": f"namespace {ns} is being terminated",
        "field": "metadata.namespace"}]  # fmt: skip
    # the contents stay for the namespace controller to remove
    assert (await _call(lifecycle, "GET", f"/api/v1/namespaces/{ns}/configmaps/inside"))[0] == 200
    obj["spec"]["finalizers"] = []
    code, _ = await _call(lifecycle, "PUT", f"/api/v1/namespaces/{ns}/finalize", obj)
    assert code == 200
    assert (await _call(lifecycle, "GET", f"/api/v1/namespaces/{ns}"))[0] == 404


async def test_a_pod_deleted_at_once_answers_with_its_deletion_marks(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """``gracePeriodSeconds=0`` (and any pod no kubelet runs): kube-apiserver writes the
    pod with ``deletionTimestamp`` and ``deletionGracePeriodSeconds: 0``, then removes
    it, and answers with that object; a watcher sees MODIFIED, then DELETED."""
    pods = f"/api/v1/namespaces/{namespace}/pods"
    created = await create(http, pods, pod_body("now"))
    rv = created["metadata"]["resourceVersion"]
    code, obj = await _call(http, "DELETE", f"{pods}/now?gracePeriodSeconds=0")
    assert code == 200 and obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["deletionGracePeriodSeconds"] == 0
    assert obj["metadata"]["generation"] == 2  # a graceful deletion bumps it
    assert (await _call(http, "GET", f"{pods}/now"))[0] == 404
    watch = f"{pods}?watch=1&resourceVersion={rv}&fieldSelector=metadata.name%3Dnow"
    async with http.get(watch, timeout=aiohttp.ClientTimeout(total=5)) as resp:
        events = [await resp.content.readline(), await resp.content.readline()]
    seen = [json.loads(line) for line in events]
    assert [e["type"] for e in seen] == ["MODIFIED", "DELETED"]
    assert seen[0]["object"]["metadata"]["deletionGracePeriodSeconds"] == 0
    # a ConfigMap has no graceful deletion: removed as it was
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    await create(http, cms, _cm("plain"))
    code, obj = await _call(http, "DELETE", f"{cms}/plain?gracePeriodSeconds=0")
    assert code == 200 and "deletionTimestamp" not in obj["metadata"]
