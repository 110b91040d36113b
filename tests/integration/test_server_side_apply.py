"""Server-side apply over HTTP against a real etcd: the requests kubectl and controllers
send, with kube-apiserver's codes, messages and managedFields (compared side by side with
a real kube-apiserver for the same requests)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
APPLY = "application/apply-patch+yaml"
KUBECTL_UA = "kubectl/v1.37.1 (linux/amd64) kubernetes/abcdef"


def deployment(ns: str, replicas: int = 2) -> JSON:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "ssa-demo", "namespace": ns, "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}},
        },
    }  # fmt: skip


def path(ns: str, sub: str = "") -> str:
    return f"/apis/apps/v1/namespaces/{ns}/deployments/ssa-demo" + (f"/{sub}" if sub else "")


async def patch(
    http: aiohttp.ClientSession, url: str, body: object, ctype: str = APPLY, ua: str = KUBECTL_UA
) -> tuple[int, JSON, aiohttp.ClientResponse]:
    data = body if isinstance(body, bytes) else yaml.safe_dump(body).encode()
    headers = {"Content-Type": ctype, "User-Agent": ua}
    async with http.patch(url, data=data, headers=headers) as resp:
        return resp.status, await resp.json(), resp


def managers(obj: JSON) -> list[tuple[str, str, str]]:
    entries = obj["metadata"].get("managedFields") or []
    return [(e["manager"], e["operation"], e.get("subresource", "")) for e in entries]


async def test_create_on_apply_then_noop_reapply(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    code, obj, _ = await patch(
        http, path(namespace) + "?fieldManager=kubectl", deployment(namespace)
    )
    assert code == 201, obj
    assert managers(obj) == [("kubectl", "Apply", "")]
    code, again, _ = await patch(
        http, path(namespace) + "?fieldManager=kubectl", deployment(namespace)
    )
    assert code == 200  # nothing changed: nothing written
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    # the watch cache (at least as new as the write: RV=0 could answer before it saw it)
    rv = obj["metadata"]["resourceVersion"]
    async with http.get(path(namespace) + f"?resourceVersion={rv}") as resp:
        cached = await resp.json()
    assert cached["metadata"]["managedFields"] == obj["metadata"]["managedFields"]


async def test_create_on_apply_validates_the_object_as_a_create(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """A create-on-apply is checked against the kind's schema as a POST is: a
    ConfigMap whose data is a list is refused (upstream: 500 "failed to create typed
    patch object ... .data: expected map"; here 422 Invalid) and nothing is stored."""
    url = f"/api/v1/namespaces/{namespace}/configmaps/bad-data"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad-data"},
            "data": [1]}  # fmt: skip
    code, status, _ = await patch(http, url + "?fieldManager=m", body)
    assert code in (422, 500) and status["kind"] == "Status", status
    async with http.get(url) as resp:
        assert resp.status == 404


async def test_apply_option_errors_as_upstream(http: aiohttp.ClientSession, namespace: str) -> None:
    code, status, _ = await patch(http, path(namespace), deployment(namespace))
    assert (code, status["message"]) == (
        422,
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch",
    )
    assert status["details"]["causes"] == [{
        "reason": "FieldValueRequired", "message": "Required value: is required for apply patch",
        "field": "fieldManager",
    }]  # fmt: skip
    merge = "application/merge-patch+json"
    code, status, _ = await patch(http, path(namespace) + "?force=true", b"{}", merge)
    assert (code, status["message"]) == (
        422,
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: '
        "may not be specified for non-apply patch",
    )
    code, status, _ = await patch(http, path(namespace) + "?fieldManager=m", b"a: [\n")
    assert code == 400 and status["message"].startswith("error decoding YAML: ")


async def test_conflict_force_and_dry_run(http: aiohttp.ClientSession, namespace: str) -> None:
    await patch(http, path(namespace) + "?fieldManager=kubectl", deployment(namespace))
    merge = "application/merge-patch+json"
    code, _, _ = await patch(http, path(namespace, "scale"), b'{"spec":{"replicas":3}}', merge)
    assert code == 200
    code, status, _ = await patch(
        http, path(namespace) + "?fieldManager=kubectl", deployment(namespace, 4)
    )
    assert code == 409 and status["reason"] == "Conflict"
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
        "using apps/v1: .spec.replicas"
    )
    dry = path(namespace) + "?fieldManager=kubectl&force=true&dryRun=All"
    code, obj, _ = await patch(http, dry, deployment(namespace, 4))
    assert code == 200 and obj["spec"]["replicas"] == 4
    async with http.get(path(namespace)) as resp:
        assert (await resp.json())["spec"]["replicas"] == 3  # the dry run wrote nothing
    code, obj, _ = await patch(
        http, path(namespace) + "?fieldManager=kubectl&force=true", deployment(namespace, 4)
    )
    assert code == 200 and obj["spec"]["replicas"] == 4
    assert managers(obj) == [("kubectl", "Apply", "")]  # the scale entry lost its only field


