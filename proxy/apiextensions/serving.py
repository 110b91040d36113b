"""The custom resources served now, added and removed at run time
(apiextensions-apiserver's ``crdHandler`` and its ``customStorage`` map).

:class:`CustomResources` is driven by the CRD controllers (``controllers``): ``serve``
with an established CRD (re)builds what each served version needs — the registry entry
(routes, request resolution, legacy discovery), its storage with its own watch cache
(built at once, so it primes as a built-in's does), its strategy, Table printer and
selectable fields — and ``stop`` undoes it: the resource is no longer routed at once,
and its watch cache is closed a second later (upstream's ``tearDown``), which ends every
open watch on it after it has delivered the instances' deletions. Each change drops the
cached aggregated discovery and OpenAPI documents, so their ETags change.

All methods run on the event loop; only the controllers call ``serve``/``stop``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

import orjson

from proxy.apiextensions import custom_resource as cr_mod
from proxy.apiextensions.custom_resource import CustomResourceVersion
from proxy.apiextensions.openapi import CustomKind, custom_kind
from proxy.apiextensions.webhook_converter import WebhookConverter
from proxy.apimachinery.api_resource import NamedResource
from proxy.endpoints.context import APIContext
from proxy.registry.conversion import Converter, NoneConverter, VersionedStorage
from proxy.registry.kind_schema import kind_schema
from proxy.registry.resources import ResourceInfo
from proxy.registry.storage_factory import new_storage
from proxy.registry.validation.strategy import KindStrategy
from storage.interfaces import Interface

__all__ = ["CustomResources"]

# How long a deleted CRD's storage outlives its routes: upstream's tearDown sleeps a
# second ("allow time for in-flight requests ... to register themselves") before it
# destroys the storage. The finalizer's last deletions are in etcd by then but may not
# have reached every open watch (without the watch cache, each watch is its own etcd
# watch): closing at once would end a ``kubectl get -w`` before its DELETED events.
TEARDOWN_GRACE = 1.0

log = logging.getLogger("watchcache.apiextensions")

JSON = dict[str, Any]


@dataclass
class _Served:
    """What one CRD serves: its versions (most preferred first), the storage they all
    read through (the storage version's etcd3 store and watch cache), and the
    fingerprint of the CRD parts they were built from."""

    resources: list[tuple[ResourceInfo, CustomResourceVersion]]
    base: ResourceInfo
    store: Interface
    fingerprint: tuple[Any, ...]
    converter: Converter
    rules: KindStrategy  # the custom resources' validation (their versions' schemas)


def _fingerprint(crd: JSON) -> tuple[Any, ...]:
    """What the storage is built from: upstream's crdHandler keeps a CRD's storage (and
    its watches) while neither its spec nor its accepted names change, so a status
    change such as Terminating must not rebuild it (the finalizer's deletions reach the
    open watches as DELETED events)."""
    spec = crd.get("spec") or {}
    status = crd.get("status") or {}
    # canonical JSON, not repr: the same spec decoded from another write (a status
    # update through the loopback client) may list its keys in another order
    return (
        (crd.get("metadata") or {}).get("uid"),
        orjson.dumps(spec, option=orjson.OPT_SORT_KEYS),
        orjson.dumps(status.get("acceptedNames"), option=orjson.OPT_SORT_KEYS),
    )


@dataclass
class CustomResources:
    """The served custom resources of one server (see the module docstring)."""

    ctx: APIContext
    _by_crd: dict[str, _Served] = field(default_factory=dict)
    # (group, version, plural) -> the version's facts, for the request handlers
    _versions: dict[tuple[str, str, str], CustomResourceVersion] = field(default_factory=dict)
    # deleted CRDs' storages waiting out TEARDOWN_GRACE (close() destroys them at once)
    _teardowns: set[asyncio.Task[None]] = field(default_factory=set)

    def version_of(self, resource: NamedResource) -> CustomResourceVersion | None:
        """The CRD version behind ``resource``; None for a built-in resource."""
        return self._versions.get((resource.group, resource.version, resource.plural))

    def rules_of(self, resource: NamedResource) -> KindStrategy | None:
        """The validation of a served custom resource (its CRD's versions' schemas)."""
        for served in self._by_crd.values():
            base = served.base
            if (base.group, base.plural) == (resource.group, resource.plural):
                return served.rules
        return None

    def openapi_kind(self, resource: NamedResource) -> CustomKind | None:
        """The OpenAPI components of a served CR version (``proxy.openapi.documents``)."""
        cr = self.version_of(resource)
        return custom_kind(cr) if cr is not None else None

    def served_resource(self, crd_name: str) -> ResourceInfo | None:
        """The preferred served version of a served CRD (its instances, through it)."""
        served = self._by_crd.get(crd_name)
        return served.resources[0][0] if served else None

    async def serve(self, crd: JSON) -> None:
        """Serve ``crd``'s served versions as it now says (no-op when nothing changed).
        A change builds the new serving first and swaps it in (requests never see the
        resource missing), then closes the old watch cache (its watches end, as upstream
        tears down a CRD's storage when the CRD changes)."""
        name = str((crd.get("metadata") or {}).get("name"))
        fingerprint = _fingerprint(crd)
        current = self._by_crd.get(name)
        if current is not None and current.fingerprint == fingerprint:
            self._set_terminating(current, cr_mod.terminating(crd))
            return
        resources = cr_mod.served_versions(crd)
        keep: set[tuple[str, str, str]] = set()
        if resources:
            converter = _converter(crd, resources[0][1].kind, self.ctx)
            new = self._build(resources, fingerprint, converter)
            self._by_crd[name] = new
            keep = {_key(info) for info, _ in resources} | {_key(new.base)}
        else:
            self._by_crd.pop(name, None)
        if current is not None:
            await self._unserve(current, keep)
        self._api_changed()
        log.info("serving %s at %s", name, ", ".join(i.api_version for i, _ in resources))

    def _build(
        self,
        resources: list[tuple[ResourceInfo, CustomResourceVersion]],
        fingerprint: Any,
        converter: Converter,
    ) -> _Served:
        info0, cr0 = resources[0]
        storage = cr0.storage_version
        base = dataclasses.replace(info0, version=storage)
        base_cr = next((c for i, c in resources if i.version == storage), cr0)
        self.ctx.storage_ctx.custom_attrs[_key(base)] = cr_mod.attrs_func(base_cr)
        store = new_storage(base, self.ctx.storage_ctx)  # its watch cache primes now
        storage_api_version = base.api_version
        read_defaults = cr_mod.read_defaults(base_cr)
        for info, _ in resources:  # re-added below in priority order (discovery's order)
            self.ctx.registry.remove(*_key(info))
        resources = [(_with_kind_schema(info, cr), cr) for info, cr in resources]
        for info, cr in resources:
            key = _key(info)
            self.ctx.registry.add(info)
            self._versions[key] = cr
            self.ctx.storage_ctx.custom_attrs[key] = cr_mod.attrs_func(cr)
            view = VersionedStorage(
                store, info.api_version, storage_api_version, converter, read_defaults
            )
            self.ctx.storages.add_view(info, view)
        versions = {c.version: c for _, c in resources}
        rules = cr_mod.strategy(versions, info0.namespaced)
        return _Served(resources, base, store, fingerprint, converter, rules)

    def _set_terminating(self, served: _Served, terminating: bool) -> None:
        """Swap in version facts with the CRD's Terminating state (read per request by
        the handler, as upstream reads the CRD's conditions), keeping the storage."""
        facts = [(i, dataclasses.replace(c, terminating=terminating)) for i, c in served.resources]
        served.resources = facts
        for info, cr in facts:
            self._versions[_key(info)] = cr

    async def stop(self, crd_name: str) -> None:
        """Stop serving ``crd_name``'s resources now; their watch cache and etcd3 store
        close TEARDOWN_GRACE later (a CRD made again meanwhile gets fresh ones)."""
        current = self._by_crd.pop(crd_name, None)
        if current is None:
            return
        self._unroute(current, set())
        etcd3 = self.ctx.storage_ctx.take_etcd3(current.base)
        task = asyncio.create_task(
            self._tear_down(current, etcd3), name=f"teardown {crd_name}"
        )
        self._teardowns.add(task)
        task.add_done_callback(self._teardowns.discard)
        self._api_changed()
        log.info("stopped serving %s", crd_name)

    async def _tear_down(self, served: _Served, etcd3: Interface | None) -> None:
        try:
            await asyncio.sleep(TEARDOWN_GRACE)
        finally:  # also when close() cancels the wait: the storage is destroyed then
            await self._destroy(served)
            if etcd3 is not None:
                await etcd3.close()

    async def close(self) -> None:
        teardowns = list(self._teardowns)
        for task in teardowns:
            task.cancel()
        await asyncio.gather(*teardowns, return_exceptions=True)
        for name in list(self._by_crd):
            await self._unserve(self._by_crd.pop(name), set())

    async def _unserve(self, served: _Served, keep: set[tuple[str, str, str]]) -> None:
        """Undo ``served`` but what the new serving of the same CRD took over (``keep``:
        its versions), then close its watch cache at once (a changed CRD: upstream
        rebuilds its storage and ends the old watches)."""
        self._unroute(served, keep)
        await self._destroy(served)

    def _unroute(self, served: _Served, keep: set[tuple[str, str, str]]) -> None:
        for info, _ in served.resources:
            key = _key(info)
            if key in keep:
                continue
            self.ctx.registry.remove(*key)
            self._versions.pop(key, None)
            self.ctx.storage_ctx.custom_attrs.pop(key, None)
            self.ctx.storages.remove_view(info)
        if _key(served.base) not in keep:
            self.ctx.storage_ctx.custom_attrs.pop(_key(served.base), None)

    async def _destroy(self, served: _Served) -> None:
        await served.store.close()  # ends every watch on it
        if isinstance(served.converter, WebhookConverter):
            await served.converter.close()

    def _api_changed(self) -> None:
        self.ctx.aggregated_discovery.clear()
        self.ctx.openapi = None


def _converter(crd: JSON, kind: str, ctx: APIContext) -> Converter:
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") == "Webhook":
        webhook = conversion.get("webhook") or {}
        return WebhookConverter(kind, webhook, ctx.object_lookup, ctx.cluster_transport)
    return NoneConverter()


def _key(info: ResourceInfo) -> tuple[str, str, str]:
    return (info.group, info.version, info.plural)


def _with_kind_schema(info: ResourceInfo, cr: CustomResourceVersion) -> ResourceInfo:
    """``info`` carrying its version's schema, apply type and columns (upstream's
    per-version validator, typeConverter and tableConvertor)."""
    structural = cr.schema if isinstance(cr.schema, dict) else None
    facts = kind_schema(cr_mod.request_schema(cr), structural, cr_mod.table_printer(cr))
    return dataclasses.replace(info, kind_schema=facts)
