"""Shared informers: one reflector and one indexer per resource, however many
controllers read it (client-go's ``SharedIndexInformer`` and ``SharedInformerFactory``).

Delivery contract: the reflector's every change is applied to the indexer and then,
synchronously and in order, handed to every registered handler, before the next change
is applied; so a handler that reads the indexer sees the state its event describes, and
a reader on the event loop never sees the indexer ahead of the handlers. Handlers must
be quick and never await: they enqueue a key (or update a small derived view) and
return; the work happens in a controller's workers. A handler that raises is logged and
the others still run.

- ``on_add(obj)``: a new key (also: every object already held, to a handler registered
  after the informer synced, as client-go replays its store).
- ``on_update(old, new)``: a changed key; at a relist every key still present is
  updated, changed or not (upstream's Replaced deltas), so handlers compare if they care.
- ``on_delete(obj)``: a deleted key; a key found gone at a relist is delivered as a
  ``DeletedFinalStateUnknown`` holding the last state this informer had.

``has_synced()`` is true once the first LIST has been applied and delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from cacher.clock import Clock, RealClock
from proxy.apimachinery.wait import SupervisedTask
from proxy.informer.indexer import (
    DeletedFinalStateUnknown,
    Indexer,
    IndexFunc,
    KeyFunc,
    meta_namespace_key,
)
from proxy.informer.lister_watcher import ListerWatcher
from proxy.informer.reflector import Reflector
from storage.interfaces import JSONObject

__all__ = [
    "EventHandlers",
    "NotServed",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "wait_for_cache_sync",
]

log = logging.getLogger("watchcache.informer")

Deleted = JSONObject | DeletedFinalStateUnknown


@dataclass(frozen=True)
class EventHandlers:
    """client-go's ``ResourceEventHandlerFuncs``: any of the three may be left out."""

    on_add: Callable[[JSONObject], None] | None = None
    on_update: Callable[[JSONObject, JSONObject], None] | None = None
    on_delete: Callable[[Deleted], None] | None = None

    @classmethod
    def each(cls, handler: Callable[[Deleted], None]) -> EventHandlers:
        """The same ``handler(obj)`` for all three (the new object for an update)."""
        return cls(on_add=handler, on_update=lambda old, new: handler(new), on_delete=handler)


