"""Services' REST storage and what it allocates (upstream's
``pkg/registry/core/service``): ClusterIPs over IPAddress objects (``ipallocator``),
the allocation rules of a write (``alloc``), and the storage that applies them
(``storage``); ``service_stores`` is what the composition root installs."""

from __future__ import annotations

from collections.abc import Callable

from proxy import apierrors
from proxy.kube.service.alloc import Allocators
from proxy.kube.service.ipallocator import IPAllocator
from proxy.kube.service.node_ports import held_node_ports
from proxy.kube.service.portallocator import NodePortAllocator, parse_port_range
from proxy.kube.service.storage import ServiceHooks, StoreIPAddresses
from proxy.registry.resources import ResourceInfo
from proxy.registry.store import Store
from proxy.server.context import APIContext
from storage.interfaces import JSONObject, ListOptions

__all__ = ["service_stores"]

CustomStores = Callable[[ResourceInfo, str, Store], Store | None]


def service_stores(ctx: APIContext, service_cidr: str, node_ports: str) -> CustomStores:
    """``services`` and ``services/status`` as the generic store with
    :class:`ServiceHooks` over ``ctx``'s stores, allocating from ``service_cidr``
    (``--service-cluster-ip-range``) and ``node_ports`` (``--service-node-port-range``)."""
    registry = ctx.registry
    ip_resource = registry.get("networking.k8s.io", "v1", "ipaddresses")
    endpoints = registry.get("", "v1", "endpoints")
    if ip_resource is None:
        return lambda resource, sub, store: None
    services = registry.get("", "v1", "services")
    ip_allocator = IPAllocator(service_cidr, StoreIPAddresses(lambda: ctx.store(ip_resource)))

    async def ports_in_use(namespace: str, name: str) -> set[int]:
        """Every nodePort and healthCheckNodePort of the other stored Services (etcd)."""
        assert services is not None
        listed = await ctx.store(services).list("", ListOptions())
        return {
            port
            for item in listed.items
            if _identity(item.obj) != (namespace, name)
            for port in held_node_ports(item.obj)
        }

    ports = NodePortAllocator(parse_port_range(node_ports), ports_in_use)
    alloc = Allocators(ip_allocator, ports if services is not None else None)

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
        hooks = ServiceHooks(alloc, delete_endpoints, allocate=subresource == "")
        return Store(store.rs, store.strategy, lifecycle=store.lifecycle, hooks=hooks)

    return custom


def _identity(obj: JSONObject) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")
