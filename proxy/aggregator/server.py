"""The aggregator as one object the app builds from its settings (kube-aggregator's
``APIAggregator``): the APIService lister, the autoregister and availability
controllers, the proxy transport, the proxy middleware and the merged discovery.

``add_post_start_hooks`` declares upstream's three hooks: ``start-kube-aggregator-informers``
(the lister, up once synced), ``apiservice-status-available-controller`` and
``apiservice-registration-controller`` (autoregister), both after the lister; the last
two write through the loopback client. With ``--system-namespaces=false`` (whose promise
is that nothing is written at start-up) there is no autoregister. ``cleanup_ctx`` closes
the backend sessions on shutdown.
``middleware`` sits in the handler chain after authorization (``proxy.server.filters``):
a request under a remote APIService's ``/apis/<group>/<version>`` is proxied there,
every other request goes on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from proxy.admission.webhook.service_resolver import Resolved, ResolveError, resolve
from proxy.aggregator import discovery
from proxy.aggregator.apiservice import GROUP, APIServiceRef
from proxy.aggregator.autoregister import AutoRegister
from proxy.aggregator.availability import AvailabilityController
from proxy.aggregator.lister import APIServiceLister
from proxy.aggregator.proxy_handler import proxy_request
from proxy.aggregator.transport import Transport
from proxy.informer import SharedInformerFactory
from proxy.openapi.cached_document import CachedDocument
from proxy.options.settings import Settings
from proxy.registry.resources import Registry
from proxy.registry.storage_factory import ResourceStorage, StorageMap
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks
from storage import errors as serr
from storage.interfaces import GetOptions, ListOptions

__all__ = ["Aggregator"]

log = logging.getLogger("watchcache.aggregator")

JSON = dict[str, Any]
# how often every APIService is checked (upstream re-checks remote ones periodically
# too); a stopped backend is Available=False within this
AVAILABILITY_INTERVAL = 5.0
INFORMERS_HOOK = "start-kube-aggregator-informers"


class Aggregator:
    """See the module docstring. ``fetched`` (APIService name -> its version's
    aggregated discovery entry) is changed only by ``refresh_discovery``."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        storages: StorageMap,
        informers: SharedInformerFactory,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.storages = storages
        self.endpoint_routing = settings.enable_aggregator_routing
        self.transport = Transport(settings.proxy_client_cert_file, settings.proxy_client_key_file)
        self.lister = APIServiceLister(informers)
        self.availability = AvailabilityController(self, AVAILABILITY_INTERVAL)
        self.autoregister = AutoRegister(self.lister, self.local_versions)
        self.fetched: dict[str, JSON] = {}
        # "apis/<group>/<version>" -> the backend's serverRelativeURL (hash-pinned)
        self.openapi_paths: dict[str, str] = {}
        self._generation = 0
        self._aggregated: tuple[tuple[str, int], CachedDocument] | None = None
        self.lister.on_change(self._changed)

    def _changed(self, name: str) -> None:
        self._generation += 1
        self.availability.enqueue(name)

    # ----------------------------------------------------------------- lookups

    def storage(self) -> ResourceStorage:
        resource = self.registry.lookup(GROUP, "apiservices")
        assert resource is not None
        return self.storages.for_resource(resource)

    def local_versions(self) -> list[tuple[str, str]]:
        """The group-versions this server serves itself (the aggregator's own excluded)."""
        # in the registry's order, each once (a dict: the autoregister asks once a second
        # for every name it reconciles)
        return list(dict.fromkeys((r.group, r.version) for r in self.registry if r.group != GROUP))

    async def get(self, group: str, plural: str, namespace: str, name: str) -> JSON | None:
        """An object from the watch cache (resourceVersion 0), None when absent."""
        resource = self.registry.lookup(group, plural)
        if resource is None:
            return None
        rs = self.storages.for_resource(resource)
        try:
            stored = await rs.store.get(rs.object_key(namespace, name), GetOptions("0"))
        except serr.NotFound:
            return None
        return stored.obj

    async def list(self, group: str, plural: str, namespace: str) -> list[JSON]:
        resource = self.registry.lookup(group, plural)
        if resource is None:
            return []
        rs = self.storages.for_resource(resource)
        listed = await rs.store.get_list(rs.list_key(namespace), ListOptions(resource_version="0"))
        return [item.obj for item in listed.items]

    async def resolve(self, ref: APIServiceRef) -> Resolved:
        try:
            return await resolve(
                self.get,
                self.list,
                ref.service_namespace,
                ref.service_name,
                ref.service_port,
                endpoint_routing=self.endpoint_routing,
            )
        except serr.StorageError as e:
            raise ResolveError(str(e)) from None

    def remote(self, group: str, version: str) -> APIServiceRef | None:
        ref = self.lister.by_group_version(group, version)
        return ref if ref is not None and not ref.local else None

    # ----------------------------------------------------------------- discovery

    async def refresh_discovery(self, ref: APIServiceRef) -> None:
        """Fetch ``ref``'s discovery entry from its backend (after a passed check)."""
        try:
            target = await self.resolve(ref)
            session = self.transport.session(ref.ca_bundle, ref.insecure_skip_tls_verify)
            async with asyncio.timeout(5.0):
                entry = await discovery.fetch_version_discovery(
                    session, target.base_url, target.server_name, ref
                )
        except (ResolveError, aiohttp.ClientError, OSError, ValueError, TimeoutError) as e:
            log.info("discovery of %s: %s", ref.name, e)
            return
        if entry is not None and self.fetched.get(ref.name) != entry:
            self.fetched[ref.name] = entry
            self._generation += 1
        await self._refresh_openapi(ref, session, target)

    async def _refresh_openapi(
        self, ref: APIServiceRef, session: aiohttp.ClientSession, target: Resolved
    ) -> None:
        """The backend's ``/openapi/v3`` entry for ``ref``'s group-version (upstream's
        OpenAPI v3 aggregation controller), kept in ``openapi_paths``."""
        try:
            async with asyncio.timeout(5.0):
                url = await discovery.fetch_openapi_url(
                    session, target.base_url, target.server_name, ref
                )
        except (aiohttp.ClientError, OSError, ValueError, TimeoutError) as e:
            log.info("OpenAPI v3 of %s: %s", ref.name, e)
            return
        key = f"apis/{ref.group}/{ref.version}"
        if url is None:
            self.openapi_paths.pop(key, None)
        else:
            self.openapi_paths[key] = url

    def openapi_index(
        self, local: CachedDocument, request_headers: Mapping[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """``/openapi/v3``: the local index with the remote group-versions' entries (the
        backends' hash-pinned URLs), its ETag over the merged document."""
        index = orjson.loads(local.body)
        for key, url in self.openapi_paths.items():
            if self.remote(*key.split("/")[1:3]) is not None:
                index["paths"][key] = {"serverRelativeURL": url}
        merged = CachedDocument.of({"paths": dict(sorted(index["paths"].items()))})
        if merged.not_modified(request_headers):
            return 304, {"ETag": merged.etag}, b""
        return 200, {"Content-Type": "application/json", "ETag": merged.etag}, merged.body

    def autoregistered(self) -> bool:
        return self.autoregister.ready.is_set()

    def legacy_apis(self) -> JSON:
        return discovery.legacy_group_list(self.local_versions(), self.lister.refs.values())

    def api_group(self, group: str) -> JSON | None:
        return discovery.api_group(group, self.lister.refs.values())

    def aggregated_apis(self, local: CachedDocument) -> CachedDocument:
        """The aggregated ``/apis`` with the remote groups (rebuilt when they change)."""
        key = (local.hash, self._generation)
        if self._aggregated is None or self._aggregated[0] != key:
            merged = discovery.aggregated_group_list(
                orjson.loads(local.body), self.lister.refs.values(), self.fetched
            )
            self._aggregated = (key, CachedDocument.of(merged))
        return self._aggregated[1]

    # ----------------------------------------------------------------- serving

    def middleware(self) -> Middleware:
        @web.middleware
        async def aggregator_proxy(request: web.Request, handler: Handler) -> web.StreamResponse:
            parts = request.path.split("/", 4)  # "", "apis", group, version, rest
            if len(parts) >= 4 and parts[1] == "apis" and parts[3]:
                ref = self.remote(parts[2], parts[3])
                if ref is not None:
                    return await proxy_request(request, self, ref)
            # a remote group-version's OpenAPI v3 document is the backend's
            parts = request.path.split("/")  # "", "openapi", "v3", "apis", group, version
            if len(parts) == 6 and parts[1:4] == ["openapi", "v3", "apis"]:
                ref = self.remote(parts[4], parts[5])
                if ref is not None and request.method == "GET":
                    return await proxy_request(request, self, ref)
            return await handler(request)

        return aggregator_proxy

    def add_post_start_hooks(self, hooks: PostStartHooks) -> None:
        async def informers(hook: PostStartHookContext) -> None:
            await self.lister.run()

        async def availability(hook: PostStartHookContext) -> None:
            await self.availability.run(hook.loopback)

        # with --workers, the Lease holder alone writes the conditions; a new holder
        # checks every APIService at once
        self.availability.leads = hooks.leads
        hooks.on_leading(self._check_all)

        async def registration(hook: PostStartHookContext) -> None:
            await self.autoregister.run(hook.loopback)

        hooks.add(INFORMERS_HOOK, informers, ready=self.lister.synced.is_set)
        hooks.add("apiservice-status-available-controller", availability,
                  after=(INFORMERS_HOOK,), ready=lambda: True)  # fmt: skip
        if self.settings.system_namespaces:
            hooks.add("apiservice-registration-controller", registration,
                      after=(INFORMERS_HOOK,), ready=lambda: True)  # fmt: skip
        else:  # --system-namespaces=false: nothing written at start-up, as promised
            self.autoregister.ready.set()

    def _check_all(self) -> None:
        for name in self.lister.refs:
            self.availability.enqueue(name)

    def cleanup_ctx(self) -> Callable[[web.Application], AsyncIterator[None]]:
        async def run(app: web.Application) -> AsyncIterator[None]:
            yield
            await self.transport.close()

        return run


