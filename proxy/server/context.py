"""The server-wide state handlers reach through ``request.app[API_CONTEXT]``."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from proxy.admission.chain import AdmissionChain
from proxy.informer import SharedInformerFactory
from proxy.openapi.documents import OpenAPIV3
from proxy.registry.resources import Registry, ResourceInfo
from proxy.registry.storage_factory import StorageContext, StorageMap
from proxy.registry.store import Store
from proxy.server.aggregation import Aggregation
from proxy.server.auth_chain import Auth
from proxy.server.settings import Settings
from storage.interfaces import Watcher

__all__ = ["API_CONTEXT", "APIContext"]

log = logging.getLogger("watchcache.proxy")


@dataclass
class APIContext:
    """Settings, the served resources, their storages, and the open watches.

    ``watchers`` is changed only by the watch handler (add on open, discard on close)
    and read by ``stop_watches`` at shutdown, all on the event loop.
    """

    settings: Settings
    registry: Registry
    storage_ctx: StorageContext
    storages: StorageMap
    # the shared informers over ``storages`` (proxy.registry.informers), for controllers
    informers: SharedInformerFactory
    watchers: set[Watcher] = field(default_factory=set)
    # path -> AggregatedDiscovery, built on first request (cleared when CRDs change it)
    aggregated_discovery: dict[str, Any] = field(default_factory=dict)
    # the OpenAPI v3 documents, built on first request
    openapi: OpenAPIV3 | None = None
    shutting_down: bool = False
    # authentication and authorization (the secure port's); None: plain port only
    auth: Auth | None = None
    # the custom resources served now (proxy.apiextensions.serving.CustomResources)
    custom_resources: Any = None
    # API aggregation (proxy.aggregator); set by build_app
    aggregator: Aggregation | None = None
    # the admission chain; None: no admission
    admission: AdmissionChain | None = None

    def store(self, resource: ResourceInfo) -> Store:
        """The generic store of ``resource`` (the only way handlers reach storage)."""
        return Store(
            self.storages.for_resource(resource), lifecycle=self.settings.lifecycle_controllers
        )

    async def stop_watches(self) -> None:
        """End every open watch (their handlers then finish their responses)."""
        self.shutting_down = True
        for watcher in list(self.watchers):
            try:
                await watcher.stop()
            except Exception:  # a failing stop must not block the others
                log.exception("stopping a watch failed")


API_CONTEXT = web.AppKey("watchcache_api_context", APIContext)
