"""The system namespaces every cluster has, created at start-up as kube-apiserver's
system-namespaces controller does: ``default``, ``kube-system``, ``kube-public`` and
``kube-node-lease``. kubectl's kubeconfig context defaults to ``default``, so ``kubectl
run``/``create``/``apply`` without ``-n`` work on a fresh server.

``SystemNamespaces.run()`` retries until each exists (an existing one is left as it
is: AlreadyExists counts as done), so a server started while etcd is down creates them
once etcd is back. ``ready`` is set once they all exist; ``/readyz``'s
``poststarthook/start-system-namespaces-controller`` check reads it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from proxy.registry import object_meta
from proxy.registry.resources import Registry, ResourceInfo
from storage import errors as serr
from storage.interfaces import JSONObject, StoredObject

__all__ = ["SYSTEM_NAMESPACES", "SystemNamespaces"]

log = logging.getLogger("watchcache.proxy")

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
RETRY_SECONDS = 1.0


class _Creator(Protocol):
    async def create(self, key: str, obj: JSONObject) -> StoredObject: ...


class _Storage(Protocol):
    @property
    def store(self) -> _Creator: ...

    def object_key(self, namespace: str, name: str) -> str: ...


class Storages(Protocol):
    """What creating namespaces needs of the server's ``StorageMap``: a resource's key
    layout and a store that creates."""

    def for_resource(self, resource: ResourceInfo) -> _Storage: ...


@dataclass
class SystemNamespaces:
    """Creates the system namespaces; ``ready`` is set (by ``run`` only) when done."""

    registry: Registry
    storages: Storages
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def ensure_once(self) -> bool:
        """Create the missing ones; True when all exist."""
        resource = self.registry.lookup("", "namespaces")
        if resource is None:
            return True
        rs = self.storages.for_resource(resource)
        for name in SYSTEM_NAMESPACES:
            obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            object_meta.prepare_for_create(obj, resource, "")
            try:
                await rs.store.create(rs.object_key("", name), obj)
            except serr.AlreadyExists:
                continue
            except Exception as e:  # etcd down, timeouts: the next round retries
                log.info("creating system namespace %s: %s (will retry)", name, e)
                return False
        return True

    async def run(self) -> None:
        """Retry until every system namespace exists, then set ``ready``."""
        while not await self.ensure_once():
            await self.sleep(RETRY_SECONDS)
        self.ready.set()
