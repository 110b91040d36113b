"""OpenAPI v3: the index, per group-version documents in kube's style, the lookups
kubectl does (GVK schema for explain; fieldValidation on the kind's PATCH operation,
ported from kubectl's supportsQueryParamV3), and the hash/ETag/redirect answers."""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
import pytest

from proxy.openapi.documents import OpenAPIV3, convert_schema, gv_path
from proxy.openapi.schemas import definitions
from tests.unit.proxy.resources import ALL_VERBS, Res

NOW = dt.datetime(2026, 1, 10, 12, 0, 0, tzinfo=dt.UTC)
ALL = ALL_VERBS


RESOURCES = [
    Res("", "v1", "Pod", "pods", subresources=("status",)),
    Res("", "v1", "Node", "nodes", namespaced=False, subresources=("status",)),
    Res("", "v1", "Binding", "bindings", verbs=("create",)),
    Res("apps", "v1", "Deployment", "deployments", subresources=("scale", "status")),
    Res("example.io", "v1", "Widget", "widgets"),  # no schema: no paths, still indexed
]


@pytest.fixture(scope="module")
def service() -> OpenAPIV3:
    return OpenAPIV3(RESOURCES)


def doc(service: OpenAPIV3, path: str) -> dict[str, Any]:
    found = service.document(path)
    assert found is not None
    loaded: dict[str, Any] = orjson.loads(found.body)
    return loaded


def test_index_lists_group_versions_with_their_hash(service: OpenAPIV3) -> None:
    index = orjson.loads(service.index().body)
    assert sorted(index["paths"]) == ["api/v1", "apis/apps/v1", "apis/example.io/v1"]
    api_v1 = service.document("api/v1")
    assert api_v1 is not None
    url = f"/openapi/v3/api/v1?hash={api_v1.hash}"
    assert index["paths"]["api/v1"] == {"serverRelativeURL": url}
    assert gv_path("", "v1") == "api/v1" and gv_path("apps", "v1") == "apis/apps/v1"


def find_gvk_schema(document: dict[str, Any], group: str, version: str, kind: str) -> str:
    """What kubectl explain does: the component carrying the GVK extension."""
    for name, schema in document["components"]["schemas"].items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            if (gvk["group"], gvk["version"], gvk["kind"]) == (group, version, kind):
                return str(name)
    raise AssertionError("no schema for GVK")


def resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref") or (schema.get("allOf") or [{}])[0].get("$ref")
    if ref is None:
        return schema
    target: dict[str, Any] = document["components"]["schemas"][ref.split("/")[-1]]
    return target


def test_explain_pods_spec_containers_walk(service: OpenAPIV3) -> None:
    d = doc(service, "api/v1")
    pod = d["components"]["schemas"][find_gvk_schema(d, "", "v1", "Pod")]
    spec = resolve(d, pod["properties"]["spec"])
    containers = spec["properties"]["containers"]
    assert containers["type"] == "array"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-list-type"] == "map"
    container = resolve(d, containers["items"])
    assert container["required"] == ["name"]
    assert container["properties"]["image"]["type"] == "string"
    assert "enum" not in pod["properties"]["kind"]


def all_refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [r for k, v in value.items() for r in ([v] if k == "$ref" else all_refs(v))]
    if isinstance(value, list):
        return [r for v in value for r in all_refs(v)]
    return []


def test_documents_are_closed_and_in_openapi3_style(service: OpenAPIV3) -> None:
    for path in ("api/v1", "apis/apps/v1"):
        d = doc(service, path)
        assert d["openapi"] == "3.0.0"
        schemas = d["components"]["schemas"]
        refs = all_refs(d)
        assert refs and all(r.startswith("#/components/schemas/") for r in refs)
        assert {r.split("/")[-1] for r in refs} <= set(schemas)  # every $ref resolves
        assert b'"null"' not in orjson.dumps(schemas)  # single types only
        assert "$defs" not in orjson.dumps(d).decode()
    apps = doc(service, "apis/apps/v1")["components"]["schemas"]
    assert "io.k8s.api.apps.v1.Deployment" in apps
    assert "io.k8s.api.core.v1.PodSpec" in apps  # reached through the pod template
    assert "io.k8s.api.core.v1.Node" not in apps


def test_int_or_string_and_quantity_components(service: OpenAPIV3) -> None:
    schemas = doc(service, "apis/apps/v1")["components"]["schemas"]
    ios = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert ios["format"] == "int-or-string" and "type" not in ios
    assert ios["oneOf"] == [{"type": "integer"}, {"type": "string"}]
    quantity = schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert quantity["oneOf"] == [{"type": "string"}, {"type": "number"}]


