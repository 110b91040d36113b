"""The generic validation entry points with the rules each kind's server gives: a
kind's own name rule (RBAC's path segments, kube's table) and apimachinery's ObjectMeta
rules for the kinds served outside k8s.io/kubernetes (the CRD, APIService)."""

from __future__ import annotations

import pytest

from proxy import apierrors
from proxy.aggregator.validation import STRATEGY as APISERVICE
from proxy.aggregator.validation import apiservice_resource
from proxy.kube.resources import build_registry
from proxy.kube.validation.strategies import BUILTIN_STRATEGIES
from proxy.registry.resources import ResourceInfo
from proxy.registry.validation.strategy import KindStrategy, validate_create, validate_update


def _kube(group: str, plural: str) -> tuple[ResourceInfo, KindStrategy | None]:
    resource = build_registry().lookup(group, plural)
    assert resource is not None
    return resource, BUILTIN_STRATEGIES.get((resource.group, resource.kind))


def _obj(name: str, **meta: object) -> dict[str, object]:
    return {"metadata": {"name": name, **meta}}


@pytest.mark.parametrize("plural", ["roles", "clusterroles"])
def test_rbac_role_names_are_path_segments(plural: str) -> None:
    resource, rules = _kube("rbac.authorization.k8s.io", plural)
    namespace = {"namespace": "default"} if resource.namespaced else {}
    validate_create(_obj("system:controller:x", **namespace), resource, rules)
    assert rules is not None and not rules.validates_kind  # ObjectMeta's rules alone


def test_other_kinds_names_are_dns_subdomains() -> None:
    resource, rules = _kube("coordination.k8s.io", "leases")
    with pytest.raises(apierrors.StatusError) as info:
        validate_create(_obj("system:controller:x", namespace="default"), resource, rules)
    assert info.value.code == 422


def test_a_kube_kinds_status_write_keeps_cores_finalizer_rule() -> None:
    resource, rules = _kube("apps", "deployments")
    old = _obj("d", namespace="default")
    new = _obj("d", namespace="default", finalizers=["nodomain"])
    with pytest.raises(apierrors.StatusError) as info:
        validate_update(new, old, resource, "status", rules)
    assert "finalizers" in str(info.value.body)


def test_apiservice_status_write_uses_apimachinerys_object_meta() -> None:
    old = {"metadata": {"name": "v1.example.com"}, "spec": {}}
    new = {"metadata": {"name": "v1.example.com", "finalizers": ["nodomain"]}, "spec": {}}
    validate_update(new, old, apiservice_resource(), "status", APISERVICE)
