"""Aggregated discovery: document shape (as kube-apiserver serves apidiscovery.k8s.io/v2),
ordering, Accept detection, ETag and 304."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
import pytest

from proxy.apimachinery.api_resource import SubresourceInfo
from proxy.endpoints.discovery.aggregated import (
    AGGREGATED_CONTENT_TYPE,
    build_aggregated,
    build_documents,
    is_aggregated_request,
    respond,
    version_sort_key,
)
from tests.unit.proxy import resources


@dataclass(frozen=True)
class Res(resources.Res):
    verbs: tuple[str, ...] = ("create", "delete", "get", "list", "patch", "update", "watch")
    subresources: tuple[str, ...] = ()
    facts: tuple[tuple[str, SubresourceInfo], ...] = ()

    def subresource_info(self, name: str) -> SubresourceInfo:
        return dict(self.facts).get(name, SubresourceInfo())


SCALE = SubresourceInfo(("autoscaling", "v1", "Scale"))
RESOURCES = [
    Res("apps", "v1", "Deployment", "deployments", short_names=("deploy",),
        categories=("all",), subresources=("status", "scale"), facts=(("scale", SCALE),)),
    Res("", "v1", "Pod", "pods", short_names=("po",), categories=("all",),
        subresources=("status",)),
    Res("", "v1", "Node", "nodes", namespaced=False, short_names=("no",)),
    Res("batch", "v1", "Job", "jobs"),
    Res("example.io", "v1beta1", "Widget", "widgets"),
    Res("example.io", "v1", "Widget", "widgets"),
    Res("example.io", "v1alpha1", "Widget", "widgets"),
    Res("coordination.k8s.io", "v1", "Lease", "leases"),
]  # fmt: skip


def test_core_group_document() -> None:
    doc = build_aggregated(RESOURCES, legacy=True)
    assert doc["kind"] == "APIGroupDiscoveryList"
    assert doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    assert doc["metadata"] == {}
    [core] = doc["items"]
    assert core["metadata"] == {"creationTimestamp": None}
    [v1] = core["versions"]
    assert v1["version"] == "v1"
    assert v1["freshness"] == "Current"
    nodes, pods = v1["resources"]
    assert nodes == {
        "resource": "nodes",
        "responseKind": {"group": "", "version": "v1", "kind": "Node"},
        "scope": "Cluster",
        "singularResource": "node",
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        "shortNames": ["no"],
    }
    assert pods["scope"] == "Namespaced"
    assert pods["categories"] == ["all"]
    assert pods["subresources"] == [
        {
            "subresource": "status",
            "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
            "verbs": ["get", "patch", "update"],
        }
    ]


def test_groups_document_orders_groups_and_versions() -> None:
    doc = build_aggregated(RESOURCES, legacy=False)
    names = [item["metadata"]["name"] for item in doc["items"]]
    assert names == ["apps", "batch", "coordination.k8s.io", "example.io"]
    widget_versions = [v["version"] for v in doc["items"][-1]["versions"]]
    assert widget_versions == ["v1", "v1beta1", "v1alpha1"]  # first = preferred
    deploy = doc["items"][0]["versions"][0]["resources"][0]
    assert [s["subresource"] for s in deploy["subresources"]] == ["scale", "status"]
    assert deploy["subresources"][0]["responseKind"] == {
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
    }


def test_version_priority() -> None:
    versions = ["v1alpha1", "v2", "v1beta2", "foo", "v1", "v1beta1", "v10alpha3"]
    assert sorted(versions, key=version_sort_key) == [
        "v2", "v1", "v1beta2", "v1beta1", "v10alpha3", "v1alpha1", "foo",
    ]  # fmt: skip


KUBECTL = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)


@pytest.mark.parametrize(
    ("accept", "aggregated"),
    [
        (KUBECTL, True),
        ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", True),
        ("application/json", False),
        (None, False),
        ("*/*", False),
        ("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", False),
        ("application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
         False),
        ("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
         "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", True),
    ],
)  # fmt: skip
def test_is_aggregated_request(accept: str | None, aggregated: bool) -> None:
    assert is_aggregated_request(accept) is aggregated


def test_respond_with_etag_and_304() -> None:
    docs = build_documents(RESOURCES)
    apis = docs["/apis"]
    status, headers, body = respond(apis, {"Accept": KUBECTL})
    assert status == 200
    assert headers["Content-Type"] == AGGREGATED_CONTENT_TYPE
    assert headers["Vary"] == "Accept"
    assert headers["ETag"].startswith('"') and headers["ETag"].endswith('"')
    assert orjson.loads(body) == build_aggregated(RESOURCES, legacy=False)
    status, headers, body = respond(apis, {"if-none-match": apis.etag})
    assert (status, body) == (304, b"")
    assert headers["ETag"] == apis.etag
    assert respond(apis, {"If-None-Match": '"stale"'})[0] == 200
    # The ETag follows the content: a new resource set, a new tag; the same set, the same.
    assert build_documents(RESOURCES)["/apis"].etag == apis.etag
    assert build_documents(RESOURCES[:2])["/apis"].etag != apis.etag
    assert docs["/api"].etag != apis.etag
