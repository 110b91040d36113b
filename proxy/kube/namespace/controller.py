"""The namespace controller (kube-controller-manager's ``NamespaceController``): a
namespace being deleted is emptied in the background, then its ``kubernetes``
finalizer is lifted through ``/finalize``, after which the server removes it.

A DELETE of a namespace only marks it (``deletionTimestamp``, ``status.phase:
Terminating``, see proxy/registry/deletion.py) and answers at once, as kube-apiserver's;
emptying a namespace of thousands of objects then never holds a request or its
deadline. The server runs this controller itself (a post-start hook, in the Lease
holder alone with ``--workers``) because ``watchcache serve`` stands alone: nothing
else would ever finish a deletion. ``--lifecycle-controllers=true`` says a controller
manager does (the lab's simulated one, or kube-controller-manager), and then this one
does not run.

As upstream's: the namespaces' shared informer enqueues each namespace with a
``deletionTimestamp``; a sync (two workers, upstream's ``--concurrent-namespace-syncs``
is 10) sets ``Terminating`` if it is not, deletes all content
(:mod:`proxy.kube.namespace.deletion`), writes the conditions, and either looks again
after half the estimate (objects held by finalizers) or finalizes. A failed sync is
retried with the queue's backoff. Every namespace is looked at again every 5 minutes
(``namespaceSyncPeriod``), so content created around a race is not left behind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from proxy.endpoints.context import APIContext
from proxy.informer import DeletedFinalStateUnknown, EventHandlers, WorkQueue, run_workers
from proxy.kube.namespace.deletion import (
    ContentTotals,
    deletable_resources,
    delete_all_content,
    update_conditions,
)
from proxy.loopback.client import LoopbackClient, resource_path
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks

__all__ = ["FINALIZER", "NAMESPACE_CONTROLLER_HOOK", "NamespaceController", "add_hook"]

log = logging.getLogger("watchcache.controller")

JSON = dict[str, Any]
FINALIZER = "kubernetes"  # the token this controller owns in spec.finalizers
NAMESPACE_CONTROLLER_HOOK = "start-namespace-controller"
RESYNC_SECONDS = 300.0
WORKERS = 2


def _name(obj: JSON | DeletedFinalStateUnknown) -> str:
    obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
    return str((obj.get("metadata") or {}).get("name") or "")


def _path(name: str, sub: str = "") -> str:
    return resource_path("", "v1", "namespaces", name=name, sub=sub)


class NamespaceController:
    """Finishes the deletion of every namespace (see the module docstring)."""

    def __init__(self, ctx: APIContext) -> None:
        self.ctx = ctx
        self.informer = ctx.informers.informer_for("", "namespaces")
        self.queue: WorkQueue[str] = WorkQueue("namespace")
        self.synced = asyncio.Event()
        self.client: LoopbackClient | None = None
        self.informer.add_event_handler(EventHandlers(
            on_add=self._enqueue, on_update=lambda old, new: self._enqueue(new)))  # fmt: skip

    def _enqueue(self, ns: JSON) -> None:
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            self.queue.add(_name(ns))

    async def run(self, client: LoopbackClient) -> None:
        """Run until cancelled; the namespace's own writes go through ``client``."""
        self.client = client
        await self.informer.wait_for_sync()
        self.synced.set()
        resync = asyncio.create_task(self._resync(), name="namespace-controller-resync")
        try:
            await run_workers("namespace-controller", self.queue, self.sync, WORKERS)
        finally:
            resync.cancel()
            self.queue.shut_down()

    def resync(self) -> None:
        """Look at every namespace being deleted again (a worker taking the Lease over
        catches up with what the previous holder left)."""
        for key in self.informer.indexer.list_keys():
            ns = self.informer.indexer.get_by_key(key)
            if ns is not None:
                self._enqueue(ns)

    async def _resync(self) -> None:
        while True:
            self.resync()
            await asyncio.sleep(RESYNC_SECONDS)

    def _client(self) -> LoopbackClient:
        assert self.client is not None, "run() sets the client"
        return self.client

    async def sync(self, name: str) -> None:
        """``namespacedResourcesDeleter.Delete`` of one namespace."""
        ns = self.informer.indexer.get_by_key(name)
        if ns is None or not (ns.get("metadata") or {}).get("deletionTimestamp"):
            return
        if not await self._mark_terminating(name):
            return  # gone meanwhile
        stores = [(r, self.ctx.store(r)) for r in deletable_resources(self.ctx.registry)]
        totals = await delete_all_content(name, stores, self._client())
        await self._write_conditions(name, totals)
        if totals.errors:
            raise RuntimeError("; ".join(totals.errors))
        if totals.estimate:
            log.info("namespace %s: content remains (%s), again in %d s", name,
                     dict(totals.finalizers), totals.estimate // 2)  # fmt: skip
            self.queue.add_after(name, totals.estimate / 2)
            return
        await self._finalize(name)

    async def _mark_terminating(self, name: str) -> bool:
        """``updateNamespaceStatusFunc``: phase Terminating (the DELETE already wrote it;
        a namespace marked some other way gets it here). False when it is gone."""

        def terminating(ns: JSON) -> JSON | None:
            status = ns.setdefault("status", {})
            if status.get("phase") == "Terminating":
                return None
            status["phase"] = "Terminating"
            return ns

        return await self._update(_path(name, "status"), terminating) is not None

    async def _write_conditions(self, name: str, totals: ContentTotals) -> None:
        def conditions(ns: JSON) -> JSON | None:
            status = ns.setdefault("status", {})
            old = list(status.get("conditions") or [])
            new = update_conditions(old, totals)
            if new == old:
                return None
            status["conditions"] = new
            return ns

        await self._update(_path(name, "status"), conditions)

    async def _finalize(self, name: str) -> None:
        """``finalizeNamespace``: lift this controller's token (the server removes the
        namespace once ``spec.finalizers`` is empty)."""

        def lift(ns: JSON) -> JSON | None:
            spec = ns.setdefault("spec", {})
            finalizers = list(spec.get("finalizers") or [])
            if FINALIZER not in finalizers:
                return None
            spec["finalizers"] = [f for f in finalizers if f != FINALIZER]
            return ns

        if await self._update(_path(name), lift, write=_path(name, "finalize")) is not None:
            log.info("namespace %s: emptied and finalized", name)

    async def _update(
        self, path: str, mutate: Callable[[JSON], JSON | None], write: str | None = None
    ) -> JSON | None:
        return await self._client().update(path, mutate, write_path=write)


def add_hook(hooks: PostStartHooks, ctx: APIContext) -> NamespaceController:
    """The controller as the post-start hook ``start-namespace-controller``: up once its
    informer has synced; with ``--workers``, in the Lease holder alone (a run-once
    controller, as kube-controller-manager's under its own leader election)."""
    controller = NamespaceController(ctx)
    hooks.on_leading(controller.resync)

    async def run(hook: PostStartHookContext) -> None:
        await controller.run(hook.loopback)

    hooks.add(NAMESPACE_CONTROLLER_HOOK, run, ready=controller.synced.is_set, elected=True)
    return controller
