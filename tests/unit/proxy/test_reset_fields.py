"""Reset fields are the route strategy's (upstream's ``GetResetFields``), and the field
manager owns nothing of them: a kind with a status subresource, its ``/status``, and
kube's Namespace (whose ``spec.finalizers`` only ``/finalize`` changes)."""

from __future__ import annotations

import pytest

from proxy.endpoints.handlers.managed import field_manager
from proxy.kube.resources import build_registry
from proxy.kube.strategy import KubeStrategyDeps, strategy_for
from proxy.registry.rest import ResetFields


def _reset(group: str, plural: str, subresource: str) -> ResetFields:
    resource = build_registry().lookup(group, plural)
    assert resource is not None
    return strategy_for(resource, subresource, KubeStrategyDeps()).reset_fields()


@pytest.mark.parametrize(
    ("group", "plural", "subresource", "reset"),
    [
        ("apps", "deployments", "", (("status",),)),
        # deploymentStatusStrategy.GetResetFields: spec and metadata.labels
        ("apps", "deployments", "status", (("spec",), ("metadata", "labels"))),
        # podStatusStrategy's: spec and metadata.ownerReferences
        ("", "pods", "status", (("spec",), ("metadata", "ownerReferences"))),
        ("apps", "deployments", "scale", ()),
        ("", "configmaps", "", ()),
        ("", "namespaces", "", (("status",), ("spec", "finalizers"))),
        ("", "namespaces", "status", (("spec",),)),
        ("", "namespaces", "finalize", ()),
    ],
)
def test_each_routes_strategy_declares_its_reset_fields(
    group: str, plural: str, subresource: str, reset: ResetFields
) -> None:
    assert _reset(group, plural, subresource) == reset


def test_a_namespace_write_owns_no_spec_finalizers() -> None:
    namespaces = build_registry().lookup("", "namespaces")
    assert namespaces is not None
    fm = field_manager(namespaces, "", _reset("", "namespaces", ""))
    meta = {"name": "a", "labels": {"x": "y"}}
    new = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta,
           "spec": {"finalizers": ["kubernetes"]}}  # fmt: skip
    entries = fm.update(None, new, "kubectl", sent=None)
    assert entries is not None
    owned = entries[0]["fieldsV1"]
    assert "f:spec" not in owned and "f:labels" in owned["f:metadata"]
