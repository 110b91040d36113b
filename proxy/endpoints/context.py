"""The server-wide state the handlers reach through ``request.app[API_CONTEXT]``: the
served resources, their storages and stores, the delegates, the admission chain, the
open watches. It lives with the endpoints (the handlers read it; the server and the
composition root fill it), so the endpoints import nothing of ``proxy.server``."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from proxy.admission.chain import AdmissionChain
from proxy.admission.interfaces import ClusterTransport, ObjectLookup
from proxy.authorization.modes import Union
from proxy.endpoints.discovery.aggregation import Aggregation
from proxy.endpoints.handlers.scope import ResourceDelegate
from proxy.informer import SharedInformerFactory
from proxy.openapi.documents import CustomKinds, OpenAPIV3
from proxy.options.settings import Settings
from proxy.registry.resources import Registry, ResourceInfo
from proxy.registry.rest import Strategy, SubresourceStorage
from proxy.registry.storage_factory import ResourceStorage, StorageContext, StorageMap
from proxy.registry.store import Store
from storage.interfaces import JSONObject, Watcher

__all__ = ["API_CONTEXT", "APIContext", "ComputedObjects", "ObjectDefaulter"]

log = logging.getLogger("watchcache.proxy")

# (group, version, kind, object) -> the object with its kind's defaults set in place:
# kube's built-in kinds' defaulting (proxy.kube.defaulting), handed in by the
# composition root (the generic library never imports proxy.kube)
ObjectDefaulter = Callable[[str, str, str, JSONObject], JSONObject]
# the objects of a resource without storage, computed on each call
ComputedObjects = Callable[[], Awaitable[list[JSONObject]]]


@dataclass
class APIContext:
    """Settings, the served resources, their storages, and the open watches.

    ``watchers`` is changed only by the watch handler (add on open, discard on close)
    and read by ``stop_watches`` at shutdown, all on the event loop.
    """

    settings: Settings
    registry: Registry
    # the write strategy of (resource, subresource), chosen by the composition root
    strategies: Callable[[ResourceInfo, str], Strategy]
    # the storage of a subresource that is not the object itself (scale, binding), over
    # the resource's store; None: the resource's store serves it
    subresource_storages: Callable[[ResourceInfo, str, Store], SubresourceStorage | None]
    storage_ctx: StorageContext
    storages: StorageMap
    # the shared informers over ``storages`` (proxy.registry.informers), for controllers
    informers: SharedInformerFactory
    # the servers behind the generic handlers (custom resources), asked in order
    delegates: list[ResourceDelegate] = field(default_factory=list)
    watchers: set[Watcher] = field(default_factory=set)
    # path -> AggregatedDiscovery, built on first request (cleared when CRDs change it)
    aggregated_discovery: dict[str, Any] = field(default_factory=dict)
    # the OpenAPI v3 documents, built on first request
    openapi: OpenAPIV3 | None = None
    shutting_down: bool = False
    # the secure port's authorizer (upstream's ``Config.Authorization``); None: plain
    # port only
    authorizer: Union | None = None
    # the OpenAPI components of the custom resources served now (proxy.apiextensions)
    custom_openapi: CustomKinds | None = None
    # API aggregation (proxy.aggregator); set by build_app
    aggregator: Aggregation | None = None
    # the admission chain, built by the composition root; None: no admission
    admission: AdmissionChain | None = None
    # a resource's own REST storage in place of the generic store (upstream's
    # per-kind REST: services allocate ClusterIPs), given the generic one; None: that
    custom_stores: Callable[[ResourceInfo, str, Store], Store | None] | None = None
    # the port the API is served on (the secure port, else the plain one), once it
    # listens; set by ``serve`` only
    serving_port: int | None = None
    # (group, plural) -> the objects of a resource without storage, computed on each
    # call (componentstatuses' probes, proxy.kube.componentstatus), given by the
    # composition root; a resource missing here is not served
    computed_objects: dict[tuple[str, str], ComputedObjects] = field(default_factory=dict)
    # the built-in kinds' defaulting, for what is decoded outside a route's strategy
    # (a mutating webhook's answer); None: objects are stored as decoded
    defaulter: ObjectDefaulter | None = None
    # how webhooks reach a pod's address: the egress selector's cluster network (None:
    # dialled directly), given by the composition root
    cluster_transport: ClusterTransport | None = None
    # reads of Services and Endpoints for a conversion webhook's service reference (the
    # admission chain's lookup); set with the admission chain
    object_lookup: ObjectLookup | None = None
    # ``store``'s per-route stores: (group, version, plural, subresource) -> (resource,
    # its storage, custom_stores, the store) they were built from
    _stores: dict[tuple[str, str, str, str], tuple[ResourceInfo, ResourceStorage, object, Store]
                  ] = field(default_factory=dict, repr=False)  # fmt: skip

    def store(self, resource: ResourceInfo, subresource: str = "") -> Store:
        """The generic store of ``resource`` as ``subresource`` writes it (the only way
        handlers reach storage). Built once per route and kept (a strategy, a store and
        a kind's own REST storage are per-route facts, not per-request work) while the
        resource, its storage and the custom stores stay the same objects."""
        key = (resource.group, resource.version, resource.plural, subresource)
        rs = self.storages.for_resource(resource)
        kept = self._stores.get(key)
        if kept is not None:
            kept_resource, kept_rs, kept_custom, kept_store = kept
            if kept_rs is rs and kept_custom is self.custom_stores and (
                    kept_resource is resource or kept_resource == resource):  # fmt: skip
                return kept_store
        store = Store(rs, self.strategies(resource, subresource),
                      lifecycle=self.settings.lifecycle_controllers)  # fmt: skip
        own = self.custom_stores(resource, subresource, store) if self.custom_stores else None
        self._stores[key] = (resource, rs, self.custom_stores, own or store)
        return own or store

    async def stop_watches(self) -> None:
        """End every open watch (their handlers then finish their responses)."""
        self.shutting_down = True
        for watcher in list(self.watchers):
            try:
                await watcher.stop()
            except Exception:  # a failing stop must not block the others
                log.exception("stopping a watch failed")


API_CONTEXT = web.AppKey("watchcache_api_context", APIContext)
