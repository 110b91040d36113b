"""The custom resources served now, added and removed at run time
(apiextensions-apiserver's ``crdHandler`` and its ``customStorage`` map).

:class:`CustomResources` is driven by the CRD controllers (``controllers``): ``serve``
with an established CRD (re)builds what each served version needs — the registry entry
(routes, request resolution, legacy discovery), its storage with its own watch cache
(built at once, so it primes as a built-in's does), its strategy, Table printer and
selectable fields — and ``stop`` undoes it: the watch cache is closed, which ends every
open watch on it, and the resource is no longer routed. Each change drops the cached
aggregated discovery and OpenAPI documents, so their ETags change.

All methods run on the event loop; only the controllers call ``serve``/``stop``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from proxy.apiextensions import custom_resource as cr_mod
from proxy.apiextensions.custom_resource import CustomResourceVersion
from proxy.apiextensions.openapi import CustomKind, custom_kind
from proxy.printers.handlers import HANDLERS as PRINTERS
from proxy.registry.resources import ResourceInfo
from proxy.registry.validation.strategy import register_strategy, unregister_strategy
from proxy.server.context import APIContext

__all__ = ["CustomResources"]

log = logging.getLogger("watchcache.apiextensions")

JSON = dict[str, Any]


@dataclass
class _Served:
    """What one CRD serves: its versions (most preferred first) and the fingerprint of
    the CRD parts they were built from."""

    resources: list[tuple[ResourceInfo, CustomResourceVersion]]
    fingerprint: tuple[Any, ...]


def _fingerprint(crd: JSON) -> tuple[Any, ...]:
    spec = crd.get("spec") or {}
    status = crd.get("status") or {}
    terminating = any(
        c.get("type") == "Terminating" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return (
        (crd.get("metadata") or {}).get("uid"),
        repr(spec),
        repr(status.get("acceptedNames")),
        terminating,
    )


@dataclass
class CustomResources:
    """The served custom resources of one server (see the module docstring)."""

    ctx: APIContext
    _by_crd: dict[str, _Served] = field(default_factory=dict)
    # (group, version, plural) -> the version's facts, for the request handlers
    _versions: dict[tuple[str, str, str], CustomResourceVersion] = field(default_factory=dict)

    def version_of(self, resource: ResourceInfo) -> CustomResourceVersion | None:
        """The CRD version behind ``resource``; None for a built-in resource."""
        return self._versions.get((resource.group, resource.version, resource.plural))

    def openapi_kind(self, resource: ResourceInfo) -> CustomKind | None:
        """The OpenAPI components of a served CR version (``proxy.openapi.documents``)."""
        cr = self.version_of(resource)
        return custom_kind(cr) if cr is not None else None

    def serving(self, crd_name: str) -> list[ResourceInfo]:
        served = self._by_crd.get(crd_name)
        return [info for info, _ in served.resources] if served else []

    async def serve(self, crd: JSON) -> None:
        """Serve ``crd``'s served versions as it now says (no-op when nothing changed)."""
        name = str((crd.get("metadata") or {}).get("name"))
        fingerprint = _fingerprint(crd)
        current = self._by_crd.get(name)
        if current is not None and current.fingerprint == fingerprint:
            return
        resources = cr_mod.served_versions(crd)
        if current is not None:
            await self._unserve(
                current, keep={(i.group, i.version, i.plural) for i, _ in resources}
            )
        self._by_crd[name] = _Served(resources, fingerprint)
        for info, cr in resources:
            self._add(info, cr)
        if resources:
            info, cr = resources[0]
            versions = {c.version: c for _, c in resources}
            register_strategy(info.group, info.kind, cr_mod.strategy(versions, info.namespaced))
            PRINTERS[(info.group, info.plural)] = cr_mod.table_printer(cr)
        self._api_changed()
        log.info("serving %s at %s", name, ", ".join(i.api_version for i, _ in resources))

    async def stop(self, crd_name: str) -> None:
        """Stop serving ``crd_name``'s resources; their watch caches close."""
        current = self._by_crd.pop(crd_name, None)
        if current is None:
            return
        await self._unserve(current, keep=set())
        self._api_changed()
        log.info("stopped serving %s", crd_name)

    async def close(self) -> None:
        for name in list(self._by_crd):
            current = self._by_crd.pop(name)
            for info, _ in current.resources:
                self._forget(info)

    def _add(self, info: ResourceInfo, cr: CustomResourceVersion) -> None:
        key = (info.group, info.version, info.plural)
        self.ctx.registry.add(info)
        self._versions[key] = cr
        self.ctx.storage_ctx.custom_attrs[key] = cr_mod.attrs_func(cr)
        self.ctx.storages.for_resource(info)  # its watch cache starts priming now

    async def _unserve(self, served: _Served, keep: set[tuple[str, str, str]]) -> None:
        for info, _ in served.resources:
            # a version still served gets a new storage too (its facts may have changed),
            # and its watches end, as upstream tears down a CRD's storage on update
            if (info.group, info.version, info.plural) not in keep:
                self._forget(info)
            await self.ctx.storages.remove(info)
        if served.resources:
            info = served.resources[0][0]
            if not keep:
                unregister_strategy(info.group, info.kind)
                PRINTERS.pop((info.group, info.plural), None)

    def _forget(self, info: ResourceInfo) -> None:
        key = (info.group, info.version, info.plural)
        self.ctx.registry.remove(*key)
        self._versions.pop(key, None)
        self.ctx.storage_ctx.custom_attrs.pop(key, None)

    def _api_changed(self) -> None:
        self.ctx.aggregated_discovery.clear()
        self.ctx.openapi = None