class SharedIndexInformer:
    """One resource's reflector, indexer and handlers (see the module docstring)."""

    def __init__(
        self,
        name: str,
        lister_watcher: ListerWatcher,
        *,
        key_func: KeyFunc = meta_namespace_key,
        indexers: dict[str, IndexFunc] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self.indexer = Indexer(key_func, indexers)
        self.reflector = Reflector(name, lister_watcher, self, clock=clock or RealClock())
        self._handlers: list[EventHandlers] = []
        self._synced = asyncio.Event()
        self._running = False

    # -- consumers
    def add_event_handler(self, handlers: EventHandlers) -> Callable[[], None]:
        """Register ``handlers``; returns the function that removes them."""
        self._handlers.append(handlers)
        if self.has_synced() and handlers.on_add is not None:
            for obj in self.indexer.list():
                self._call(handlers.on_add, obj)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._handlers.remove(handlers)

        return remove

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        self.indexer.add_indexers(indexers)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    async def run(self) -> None:
        """Run the reflector until cancelled (one run at a time)."""
        if self._running:
            raise RuntimeError(f"informer {self.name} is already running")
        self._running = True
        try:
            await self.reflector.run()
        finally:
            self._running = False

    # -- ReflectorStore: apply, then deliver
    def replace(self, items: list[JSONObject], resource_version: str) -> None:
        key_func = self.indexer.key_func
        fresh = {key_func(o): o for o in items}
        gone = [(k, o) for k in self.indexer.list_keys()
                if k not in fresh and (o := self.indexer.get_by_key(k)) is not None]  # fmt: skip
        for key, obj in gone:
            self.indexer.delete_key(key)
            self._deliver_delete(DeletedFinalStateUnknown(key, obj))
        for obj in fresh.values():
            old = self.indexer.add(obj)
            if old is None:
                self._deliver_add(obj)
            else:
                self._deliver_update(old, obj)
        self._synced.set()

    def add(self, obj: JSONObject) -> None:
        old = self.indexer.add(obj)
        if old is None:
            self._deliver_add(obj)
        else:  # an ADDED for a key held (a replayed event): an update, as client-go's
            self._deliver_update(old, obj)

    update = add

    def delete(self, obj: JSONObject) -> None:
        self.indexer.delete(obj)
        self._deliver_delete(obj)

    def _deliver_add(self, obj: JSONObject) -> None:
        for h in list(self._handlers):
            if h.on_add is not None:
                self._call(h.on_add, obj)

    def _deliver_update(self, old: JSONObject, new: JSONObject) -> None:
        for h in list(self._handlers):
            if h.on_update is not None:
                self._call(h.on_update, old, new)

    def _deliver_delete(self, obj: Deleted) -> None:
        for h in list(self._handlers):
            if h.on_delete is not None:
                self._call(h.on_delete, obj)

    def _call(self, func: Callable[..., None], *args: object) -> None:
        try:
            func(*args)
        except Exception:  # one handler's bug must not starve the others
            log.exception("informer %s: event handler failed", self.name)


async def wait_for_cache_sync(*informers: SharedIndexInformer) -> None:
    """Until every informer has synced (client-go's ``WaitForCacheSync``, unbounded:
    cancel the caller to give up)."""
    for informer in informers:
        await informer.wait_for_sync()


class NotServed(LookupError):
    """The factory has no lister-watcher for the resource (it is not served)."""


GroupResource = tuple[str, str]


class SharedInformerFactory:
    """One ``SharedIndexInformer`` per (group, resource), shared by every controller.

    ``lister_watcher_for(group, resource)`` gives the resource's lister-watcher, or None
    when the resource is not served. ``start()`` runs every informer asked for so far
    and, from then on, each new one as it is asked for; ``shutdown()`` cancels and
    awaits them. The factory owns those tasks, supervised (``proxy.apimachinery.wait``):
    a reflector only ends by cancellation, so one that dies of a bug is logged and run
    again after a backoff, and ``not_synced()`` names it meanwhile (readyz's
    ``informer-sync``).
    """

    def __init__(
        self,
        lister_watcher_for: Callable[[str, str], ListerWatcher | None],
        *,
        clock: Clock | None = None,
    ) -> None:
        self._lister_watcher_for = lister_watcher_for
        self.clock = clock or RealClock()
        self._informers: dict[GroupResource, SharedIndexInformer] = {}
        self._tasks: dict[GroupResource, SupervisedTask] = {}
        self._started = False

    def informer_for(
        self, group: str, resource: str, *, indexers: dict[str, IndexFunc] | None = None
    ) -> SharedIndexInformer:
        """The shared informer of ``group``/``resource`` (created on first use; its
        ``indexers`` added to those others asked for). NotServed if there is none."""
        informer = self._informers.get((group, resource))
        if informer is None:
            lw = self._lister_watcher_for(group, resource)
            if lw is None:
                raise NotServed(f"{resource}.{group}" if group else resource)
            name = f"{resource}.{group}" if group else resource
            informer = SharedIndexInformer(name, lw, clock=self.clock)
            self._informers[(group, resource)] = informer
            if self._started:
                self._start_one((group, resource), informer)
        held = informer.indexer.index_names()
        new = {n: f for n, f in (indexers or {}).items() if n not in held}
        if new:
            informer.add_indexers(new)
        return informer

    def informers(self) -> dict[GroupResource, SharedIndexInformer]:
        return dict(self._informers)

    def start(self) -> None:
        """Run every informer not yet running (needs the event loop; idempotent)."""
        self._started = True
        for gr, informer in self._informers.items():
            if gr not in self._tasks:
                self._start_one(gr, informer)

    def _start_one(self, gr: GroupResource, informer: SharedIndexInformer) -> None:
        task = SupervisedTask(
            f"informer-{informer.name}", informer.run, ready=informer.has_synced, clock=self.clock
        )
        self._tasks[gr] = task
        task.start()

    def not_synced(self) -> list[str]:
        """The informers not synced yet, or down after a crash (upstream's
        ``informer-sync`` readyz check lists them)."""
        return sorted(
            i.name for gr, i in self._informers.items()
            if not i.has_synced() or (gr in self._tasks and self._tasks[gr].crashed)
        )  # fmt: skip

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self._informers.values())

    async def wait_for_cache_sync(self) -> None:
        await wait_for_cache_sync(*self._informers.values())

    async def shutdown(self) -> None:
        """Cancel every informer and wait for them to end."""
        self._started = False
        tasks, self._tasks = list(self._tasks.values()), {}
        for task in tasks:
            await task.stop()
