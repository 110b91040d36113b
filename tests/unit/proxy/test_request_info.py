"""RequestInfo parsing, after kube-apiserver's RequestInfoFactory cases."""

from __future__ import annotations

import pytest

from proxy.endpoints.request_info import parse_request_info


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces", {}, ("list", "", "v1", "", "namespaces", "", "")),
        (
            "GET",
            "/api/v1/namespaces/other",
            {},
            ("get", "", "v1", "other", "namespaces", "other", ""),
        ),
        (
            "GET",
            "/api/v1/namespaces/other/status",
            {},
            ("get", "", "v1", "other", "namespaces", "other", "status"),
        ),
        ("GET", "/api/v1/namespaces/other/pods", {}, ("list", "", "v1", "other", "pods", "", "")),
        (
            "GET",
            "/api/v1/namespaces/other/pods/foo",
            {},
            ("get", "", "v1", "other", "pods", "foo", ""),
        ),
        (
            "GET",
            "/api/v1/namespaces/other/pods/foo/status",
            {},
            ("get", "", "v1", "other", "pods", "foo", "status"),
        ),
        ("GET", "/api/v1/pods", {}, ("list", "", "v1", "", "pods", "", "")),
        ("GET", "/api/v1/pods", {"watch": "true"}, ("watch", "", "v1", "", "pods", "", "")),
        ("GET", "/api/v1/pods", {"watch": "1"}, ("watch", "", "v1", "", "pods", "", "")),
        ("GET", "/api/v1/pods", {"watch": "false"}, ("list", "", "v1", "", "pods", "", "")),
        (
            "GET",
            "/api/v1/watch/namespaces/other/pods",
            {},
            ("watch", "", "v1", "other", "pods", "", ""),
        ),
        (
            "GET",
            "/apis/apps/v1/namespaces/x/deployments/d",
            {},
            ("get", "apps", "v1", "x", "deployments", "d", ""),
        ),
        (
            "POST",
            "/api/v1/namespaces/other/pods",
            {},
            ("create", "", "v1", "other", "pods", "", ""),
        ),
        (
            "PUT",
            "/api/v1/namespaces/other/pods/foo",
            {},
            ("update", "", "v1", "other", "pods", "foo", ""),
        ),
        (
            "PATCH",
            "/api/v1/namespaces/other/pods/foo",
            {},
            ("patch", "", "v1", "other", "pods", "foo", ""),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/other/pods/foo",
            {},
            ("delete", "", "v1", "other", "pods", "foo", ""),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/other/pods",
            {},
            ("deletecollection", "", "v1", "other", "pods", "", ""),
        ),
        (
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/r",
            {},
            ("get", "rbac.authorization.k8s.io", "v1", "", "clusterroles", "r", ""),
        ),
    ],
)
def test_resource_requests(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    info = parse_request_info(method, path, query)
    assert info.is_resource_request
    got = (
        info.verb,
        info.group,
        info.version,
        info.namespace,
        info.resource,
        info.name,
        info.subresource,
    )
    assert got == expected


@pytest.mark.parametrize(
    "path", ["/", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/healthz", "/version"]
)
def test_non_resource_requests(path: str) -> None:
    info = parse_request_info("GET", path, {})
    assert not info.is_resource_request
    assert info.verb == "get"
