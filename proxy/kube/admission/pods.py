"""What kube's admission plugins ask of an admission request about pods (upstream's
plugins each compare the request's GroupResource with ``api.Resource("pods")``)."""

from __future__ import annotations

from proxy.admission.attributes import Attributes

__all__ = ["is_pod"]


def is_pod(attrs: Attributes) -> bool:
    """Whether the request is on the core ``pods`` resource (or one of its
    subresources: callers check ``attrs.subresource`` themselves)."""
    return attrs.resource.group == "" and attrs.resource.plural == "pods"
