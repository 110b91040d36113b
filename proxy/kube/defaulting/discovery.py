"""The discovery.k8s.io group's defaults (``pkg/apis/discovery/v1/defaults.go``)."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, default_nil, dicts

__all__ = ["DEFAULTERS"]


def endpoint_slice(obj: JSON) -> None:
    """``SetDefaults_EndpointPort``: a port's name is "" and its protocol TCP."""
    for port in dicts(obj, "ports"):
        default_nil(port, "name", "")
        default_nil(port, "protocol", "TCP")


DEFAULTERS: dict[str, Callable[[JSON], None]] = {"EndpointSlice": endpoint_slice}
