"""Wiring of API Priority and Fairness into the server (upstream's
``BuildPriorityAndFairness`` and its post-start hooks): the controller, the bootstrap
ensurer, the object counts the list work estimator reads, the filter, the debug
routes. ``FlowControl.build(settings)`` returns None when
``--enable-priority-and-fairness=false`` (the max-in-flight filter then applies)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.typedefs import Middleware

from proxy.flowcontrol import filter as apf_filter
from proxy.flowcontrol.apf_controller import RESOURCES, APFController
from proxy.flowcontrol.config_producer import (
    CONFIG_PRODUCER_HOOK,
    GROUP,
    ensure_bootstrap_configuration,
)
from proxy.flowcontrol.debug import setup_apf_debug_routes
from proxy.flowcontrol.work_estimator import Stats, estimate_seats, served_from_cache
from proxy.informer import SharedInformerFactory
from proxy.options.settings import Settings
from proxy.registry.storage_factory import ResourceStorage
from proxy.request.request_info import RequestInfo
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks

__all__ = ["FlowControl"]

log = logging.getLogger("watchcache.flowcontrol")

COUNT_SECONDS = 10.0


@dataclass
class FlowControl:
    settings: Settings
    controller: APFController
    # (group, resource) -> storage; set at start-up (storages are built then)
    storage_of: Callable[[str, str], ResourceStorage | None] | None = None
    # uncached resources' etcd counts, refreshed by a task for those asked about
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    wanted: set[tuple[str, str]] = field(default_factory=set)
    _storages: dict[tuple[str, str], ResourceStorage] = field(default_factory=dict)

    @classmethod
    def build(cls, settings: Settings) -> FlowControl | None:
        if not settings.enable_priority_and_fairness:
            return None
        total = settings.max_requests_inflight + settings.max_mutating_requests_inflight
        return cls(settings, APFController(None, max(total, 1)))

    # ------------------------------------------------------------------ seats

    def _storage(self, group: str, resource: str) -> ResourceStorage | None:
        """The resource's storage, looked up once (storages never change once built)."""
        found = self._storages.get((group, resource))
        if found is None and self.storage_of is not None:
            found = self.storage_of(group, resource)
            if found is not None:
                self._storages[(group, resource)] = found
        return found

    def stats(self, group: str, resource: str) -> Stats | None:
        """Stored objects of a resource: the watch cache's size and bytes, else the
        last etcd count (no sizes; None until one is known: the estimator then charges
        the maximum)."""
        rs = self._storage(group, resource)
        cacher = getattr(rs.store, "cacher", None) if rs is not None else None
        if cacher is not None:
            count = len(cacher.cache)
            return Stats(count, cacher.cache.object_bytes // count if count else 0)
        self.wanted.add((group, resource))
        counted = self.counts.get((group, resource))
        return None if counted is None else Stats(counted)

    def _from_cache(self, info: RequestInfo, query: Mapping[str, str]) -> bool:
        rs = self._storage(info.group, info.resource)
        cached = rs is not None and getattr(rs.store, "cacher", None) is not None
        gates = self.settings.feature_gates
        return served_from_cache(query, cached, gates.get("ConsistentListFromCache", False))

    def seats(self, info: RequestInfo, query: Mapping[str, str], level_max: int = 0) -> int:
        size_based = self.settings.feature_gates.get("SizeBasedListCostEstimate", True)
        return estimate_seats(info, query, self.stats, self._from_cache, size_based, level_max)

    async def _count_forever(self) -> None:
        while True:
            for group, resource in list(self.wanted):
                rs = self._storage(group, resource)
                if rs is None:
                    continue
                try:
                    self.counts[(group, resource)] = await rs.store.count(rs.list_key(""))
                except Exception as e:  # etcd down: keep the last count
                    log.debug("counting %s: %s", resource, e)
            await asyncio.sleep(COUNT_SECONDS)

    # ------------------------------------------------------------------ wiring

    def middleware(self) -> Middleware:
        return apf_filter.apf_middleware(self.controller, self.seats, self.settings.request_timeout)

    def install(
        self,
        app: web.Application,
        storage_of: Callable[[str, str], ResourceStorage | None],
        hooks: PostStartHooks,
        informers: SharedInformerFactory,
    ) -> None:
        """Debug routes, the response hook, and the post-start hooks: the controller
        (``priority-and-fairness-filter``), the object counter, and the bootstrap
        configuration (``priority-and-fairness-config-producer``; not with
        --system-namespaces=false, which keeps etcd untouched)."""
        self.storage_of = storage_of
        app.on_response_prepare.append(apf_filter.on_response_prepare)
        setup_apf_debug_routes(app, self.controller)

        async def controller(hook: PostStartHookContext) -> None:
            if self._config_storages() is not None:
                self.controller.client = hook.loopback
                if self.controller.informers is None:  # once, not at each restart
                    self.controller.watch({p: informers.informer_for(GROUP, p) for p in RESOURCES})
            await self.controller.run()

        async def counts(hook: PostStartHookContext) -> None:
            await self._count_forever()

        async def producer(hook: PostStartHookContext) -> None:
            if self._config_storages() is not None:
                await ensure_bootstrap_configuration(hook.loopback)

        hooks.add("priority-and-fairness-filter", controller, ready=self._controller_synced)
        hooks.add("storage-object-count-tracker-hook", counts, ready=lambda: True)
        if self.settings.system_namespaces:
            hooks.add(CONFIG_PRODUCER_HOOK, producer)

    def _config_storages(self) -> dict[str, ResourceStorage] | None:
        """The FlowSchemas' and priority levels' storages, None unless both are served."""
        found = {p: self._storage(GROUP, p) for p in RESOURCES}
        storages = {p: rs for p, rs in found.items() if rs is not None}
        return storages if len(storages) == len(RESOURCES) else None

    def _controller_synced(self) -> bool:
        return self.controller.informers is None or self.controller.synced.is_set()
