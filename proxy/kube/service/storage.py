"""The Service REST storage, after kube-apiserver's
``pkg/registry/core/service/storage/storage.go``: the generic store with the hooks that
allocate (``beginCreate``, ``beginUpdate``) and release (``afterDelete``) ClusterIPs and
NodePorts (``proxy.kube.service.alloc``), set on the generic store as upstream sets
them on its ``genericregistry.Store`` (``proxy.registry.hooks``).

Allocation happens before the strategy runs, as upstream's BeginCreate runs before
BeforeCreate; a write that fails afterwards (validation, admission, a conflict) gives
back what it allocated. A Service that is removed (DELETE, a delete collection, or the
update that lifts its last finalizer) releases its addresses, and its Endpoints are
deleted with it, as upstream's afterDelete does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from proxy import apierrors
from proxy.kube.service.alloc import (
    Allocators,
    Transaction,
    normalize_cluster_ips,
    patch_allocated_values,
)
from proxy.registry.rest import Context
from proxy.registry.store import Store
from storage.interfaces import JSONObject, ListOptions

__all__ = ["ServiceHooks", "StoreIPAddresses"]

# (namespace, name): delete the Service's Endpoints (absent is fine)
DeleteEndpoints = Callable[[str, str], Awaitable[None]]


@dataclass(frozen=True)
class ServiceHooks:
    """``services``' hooks on the generic store (and ``services/status``', which
    allocates nothing, the spec not being its, but can remove a Service too)."""

    alloc: Allocators
    delete_endpoints: DeleteEndpoints
    allocate: bool = True  # False: the status subresource

    async def begin_create(self, ctx: Context, obj: JSONObject) -> Transaction:
        if not self.allocate:
            return Transaction()
        normalize_cluster_ips(obj, None)
        return await self.alloc.allocate_create(obj, dry_run=ctx.dry_run)

    async def begin_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> Transaction:
        if not self.allocate:
            return Transaction()
        patch_allocated_values(new, old)
        normalize_cluster_ips(new, old)
        return await self.alloc.allocate_update(new, old, dry_run=ctx.dry_run)

    async def after_delete(self, ctx: Context, obj: JSONObject) -> None:
        """``afterDelete``: the Endpoints go, the addresses are released."""
        if ctx.dry_run:
            return
        meta = obj.get("metadata") or {}
        await self.delete_endpoints(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        await self.alloc.release_allocated(obj)


@dataclass
class StoreIPAddresses:
    """IPAddress objects through the ``ipaddresses`` store (what upstream's allocator
    writes through its loopback client): created with the strategy's metadata, listed
    from the watch cache (``resourceVersion=0``, the informer's view)."""

    store: Callable[[], Store]

    async def allocated(self) -> set[str]:
        listed = await self.store().list("", ListOptions(resource_version="0"))
        return {str((i.obj.get("metadata") or {}).get("name")) for i in listed.items}

    async def create(self, obj: JSONObject) -> bool:
        async def no_admission(_: JSONObject) -> None:
            return None

        try:
            await self.store().create_object(Context(), obj, no_admission)
        except apierrors.StatusError as e:
            if e.code == 409:  # AlreadyExists: another writer holds the address
                return False
            raise
        return True

    async def delete(self, name: str) -> None:
        try:
            await self.store().delete("", name)
        except apierrors.StatusError as e:
            if e.code != 404:
                raise
