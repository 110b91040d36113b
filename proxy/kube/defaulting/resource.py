"""The resource.k8s.io group's defaults (``pkg/apis/resource/v1/defaults.go``): device
requests (ExactCount of one) and tolerations (operator Equal)."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, default_zero, dicts, member

__all__ = ["DEFAULTERS"]


def _exact(request: JSON) -> None:
    """``SetDefaults_ExactDeviceRequest`` / ``SetDefaults_DeviceSubRequest`` and
    ``SetDefaults_DeviceToleration``."""
    default_zero(request, "allocationMode", "ExactCount")
    if request["allocationMode"] == "ExactCount":
        default_zero(request, "count", 1)
    for toleration in dicts(request, "tolerations"):
        default_zero(toleration, "operator", "Equal")


def _claim_spec(spec: JSON | None) -> None:
    devices = member(spec, "devices") if spec is not None else None
    for request in dicts(devices, "requests"):
        if (exactly := member(request, "exactly")) is not None:
            _exact(exactly)
        for sub in dicts(request, "firstAvailable"):
            _exact(sub)


def resource_claim(obj: JSON) -> None:
    _claim_spec(member(obj, "spec"))


def resource_claim_template(obj: JSON) -> None:
    spec = member(obj, "spec")
    _claim_spec(member(spec, "spec") if spec is not None else None)


DEFAULTERS: dict[str, Callable[[JSON], None]] = {
    "ResourceClaim": resource_claim,
    "ResourceClaimTemplate": resource_claim_template,
}
