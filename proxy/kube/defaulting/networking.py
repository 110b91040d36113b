"""The networking.k8s.io group's defaults (``pkg/apis/networking/v1/defaults.go``)."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, child, default_nil, dicts, member

__all__ = ["DEFAULTERS"]


def network_policy(obj: JSON) -> None:
    """``SetDefaults_NetworkPolicy`` (policyTypes: Ingress, and Egress with egress
    rules) and ``SetDefaults_NetworkPolicyPort`` (protocol TCP)."""
    spec = child(obj, "spec")
    if spec is None:
        return
    for direction in ("ingress", "egress"):
        for rule in dicts(spec, direction):
            for port in dicts(rule, "ports"):
                default_nil(port, "protocol", "TCP")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])


def ingress_class(obj: JSON) -> None:
    """``SetDefaults_IngressClass``: parameters are cluster-scoped unless said."""
    spec = member(obj, "spec")
    parameters = member(spec, "parameters") if spec is not None else None
    if parameters is not None:
        default_nil(parameters, "scope", "Cluster")


DEFAULTERS: dict[str, Callable[[JSON], None]] = {
    "NetworkPolicy": network_policy,
    "IngressClass": ingress_class,
}
