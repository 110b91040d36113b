"""The REST storages of the built-in kinds' subresources that are not the object itself
(upstream's ``pkg/registry/<group>/<kind>/storage``): ``scale`` of the scalable kinds
and ``pods/binding``. ``status`` and ``finalize`` are the resource's own store with the
subresource's strategy (``proxy.kube.strategy``)."""

from __future__ import annotations

from proxy.kube.binding import BindingREST
from proxy.kube.scale import SPEC_REPLICAS
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import SubresourceStorage
from proxy.registry.scale import ScaleREST
from proxy.registry.store import Store

__all__ = ["subresource_storage"]


def subresource_storage(
    resource: ResourceInfo, subresource: str, store: Store
) -> SubresourceStorage | None:
    """The storage of ``resource``'s ``subresource`` over the resource's ``store``; None
    where the resource's own store serves it."""
    if subresource == "scale":
        return ScaleREST(store, SPEC_REPLICAS)
    if subresource == "binding" and (resource.group, resource.plural) == ("", "pods"):
        return BindingREST(store)
    return None
