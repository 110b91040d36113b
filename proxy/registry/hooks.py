"""A resource's own steps around the generic store's writes, after the hooks of
k8s.io/apiserver's ``genericregistry.Store``: ``BeginCreate`` and ``BeginUpdate`` (run
before the strategy, handing back what finishes them once the write is known) and
``AfterDelete`` (run once an object is removed). Upstream's Service REST sets all three
to allocate and release ClusterIPs and NodePorts (``proxy.kube.service``)."""

from __future__ import annotations

from typing import Protocol

from proxy.registry.rest import Context
from storage.interfaces import JSONObject

__all__ = ["Finish", "StoreHooks"]


class Finish(Protocol):
    """What a begin hook hands back (upstream's ``FinishFunc``): ``commit`` once the
    write succeeded, ``revert`` when it failed or is tried again."""

    async def commit(self) -> None: ...

    async def revert(self) -> None: ...


class StoreHooks(Protocol):
    async def begin_create(self, ctx: Context, obj: JSONObject) -> Finish:
        """Before a create's strategy runs (``obj`` may be changed)."""
        ...

    async def begin_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> Finish:
        """Before an update's strategy runs, once per attempt of the optimistic loop
        (the previous attempt's is reverted first)."""
        ...

    async def after_delete(self, ctx: Context, obj: JSONObject) -> None:
        """Once ``obj`` is removed: by a DELETE, a delete collection, or the update that
        lifted its last finalizer."""
        ...
