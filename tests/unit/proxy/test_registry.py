"""The resource registry: kube's served resources over the lightkube-models catalogue,
and the server's, composed with the CRD's and APIService's."""

from __future__ import annotations

import pytest

from proxy.app.kinds import served_resources
from proxy.kube.resources import REVIEWS, SERVED, VIRTUAL, build_registry
from proxy.registry.catalogue import load_catalogue


def test_every_served_resource_is_in_the_catalogue() -> None:
    registry = build_registry()
    assert len(list(registry)) == len(SERVED)


def test_the_server_serves_kube_crds_and_apiservices_in_discovery_order() -> None:
    registry = served_resources(secure=True)
    assert len(list(registry)) == len(SERVED) + 2 + len(VIRTUAL) + len(REVIEWS)
    groups = registry.groups()
    assert groups.index("events.k8s.io") + 1 == groups.index("apiextensions.k8s.io")
    assert groups[-3:] == ["apiregistration.k8s.io", "authentication.k8s.io",
                           "authorization.k8s.io"]  # fmt: skip
    crd = registry.lookup("apiextensions.k8s.io", "customresourcedefinitions")
    assert crd is not None
    assert (crd.short_names, crd.categories, crd.subresources) == (
        ("crd", "crds"), ("api-extensions",), ("status",)
    )  # fmt: skip
    apiservice = registry.lookup("apiregistration.k8s.io", "apiservices")
    assert apiservice is not None and apiservice.subresources == ("status",)
    assert apiservice.has_storage and crd.has_storage
    unstored = {r.plural for r in registry if not r.has_storage}
    assert unstored == {plural for _, _, plural in VIRTUAL + REVIEWS}
    assert {r.group for r in served_resources(secure=False)}.isdisjoint(
        {"authentication.k8s.io", "authorization.k8s.io"}
    )


@pytest.mark.parametrize(
    ("group", "plural", "kind", "namespaced", "short", "subresources"),
    [
        ("", "pods", "Pod", True, ("po",),
         ("attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward",
          "proxy", "status")),
        ("", "services", "Service", True, ("svc",), ("proxy", "status")),
        ("", "nodes", "Node", False, ("no",), ("proxy", "status")),
        ("", "namespaces", "Namespace", False, ("ns",), ("finalize", "status")),
        ("", "configmaps", "ConfigMap", True, ("cm",), ()),
        ("", "endpoints", "Endpoints", True, ("ep",), ()),
        ("apps", "deployments", "Deployment", True, ("deploy",), ("scale", "status")),
        ("batch", "cronjobs", "CronJob", True, ("cj",), ("status",)),
        ("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", False, (), ()),
        ("discovery.k8s.io", "endpointslices", "EndpointSlice", True, (), ()),
    ],
)
def test_resource_facts(
    group: str,
    plural: str,
    kind: str,
    namespaced: bool,
    short: tuple[str, ...],
    subresources: tuple[str, ...],
) -> None:
    info = build_registry().lookup(group, plural)
    assert info is not None
    assert (info.kind, info.namespaced, info.short_names, info.subresources) == (
        kind,
        namespaced,
        short,
        subresources,
    )
    assert info.singular == kind.lower()


def test_names_used_by_errors() -> None:
    registry = build_registry()
    deploy = registry.get("apps", "v1", "deployments")
    pods = registry.get("", "v1", "pods")
    assert deploy is not None and pods is not None
    assert deploy.qualified == "deployments.apps" and deploy.group_kind == "Deployment.apps"
    assert pods.qualified == "pods" and pods.api_version == "v1"
    assert deploy.api_version == "apps/v1" and deploy.list_kind == "DeploymentList"


def test_verbs_are_api_verbs() -> None:
    ns = build_registry().lookup("", "namespaces")
    assert ns is not None
    assert ns.verbs == ("create", "delete", "get", "list", "patch", "update", "watch")


def test_catalogue_covers_more_than_served() -> None:
    plurals = {r.plural for r in load_catalogue()}
    assert {"ingresses", "storageclasses", "replicationcontrollers"} <= plurals


def test_unknown_served_resource_is_an_error() -> None:
    with pytest.raises(LookupError):
        build_registry([("", "v1", "widgets")])


@pytest.mark.parametrize(
    ("plural", "sub", "kind", "verbs"),
    [
        # as kube-apiserver 1.32's /api/v1 and /apis/apps/v1 list them
        ("pods", "exec", ("", "v1", "PodExecOptions"), ("create", "get")),
        ("pods", "proxy", ("", "v1", "PodProxyOptions"),
         ("create", "delete", "get", "patch", "update")),
        ("nodes", "proxy", ("", "v1", "NodeProxyOptions"),
         ("create", "delete", "get", "patch", "update")),
        ("services", "proxy", ("", "v1", "ServiceProxyOptions"),
         ("create", "delete", "get", "patch", "update")),
        ("pods", "eviction", ("policy", "v1", "Eviction"), ("create",)),
        ("pods", "log", None, ("get",)),
        ("pods", "status", None, ("get", "patch", "update")),
        ("namespaces", "finalize", None, ("update",)),
        ("deployments", "scale", ("autoscaling", "v1", "Scale"), ("get", "patch", "update")),
        ("serviceaccounts", "token", ("authentication.k8s.io", "v1", "TokenRequest"),
         ("create",)),
    ],
)  # fmt: skip
def test_kube_declares_what_discovery_says_of_its_subresources(
    plural: str, sub: str, kind: tuple[str, str, str] | None, verbs: tuple[str, ...]
) -> None:
    """The generic discovery names no subresource kind: kube's catalogue declares each
    (upstream: the subresource storage's New() and the REST interfaces it implements)."""
    (info,) = [r for r in served_resources(secure=True) if r.plural == plural]
    assert sub in info.subresources
    facts = info.subresource_info(sub)
    assert (facts.kind, facts.verbs) == (kind, verbs)
