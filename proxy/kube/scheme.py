"""What kube's kinds add to the scheme the request decoder checks bodies against
(``proxy.endpoints.scheme``): the versions kube-apiserver's scheme still decodes though it
no longer serves them, and the kinds one group decodes into another's internal type."""

from __future__ import annotations

from proxy.endpoints.scheme import register_scheme

__all__ = ["SHARED_INTERNAL", "UNSERVED_VERSIONS", "register_kube_scheme"]

# Versions kube-apiserver's scheme still decodes though it no longer serves them (its
# pkg/apis/<group>/install); the catalogue knows only the served ones. A kind of the
# group is taken to exist at each of them.
UNSERVED_VERSIONS: dict[str, tuple[str, ...]] = {
    "apps": ("v1beta1", "v1beta2"),
    "autoscaling": ("v2beta1", "v2beta2"),
    "batch": ("v1beta1",),
    "policy": ("v1beta1",),
    "networking.k8s.io": ("v1beta1", "v1alpha1"),
    "rbac.authorization.k8s.io": ("v1beta1", "v1alpha1"),
    "storage.k8s.io": ("v1beta1", "v1alpha1"),
    "scheduling.k8s.io": ("v1beta1", "v1alpha1"),
    "node.k8s.io": ("v1beta1", "v1alpha1"),
    "coordination.k8s.io": ("v1beta1",),
    "discovery.k8s.io": ("v1beta1",),
    "certificates.k8s.io": ("v1beta1",),
    "admissionregistration.k8s.io": ("v1beta1", "v1alpha1"),
    "flowcontrol.apiserver.k8s.io": ("v1beta1", "v1beta2", "v1beta3"),
    "events.k8s.io": ("v1beta1",),
}
# kinds of one group decoded into another group's internal type
SHARED_INTERNAL: dict[tuple[str, str], tuple[str, str]] = {
    ("events.k8s.io", "Event"): ("", "Event"),
}


def register_kube_scheme() -> None:
    """Add kube's groups to the scheme (idempotent)."""
    register_scheme(UNSERVED_VERSIONS, SHARED_INTERNAL)
