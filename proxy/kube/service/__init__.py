"""Services' REST storage and what it allocates (upstream's
``pkg/registry/core/service``): ClusterIPs over IPAddress objects (``ipallocator``),
the allocation rules of a write (``alloc``), and the storage that applies them
(``storage``); ``service_stores`` is what the composition root installs."""

from __future__ import annotations

from collections.abc import Callable

from proxy import apierrors
from proxy.kube.service.alloc import Allocators
from proxy.kube.service.ipallocator import IPAllocator
from proxy.kube.service.storage import ServiceREST, StoreIPAddresses
from proxy.registry.resources import ResourceInfo
from proxy.registry.store import Store
from proxy.server.context import APIContext

__all__ = ["service_stores"]

CustomStores = Callable[[ResourceInfo, str, Store], Store | None]


def service_stores(ctx: APIContext, service_cidr: str) -> CustomStores:
    """``services`` and ``services/status`` as :class:`ServiceREST` over ``ctx``'s
    stores, allocating from ``service_cidr`` (``--service-cluster-ip-range``)."""
    registry = ctx.registry
    ip_resource = registry.get("networking.k8s.io", "v1", "ipaddresses")
    endpoints = registry.get("", "v1", "endpoints")
    if ip_resource is None:
        return lambda resource, sub, store: None
    alloc = Allocators(IPAllocator(service_cidr, StoreIPAddresses(lambda: ctx.store(ip_resource))))

    async def delete_endpoints(namespace: str, name: str) -> None:
        if endpoints is None:
            return
        try:
            await ctx.store(endpoints).delete(namespace, name)
        except apierrors.StatusError as e:
            if e.code != 404:
                raise

    def custom(resource: ResourceInfo, subresource: str, store: Store) -> Store | None:
        if (resource.group, resource.plural) != ("", "services"):
            return None
        return ServiceREST(
            store.rs, store.strategy, alloc, delete_endpoints,
            lifecycle=store.lifecycle, allocate=subresource == "",
        )  # fmt: skip

    return custom
