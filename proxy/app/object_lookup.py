"""``ObjectLookup`` over the server's storages (what kube's plugin initializers give
plugins as informers and clients): the composition root's adapter from the admission
plugins' narrow protocol to the server's stores and loopback client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proxy import apierrors
from proxy.loopback.client import APIError, LoopbackClient, resource_path
from proxy.registry.resources import ResourceInfo
from proxy.server.context import APIContext
from storage.interfaces import GetOptions, ListOptions

__all__ = ["StoreLookup"]

JSON = dict[str, Any]


class StoreLookup:
    """Reads from the watch cache (resourceVersion 0) or etcd (``fresh``); a resource
    this server does not serve reads as absent."""

    def __init__(self, ctx: APIContext, loopback: Callable[[], LoopbackClient | None]) -> None:
        self.ctx = ctx
        self.loopback = loopback

    def _resource(self, group: str, plural: str) -> ResourceInfo | None:
        return self.ctx.registry.lookup(group, plural)

    async def get(
        self, group: str, plural: str, namespace: str, name: str, *, fresh: bool = False
    ) -> JSON | None:
        resource = self._resource(group, plural)
        if resource is None:
            return None
        try:  # (the generic store turns storage errors into Status errors)
            stored = await self.ctx.store(resource).get(
                namespace, name, GetOptions("" if fresh else "0")
            )
        except apierrors.StatusError as e:
            if e.code == 404:
                return None
            raise
        return stored.copy()

    async def list(
        self, group: str, plural: str, namespace: str, *, fresh: bool = False
    ) -> list[JSON]:
        resource = self._resource(group, plural)
        if resource is None:
            return []
        opts = ListOptions(resource_version="" if fresh else "0")
        listed = await self.ctx.store(resource).list(namespace, opts)
        return [item.copy() for item in listed.items]

    def resource_for_kind(self, group: str, kind: str) -> tuple[str, bool] | None:
        for resource in self.ctx.registry:
            if resource.group == group and resource.kind == kind:
                return resource.plural, resource.namespaced
        return None

    async def write_status(self, group: str, plural: str, obj: JSON) -> bool:
        """PUT ``obj`` to its ``/status`` through the loopback client, as upstream's quota
        admission updates a quota through its clientset (its resourceVersion makes it
        conditional); False when it changed meanwhile, is gone, or the server is not
        serving yet."""
        resource = self._resource(group, plural)
        client = self.loopback()
        if resource is None or client is None:
            return False
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name"))
        path = resource_path(resource.group, resource.version, resource.plural, namespace,
                             name, "status")  # fmt: skip
        try:
            await client.request("PUT", path, obj)
        except APIError as e:
            if e.code in (404, 409):
                return False
            raise
        return True
