"""The Service REST storage, after kube-apiserver's
``pkg/registry/core/service/storage/storage.go``: the generic store with the hooks that
allocate (``beginCreate``, ``beginUpdate``) and release (``afterDelete``) ClusterIPs
(``proxy.kube.service.alloc``).

Allocation happens before the strategy runs, as upstream's BeginCreate runs before
BeforeCreate; a write that fails afterwards (validation, admission, a conflict) gives
back what it allocated. A Service that is removed (DELETE, a delete collection, or the
update that lifts its last finalizer) releases its addresses, and its Endpoints are
deleted with it, as upstream's afterDelete does.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from proxy import apierrors
from proxy.kube.service.alloc import (
    Allocators,
    Transaction,
    normalize_cluster_ips,
    patch_allocated_values,
)
from proxy.registry import deletion
from proxy.registry.rest import (
    Context,
    Strategy,
    UpdatedObjectInfo,
    ValidateDeleteFunc,
    ValidateObjectFunc,
    ValidateObjectUpdateFunc,
)
from proxy.registry.storage_factory import ResourceStorage
from proxy.registry.store import Store
from proxy.request.delete_options import DeleteOptions
from storage.interfaces import JSONObject, ListOptions, ListResult, StoredObject

__all__ = ["ServiceREST", "StoreIPAddresses"]

# (namespace, name): delete the Service's Endpoints (absent is fine)
DeleteEndpoints = Callable[[str, str], Awaitable[None]]


class ServiceREST(Store):
    """``services`` (and ``services/status``, which can remove a Service too)."""

    def __init__(
        self,
        rs: ResourceStorage,
        strategy: Strategy,
        alloc: Allocators,
        delete_endpoints: DeleteEndpoints,
        *,
        lifecycle: bool = False,
        allocate: bool = True,
    ) -> None:
        super().__init__(rs, strategy, lifecycle=lifecycle)
        self.alloc = alloc
        self.delete_endpoints = delete_endpoints
        self.allocate = allocate  # False: the status subresource (spec is not its)

    async def create_object(
        self,
        ctx: Context,
        obj: JSONObject,
        create_validation: ValidateObjectFunc,
        *,
        managed: Callable[[JSONObject], JSONObject] | None = None,
    ) -> StoredObject:
        normalize_cluster_ips(obj, None)
        txn = await self.alloc.allocate_create(obj, dry_run=ctx.dry_run)
        try:
            stored = await super().create_object(ctx, obj, create_validation, managed=managed)
        except BaseException:
            await txn.revert()
            raise
        await txn.commit()
        return stored

    async def update_object(
        self,
        ctx: Context,
        name: str,
        obj_info: UpdatedObjectInfo,
        create_validation: ValidateObjectFunc,
        update_validation: ValidateObjectUpdateFunc,
        *,
        force_allow_create: bool = False,
    ) -> tuple[StoredObject, bool]:
        allocating = _Allocating(obj_info, self.alloc) if self.allocate else None
        try:
            stored, created = await super().update_object(
                ctx, name, allocating or obj_info, create_validation, update_validation,
                force_allow_create=force_allow_create,
            )  # fmt: skip
        except BaseException:
            if allocating is not None:
                await allocating.txn.revert()
            raise
        if allocating is not None:
            await allocating.txn.commit()
        if deletion.should_delete_during_update(self.strategy.deletion, stored.obj):  # removed
            await self._after_delete(ctx, stored.obj)
        return stored, created

    async def delete_object(
        self,
        ctx: Context,
        name: str,
        delete_validation: ValidateDeleteFunc,
        options: DeleteOptions,
    ) -> tuple[StoredObject, bool]:
        stored, removed = await super().delete_object(ctx, name, delete_validation, options)
        if removed:
            await self._after_delete(ctx, stored.obj)
        return stored, removed

    async def delete_collection(
        self,
        namespace: str,
        opts: ListOptions,
        *,
        dry_run: bool = False,
        options: DeleteOptions | None = None,
    ) -> tuple[ListResult, builtins.list[StoredObject]]:
        listed, deleted = await super().delete_collection(
            namespace, opts, dry_run=dry_run, options=options
        )
        for item in deleted:
            if not (item.obj.get("metadata") or {}).get("finalizers"):
                await self._after_delete(Context(namespace=namespace, dry_run=dry_run), item.obj)
        return listed, deleted

    async def _after_delete(self, ctx: Context, svc: JSONObject) -> None:
        """``afterDelete``: the Endpoints go, the addresses are released."""
        if ctx.dry_run:
            return
        meta = svc.get("metadata") or {}
        await self.delete_endpoints(str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        await self.alloc.release_allocated(svc)


@dataclass
class _Allocating:
    """The update's new object with ``beginUpdate`` applied; each retry of the
    optimistic loop gives back what the previous attempt allocated first."""

    inner: UpdatedObjectInfo
    alloc: Allocators
    txn: Transaction = field(default_factory=Transaction)

    async def updated_object(self, ctx: Context, current: JSONObject) -> JSONObject:
        await self.txn.revert()
        self.txn = Transaction()
        new = await self.inner.updated_object(ctx, current)
        if not current:  # server-side apply creating it
            normalize_cluster_ips(new, None)
            self.txn = await self.alloc.allocate_create(new, dry_run=ctx.dry_run)
            return new
        patch_allocated_values(new, current)
        normalize_cluster_ips(new, current)
        self.txn = await self.alloc.allocate_update(new, current, dry_run=ctx.dry_run)
        return new

    def managed(self, current: JSONObject, prepared: JSONObject) -> JSONObject:
        return self.inner.managed(current, prepared)


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