async def test_status_and_scale_applies(http: aiohttp.ClientSession, namespace: str) -> None:
    await patch(http, path(namespace) + "?fieldManager=kubectl", deployment(namespace))
    status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ssa-demo"},
              "status": {"replicas": 2}}  # fmt: skip
    code, obj, _ = await patch(http, path(namespace, "status") + "?fieldManager=ctrl", status)
    assert code == 200 and obj["status"] == {"replicas": 2}
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "ssa-demo"},
             "spec": {"replicas": 5}}  # fmt: skip
    code, got, _ = await patch(
        http, path(namespace, "scale") + "?fieldManager=hpa&force=true", scale
    )
    assert code == 200 and got["spec"]["replicas"] == 5
    async with http.get(path(namespace)) as resp:
        obj = await resp.json()
    assert sorted(managers(obj)) == [  # (listed by time, then manager)
        ("ctrl", "Apply", "status"),
        ("hpa", "Apply", "scale"),
        ("kubectl", "Apply", ""),
    ]
    by = {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]}
    assert by["ctrl"] == {"f:status": {"f:replicas": {}}}
    assert by["hpa"] == {"f:spec": {"f:replicas": {}}}


async def test_updates_record_their_manager_and_reset(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    body = {"metadata": {"name": "cm"}, "data": {"a": "1"}}
    async with http.post(cms + "?fieldManager=kubectl-create", json=body) as resp:
        created = await resp.json()
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    put = {**created, "data": {"a": "1", "b": "2"}}
    async with http.put(
        f"{cms}/cm", json=put, headers={"User-Agent": "my-ctl/1.0 (linux)"}
    ) as resp:
        updated = await resp.json()
    assert managers(updated) == [("kubectl-create", "Update", ""), ("my-ctl", "Update", "")]
    merge = "application/merge-patch+json"
    code, reset, _ = await patch(http, f"{cms}/cm", b'{"metadata":{"managedFields":[]}}', merge)
    assert code == 200 and "managedFields" not in reset["metadata"]


async def test_strict_field_validation_of_apply(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    cm = b'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\ndata:\n  a: "1"\n  a: "2"\n'
    url = f"/api/v1/namespaces/{namespace}/configmaps/dup?fieldManager=m"
    code, status, _ = await patch(http, url + "&fieldValidation=Strict", cm)
    assert (code, status["message"]) == (
        400,
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 7: key "a" already set in map',
    )
    code, obj, resp = await patch(http, url, cm)
    assert code == 201 and obj["data"] == {"a": "2"}
    assert resp.headers.getall("Warning") == ['299 - "line 7: key \\"a\\" already set in map"']
    bogus = orjson.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"}, "x": 1}
    )
    code, status, _ = await patch(http, url, bogus)
    assert (code, status["message"]) == (
        500,
        "failed to create typed patch object (/dup; /v1, Kind=ConfigMap): .x: field not declared "
        "in schema",
    )


async def test_noop_patch_of_a_pod_template_writes_nothing(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """The stored template's ``creationTimestamp: null`` is not a change (generation and
    resourceVersion stay, as kube-apiserver's no-op patch)."""
    code, obj, _ = await patch(http, path(namespace) + "?fieldManager=m", deployment(namespace))
    assert code == 201
    code, again, _ = await patch(http, path(namespace), b"{}", "application/merge-patch+json")
    assert code == 200
    assert again["metadata"]["generation"] == obj["metadata"]["generation"] == 1
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


async def test_strict_field_validation_of_a_json_apply(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """A JSON body (what kubectl sends) is checked like YAML: JSON is YAML upstream."""
    cm = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dupj"},'
    cm += b'"data":{"a":"1","a":"2"}}'
    url = f"/api/v1/namespaces/{namespace}/configmaps/dupj?fieldManager=m&fieldValidation=Strict"
    code, status, _ = await patch(http, url, cm)
    assert (code, status["message"]) == (
        400,
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 1: key "a" already set in map',
    )


async def test_apply_changing_only_reset_fields_writes_nothing(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """The main resource ignores status: an apply that only changes it leaves the object
    and its managedFields times as they were (upstream's timestamp transformer)."""
    url = path(namespace) + "?fieldManager=m"
    code, obj, _ = await patch(http, url, {**deployment(namespace), "status": {"replicas": 7}})
    assert code == 201
    await asyncio.sleep(1.1)  # the second apply in a later second: its time must not move
    code, again, _ = await patch(http, url, {**deployment(namespace), "status": {"replicas": 8}})
    assert code == 200
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == obj["metadata"]["managedFields"]
