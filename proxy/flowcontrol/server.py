"""Wiring of API Priority and Fairness into the server (upstream's
``BuildPriorityAndFairness`` and its post-start hooks): the controller, the bootstrap
ensurer, the object counts the list work estimator reads, the filter, the debug
routes. ``FlowControl.build(settings)`` returns None when
``--enable-priority-and-fairness=false`` (the max-in-flight filter then applies)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.typedefs import Middleware

from cacher.cacher import cancel_all
from proxy.flowcontrol import filter as apf_filter
from proxy.flowcontrol.apf_controller import APFController
from proxy.flowcontrol.config_producer import GROUP, BootstrapEnsurer
from proxy.flowcontrol.debug import setup_apf_debug_routes
from proxy.flowcontrol.work_estimator import estimate_seats, served_from_cache
from proxy.registry.storage_factory import ResourceStorage
from proxy.request.request_info import RequestInfo
from proxy.server.settings import Settings

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
    ensurer: BootstrapEnsurer | None = None
    _storages: dict[tuple[str, str], ResourceStorage] = field(default_factory=dict)
    # set once the bootstrap objects are written, or at once when none will be (readyz)
    config_ready: asyncio.Event = field(default_factory=asyncio.Event)

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

    def object_count(self, group: str, resource: str) -> int | None:
        """Stored objects of a resource: the watch cache's size, else the last etcd
        count (None until one is known: the estimator then charges the maximum)."""
        rs = self._storage(group, resource)
        cacher = getattr(rs.store, "cacher", None) if rs is not None else None
        if cacher is not None:
            return len(cacher.cache)
        self.wanted.add((group, resource))
        return self.counts.get((group, resource))

    def _from_cache(self, info: RequestInfo, query: Mapping[str, str]) -> bool:
        rs = self._storage(info.group, info.resource)
        cached = rs is not None and getattr(rs.store, "cacher", None) is not None
        gates = self.settings.feature_gates
        return served_from_cache(query, cached, gates.get("ConsistentListFromCache", False))

    def seats(self, info: RequestInfo, query: Mapping[str, str]) -> int:
        return estimate_seats(info, query, self.object_count, self._from_cache)

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
    ) -> None:
        """Debug routes, the response hook, and a cleanup context running the
        controller, the bootstrap ensurer (unless --system-namespaces=false, which
        keeps etcd untouched) and the object counter."""
        self.storage_of = storage_of
        app.on_response_prepare.append(apf_filter.on_response_prepare)
        setup_apf_debug_routes(app, self.controller)

        async def run(app: web.Application) -> AsyncIterator[None]:
            plurals = ("flowschemas", "prioritylevelconfigurations")
            found = {p: storage_of(GROUP, p) for p in plurals}
            storages = {p: rs for p, rs in found.items() if rs is not None}
            tasks: list[asyncio.Task[None]] = [
                asyncio.create_task(self._count_forever(), name="apf-object-counts")
            ]
            if len(storages) == len(plurals):
                self.controller.storages = storages
                if self.settings.system_namespaces:
                    self.ensurer = BootstrapEnsurer(storages, ready=self.config_ready)
                    tasks.append(asyncio.create_task(self.ensurer.run(), name="apf-bootstrap"))
            if self.ensurer is None:
                self.config_ready.set()
            tasks.append(asyncio.create_task(self.controller.run(), name="apf-controller"))
            yield
            await cancel_all(tasks)

        app.cleanup_ctx.append(run)
