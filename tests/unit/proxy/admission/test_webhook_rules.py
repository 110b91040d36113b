"""Webhook and policy rule matching, case by case as the admissionregistration/v1 API
documents it ("'*' means all resources, but not subresources. 'pods/*' means all
subresources of pods. '*/scale' means all scale subresources. '*/*' means all
resources and their subresources."; scope Cluster / Namespaced / *; matchPolicy)."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.admission.attributes import Attributes
from proxy.admission.webhook.rules import (
    namespace_selector_matches,
    object_selector_matches,
    rules_match,
)
from proxy.registry.resources import ResourceInfo

PODS = ResourceInfo("", "v1", "Pod", "pods", True, ("create",))
NODES = ResourceInfo("", "v1", "Node", "nodes", False, ("create",))
NAMESPACES = ResourceInfo("", "v1", "Namespace", "namespaces", False, ("create",))
DEPLOYMENTS = ResourceInfo("apps", "v1", "Deployment", "deployments", True, ("create",))


def _attrs(resource: ResourceInfo, sub: str = "", op: str = "CREATE",
           obj: dict[str, Any] | None = None) -> Attributes:
    return Attributes(resource=resource, operation=op, namespace="ns", name="x",
                      subresource=sub, object=obj)


def _rule(resources: list[str], **extra: Any) -> dict[str, Any]:
    return {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
            "resources": resources, **extra}


CASES = [
    # (rule resources, resource, subresource, matches)
    (["pods"], PODS, "", True),
    (["pods"], PODS, "status", False),
    (["pods/status"], PODS, "status", True),
    (["pods/status"], PODS, "", False),
    (["*"], PODS, "", True),
    (["*"], PODS, "status", False),
    (["pods/*"], PODS, "status", True),
    (["pods/*"], PODS, "", False),
    (["*/scale"], DEPLOYMENTS, "scale", True),
    (["*/scale"], DEPLOYMENTS, "status", False),
    (["*/*"], PODS, "", True),
    (["*/*"], DEPLOYMENTS, "scale", True),
    (["deployments"], PODS, "", False),
]


@pytest.mark.parametrize(("resources", "resource", "sub", "expected"), CASES)
def test_resources(resources: list[str], resource: ResourceInfo, sub: str,
                   expected: bool) -> None:
    assert rules_match([_rule(resources)], _attrs(resource, sub), "Equivalent") is expected


@pytest.mark.parametrize(("scope", "resource", "expected"), [
    ("Namespaced", PODS, True), ("Namespaced", NODES, False), ("Cluster", NODES, True),
    ("Cluster", PODS, False), ("Cluster", NAMESPACES, True), ("Namespaced", NAMESPACES, False),
    ("*", NODES, True),
])
def test_scope(scope: str, resource: ResourceInfo, expected: bool) -> None:
    rule = _rule(["*"], scope=scope)
    assert rules_match([rule], _attrs(resource), "Equivalent") is expected


def test_operations_groups_and_match_policy() -> None:
    rule = {"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1beta1"],
            "resources": ["deployments"]}
    assert not rules_match([rule], _attrs(DEPLOYMENTS), "Equivalent")  # CREATE
    update = _attrs(DEPLOYMENTS, op="UPDATE")
    assert rules_match([rule], update, "Equivalent")  # the served v1 is equivalent
    assert not rules_match([rule], update, "Exact")
    assert not rules_match([{**rule, "apiGroups": [""]}], update, "Equivalent")


def test_selectors() -> None:
    labelled = _attrs(PODS, obj={"metadata": {"labels": {"a": "b"}}})
    assert object_selector_matches({"matchLabels": {"a": "b"}}, labelled)
    assert not object_selector_matches({"matchLabels": {"a": "c"}}, labelled)
    assert object_selector_matches({}, labelled)  # empty: everything
    selector = {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}
    prod = {"metadata": {"labels": {"env": "prod"}}}
    assert namespace_selector_matches(selector, labelled, prod)
    assert not namespace_selector_matches(selector, labelled, {"metadata": {}})
    assert namespace_selector_matches(selector, _attrs(NODES), None)  # cluster-scoped
    namespace = _attrs(NAMESPACES, obj=prod)  # a Namespace matches on its own labels
    assert namespace_selector_matches(selector, namespace, None)
