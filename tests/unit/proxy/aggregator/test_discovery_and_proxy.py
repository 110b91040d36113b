"""The aggregator's pure parts: discovery merged in upstream's order (compared with a
v1.32 kube-apiserver's ``/apis``), the identity headers sent to an extension server
(``transport.SetAuthProxyHeaders``), service resolution (ClusterIP, ExternalName,
endpoints with ``--enable-aggregator-routing``) with upstream's errors, and which
certificates may be x509 users next to a front proxy's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from proxy.admission.webhook.service_resolver import ResolveError, resolve
from proxy.aggregator import discovery
from proxy.aggregator.apiservice import APIServiceRef
from proxy.aggregator.transport import auth_proxy_headers
from proxy.authentication.request_header import (
    RequestHeaderAuthenticator,
    RequestHeaderConfig,
    front_proxy_authenticators,
)
from proxy.authentication.x509 import CertificatePool, X509Authenticator
from proxy.request.user import UserInfo
from proxy.server.certs import new_ca, sign

JSON = dict[str, Any]

# a v1.32 kube-apiserver's /apis, its built-in groups in order (CRD groups left out)
UPSTREAM_ORDER = [
    "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
    "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io",
    "policy", "rbac.authorization.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io",
    "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io",
    "discovery.k8s.io", "flowcontrol.apiserver.k8s.io",
]  # fmt: skip


def _remote(group: str, version: str, gpm: int, vp: int, available: bool = True) -> APIServiceRef:
    return APIServiceRef(f"{version}.{group}", group, version, gpm, vp, "ns", "svc", 443,
                         available=available)  # fmt: skip


def test_legacy_apis_in_upstreams_order() -> None:
    local = [(g, "v1") for g in reversed(UPSTREAM_ORDER)] + [("autoscaling", "v2"), ("", "v1")]
    body = discovery.legacy_group_list(local, [])
    assert [g["name"] for g in body["groups"]] == UPSTREAM_ORDER
    autoscaling = next(g for g in body["groups"] if g["name"] == "autoscaling")
    assert [v["version"] for v in autoscaling["versions"]] == ["v2", "v1"]  # as upstream
    assert autoscaling["preferredVersion"]["version"] == "v2"


def test_remote_groups_sorted_by_priority_and_listed_even_when_unavailable() -> None:
    refs = [
        _remote("metrics.k8s.io", "v1beta1", 100, 100, available=False),
        _remote("wardle.example.com", "v1alpha1", 17900, 10),
        _remote("wardle.example.com", "v1beta1", 17900, 20),
    ]
    body = discovery.legacy_group_list([("apps", "v1")], refs)
    names = [g["name"] for g in body["groups"]]
    assert names == ["apiregistration.k8s.io", "wardle.example.com", "apps", "metrics.k8s.io"]
    assert body["groups"][1]["preferredVersion"]["version"] == "v1beta1"  # versionPriority 20
    group = discovery.api_group("wardle.example.com", refs)
    assert group is not None and group["kind"] == "APIGroup"
    assert discovery.api_group("apps", refs) is None  # local groups are the server's own


def test_custom_local_groups_sort_as_crds() -> None:
    """A served group without upstream priorities is a CRD's: 1000, after the built-ins
    and before an APIService of priority 100 (as a kube-apiserver 1.32 lists them)."""
    local = [("apps", "v1"), ("widgets.example.com", "v1beta1"), ("widgets.example.com", "v1")]
    refs = [_remote("metrics.k8s.io", "v1beta1", 100, 100)]
    groups = discovery.legacy_group_list(local, refs)["groups"]
    assert [g["name"] for g in groups] == [
        "apiregistration.k8s.io", "apps", "widgets.example.com", "metrics.k8s.io"]  # fmt: skip
    assert [v["version"] for v in groups[2]["versions"]] == ["v1", "v1beta1"]


def test_aggregated_merge_marks_unavailable_versions_stale() -> None:
    local = {"kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": "apps"}}]}
    entry = {"version": "v1beta1", "resources": [], "freshness": "Current"}
    up = _remote("metrics.k8s.io", "v1beta1", 100, 100)
    merged = discovery.aggregated_group_list(local, [up], {up.name: entry})
    assert [i["metadata"]["name"] for i in merged["items"]] == ["apps", "metrics.k8s.io"]
    down = _remote("metrics.k8s.io", "v1beta1", 100, 100, available=False)
    merged = discovery.aggregated_group_list(local, [down], {down.name: entry})
    assert merged["items"][1]["versions"][0]["freshness"] == "Stale"
    never = discovery.aggregated_group_list(local, [down], {})
    assert [i["metadata"]["name"] for i in never["items"]] == ["apps"]  # nothing fetched yet


def test_identity_headers_replace_what_the_client_sent() -> None:
    user = UserInfo("alice", "uid-1", ("devs", "system:authenticated"),
                    {"scopes.example.com/x y": ("a", "b")})  # fmt: skip
    sent = {"Authorization": "Bearer secret", "X-Remote-User": "root", "Impersonate-User": "x",
            "Accept": "application/json", "Connection": "keep-alive"}  # fmt: skip
    out = auth_proxy_headers(sent, user)
    assert "Authorization" not in out and "Impersonate-User" not in out
    assert "Connection" not in out
    assert out.getall("X-Remote-User") == ["alice"]
    assert out["X-Remote-Uid"] == "uid-1"
    assert out.getall("X-Remote-Group") == ["devs", "system:authenticated"]
    assert out.getall("X-Remote-Extra-scopes.example.com%2fx%20y") == ["a", "b"]
    assert out["Accept"] == "application/json"


def _store(objects: dict[tuple[str, str, str, str], JSON]) -> tuple[Any, Any]:
    async def get(group: str, plural: str, ns: str, name: str) -> JSON | None:
        return objects.get((group, plural, ns, name))

    async def list_(group: str, plural: str, ns: str) -> list[JSON]:
        return [o for (g, p, n, _), o in objects.items() if (g, p, n) == (group, plural, ns)]

    return get, list_


_SVC = ("", "services", "ns", "api")


async def test_cluster_ip_external_name_and_missing() -> None:
    get, list_ = _store({_SVC: {"spec": {"clusterIP": "10.0.0.7", "ports": [{"port": 443}]}}})
    found = await resolve(get, list_, "ns", "api", 443, endpoint_routing=False)
    assert (found.base_url, found.server_name) == ("https://10.0.0.7:443", "api.ns.svc")
    with pytest.raises(ResolveError, match="no service port 444 found"):
        await resolve(get, list_, "ns", "api", 444, endpoint_routing=False)
    with pytest.raises(ResolveError, match='service "other" not found'):
        await resolve(get, list_, "ns", "other", 443, endpoint_routing=False)
    ext = {_SVC: {"spec": {"type": "ExternalName", "externalName": "localhost"}}}
    get, list_ = _store(ext)
    found = await resolve(get, list_, "ns", "api", 9443, endpoint_routing=False)
    assert found.base_url == "https://localhost:9443"


async def test_endpoint_routing_uses_ready_slice_addresses_and_target_port() -> None:
    svc = {"spec": {"clusterIP": "10.0.0.7", "ports": [{"name": "https", "port": 443}]}}
    endpoints = [
        {"addresses": ["10.1.0.5"], "conditions": {"ready": True}},
        {"addresses": ["10.1.0.6"], "conditions": {"ready": False}},
    ]
    ready = {
        "metadata": {"labels": {"kubernetes.io/service-name": "api"}},
        "ports": [{"name": "https", "port": 8443}],
        "endpoints": endpoints,
    }
    get, list_ = _store({_SVC: svc, ("discovery.k8s.io", "endpointslices", "ns", "s1"): ready})
    found = await resolve(get, list_, "ns", "api", 443, endpoint_routing=True)
    assert found.base_url == "https://10.1.0.5:8443"
    get, list_ = _store({_SVC: svc})
    with pytest.raises(ResolveError, match='no endpoints available for service "api"'):
        await resolve(get, list_, "ns", "api", 443, endpoint_routing=True)


def test_front_proxy_certificates_are_never_x509_users(tmp_path: Path) -> None:
    """With a requestheader CA, only certificates the client CA signed are x509 users;
    without a client CA there is no x509 authenticator at all (upstream: none is built)."""
    client_ca, front_ca = new_ca("client-ca"), new_ca("front-proxy-ca")
    (tmp_path / "client.crt").write_bytes(client_ca.cert_pem)
    (tmp_path / "front.crt").write_bytes(front_ca.cert_pem)
    config = RequestHeaderConfig(str(tmp_path / "front.crt"), ("front-proxy-client",),
                                 ("X-Remote-User",))  # fmt: skip
    only_headers = front_proxy_authenticators(config, "")
    assert [type(a) for a in only_headers] == [RequestHeaderAuthenticator]
    both = front_proxy_authenticators(config, str(tmp_path / "client.crt"))
    x509_auth = both[1]
    assert isinstance(x509_auth, X509Authenticator) and x509_auth.client_cas is not None
    pool = x509_auth.client_cas
    as_user = x509.load_pem_x509_certificate(sign(client_ca, "alice", client=True).cert_pem)
    as_proxy = x509.load_pem_x509_certificate(sign(front_ca, "alice", client=True).cert_pem)
    assert pool.signed(as_user) and not pool.signed(as_proxy)
    assert CertificatePool.from_file(str(tmp_path / "front.crt")).signed(as_proxy)
