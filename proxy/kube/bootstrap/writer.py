"""How the bootstrap controllers write: create-or-update of one object, straight into
its resource's storage (as ``proxy.server.system_namespaces`` creates namespaces),
with the system fields a create sets and the kind's defaults. The seam for writing
through the in-process loopback client instead: only this module knows the path.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from proxy.kube.defaulting import default_object
from proxy.registry import object_meta
from proxy.registry.resources import Registry, ResourceInfo
from storage.interfaces import Interface, JSONObject, StoredObject

__all__ = ["BootstrapWriter", "Desired"]

# the object as it should be, given the stored one ({} when absent)
Desired = Callable[[JSONObject], JSONObject]


class _Storage(Protocol):
    @property
    def store(self) -> Interface: ...

    def object_key(self, namespace: str, name: str) -> str: ...


class Storages(Protocol):
    """What writing needs of the server's ``StorageMap``."""

    def for_resource(self, resource: ResourceInfo) -> _Storage: ...


@dataclass
class BootstrapWriter:
    registry: Registry
    storages: Storages

    async def ensure(
        self, group: str, plural: str, namespace: str, name: str, desired: Desired
    ) -> StoredObject | None:
        """Make the object ``desired(stored)``: created when absent (uid, timestamps,
        defaults), left unwritten when unchanged. None when the resource is not
        served. Storage errors come out (the caller retries)."""
        resource = self.registry.lookup(group, plural)
        if resource is None:
            return None
        rs = self.storages.for_resource(resource)

        async def update(current: JSONObject) -> JSONObject:
            wanted = desired(copy.deepcopy(current))
            default_object(resource.group, resource.version, resource.kind, wanted)
            if not current:
                return object_meta.prepare_for_create(wanted, resource, namespace)
            return wanted

        return await rs.store.guaranteed_update(
            rs.object_key(namespace, name), None, update, ignore_not_found=True
        )