def supports_query_param(document: dict[str, Any], gvk: dict[str, str], param: str) -> bool:
    """kubectl's supportsQueryParamV3, on the parsed document."""
    for item in document["paths"].values():
        op = item.get("patch")
        if op is None or op.get("x-kubernetes-group-version-kind") != gvk:
            continue
        return any(p["name"] == param and p["in"] == "query" for p in op["parameters"])
    raise AssertionError(f"Path not found for GVK ({gvk}) in OpenAPI schema")


def test_kubectl_finds_server_side_field_validation(service: OpenAPIV3) -> None:
    api = doc(service, "api/v1")
    for kind in ("Pod", "Node"):
        gvk = {"group": "", "version": "v1", "kind": kind}
        assert supports_query_param(api, gvk, "fieldValidation")
    apps = doc(service, "apis/apps/v1")
    gvk = {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert supports_query_param(apps, gvk, "fieldValidation")


def test_paths_and_operations(service: OpenAPIV3) -> None:
    paths = doc(service, "api/v1")["paths"]
    assert sorted(paths) == [
        "/api/v1/namespaces/{namespace}/bindings",
        "/api/v1/namespaces/{namespace}/pods",
        "/api/v1/namespaces/{namespace}/pods/{name}",
        "/api/v1/namespaces/{namespace}/pods/{name}/status",
        "/api/v1/nodes",
        "/api/v1/nodes/{name}",
        "/api/v1/nodes/{name}/status",
        "/api/v1/pods",
    ]
    item = paths["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert set(item) == {"get", "put", "patch", "delete", "parameters"}
    assert item["patch"]["operationId"] == "patchCoreV1NamespacedPod"
    assert item["patch"]["x-kubernetes-action"] == "patch"
    assert "application/strategic-merge-patch+json" in item["patch"]["requestBody"]["content"]
    assert [p["name"] for p in item["parameters"]] == ["name", "namespace", "pretty"]
    collection = paths["/api/v1/namespaces/{namespace}/pods"]
    assert set(collection) == {"get", "post", "delete", "parameters"}
    assert collection["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.core.v1.PodList"
    }
    assert paths["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces"
    assert set(paths["/api/v1/namespaces/{namespace}/bindings"]) == {"post", "parameters"}
    assert paths["/api/v1/nodes/{name}"]["get"]["operationId"] == "readCoreV1Node"
    apps = doc(service, "apis/apps/v1")["paths"]
    create = apps["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"]
    assert create["operationId"] == "createAppsV1NamespacedDeployment"
    assert doc(service, "apis/example.io/v1")["paths"] == {}


def test_respond_hash_redirect_cache_and_404(service: OpenAPIV3) -> None:
    current = service.document("apis/apps/v1")
    assert current is not None
    status, headers, body = service.respond(
        "/apis/apps/v1", query_hash=current.hash, request_headers={}, now=NOW
    )
    assert status == 200 and body == current.body
    assert headers["Cache-Control"] == "public, immutable"
    assert headers["Expires"] == "Sun, 10 Jan 2027 12:00:00 GMT"
    assert headers["ETag"] == f'"{current.hash}"'
    status, headers, _ = service.respond(
        "apis/apps/v1", query_hash="OLD", request_headers={}, now=NOW
    )
    assert status == 301
    assert headers["Location"] == f"/openapi/v3/apis/apps/v1?hash={current.hash}"
    status, _, body = service.respond(
        "apis/apps/v1", query_hash=None, request_headers={"If-None-Match": current.etag}, now=NOW
    )
    assert (status, body) == (304, b"")
    assert service.respond("apis/nope/v1", query_hash=None, request_headers={}, now=NOW)[0] == 404
    status, headers, body = service.respond("", query_hash=None, request_headers={}, now=NOW)
    assert status == 200 and "Cache-Control" not in headers
    assert orjson.loads(body)["paths"]
    # Documents are built once: the same object is served again.
    assert service.document("apis/apps/v1") is current


def test_convert_schema_rules() -> None:
    assert convert_schema({"$ref": "#/$defs/a.B"}) == {"$ref": "#/components/schemas/a.B"}
    assert convert_schema({"$ref": "#/$defs/a.B", "description": "d"}) == {
        "description": "d",
        "allOf": [{"$ref": "#/components/schemas/a.B"}],
    }
    assert convert_schema({"type": ["array", "null"], "items": {"type": ["string", "null"]}}) == {
        "type": "array",
        "items": {"type": "string"},
    }
    assert "io.k8s.api.core.v1.Pod" in definitions()
