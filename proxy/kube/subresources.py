"""The REST storages of the built-in kinds' subresources that are not the object itself
(upstream's ``pkg/registry/<group>/<kind>/storage``): ``scale`` of the scalable kinds,
``pods/binding`` and ``pods/eviction``. ``status``, ``finalize`` and a CSR's
``approval`` are the resource's own store with the subresource's strategy
(``proxy.kube.strategy``)."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.binding import BindingREST
from proxy.kube.eviction import EvictionREST
from proxy.kube.scale import SPEC_REPLICAS
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import SubresourceStorage
from proxy.registry.scale import ScaleREST
from proxy.registry.store import Store

__all__ = ["StoreLookup", "subresource_storage"]

# (group, plural, subresource) -> the generic store of another served resource (the
# eviction storage writes PodDisruptionBudgets); None where it is not served
StoreLookup = Callable[[str, str, str], Store | None]


def subresource_storage(
    resource: ResourceInfo, subresource: str, store: Store, stores: StoreLookup | None = None
) -> SubresourceStorage | None:
    """The storage of ``resource``'s ``subresource`` over the resource's ``store``; None
    where the resource's own store serves it."""
    if subresource == "scale":
        return ScaleREST(store, SPEC_REPLICAS)
    if (resource.group, resource.plural) != ("", "pods"):
        return None
    if subresource == "binding":
        return BindingREST(store)
    if subresource == "eviction" and stores is not None:
        pod_status = stores("", "pods", "status")
        pdbs = stores("policy", "poddisruptionbudgets", "")
        pdb_status = stores("policy", "poddisruptionbudgets", "status")
        if pod_status is not None and pdbs is not None and pdb_status is not None:
            return EvictionREST(store, pod_status, pdbs, pdb_status)
    return None
