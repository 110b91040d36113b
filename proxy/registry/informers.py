"""The server's shared informers, read straight from its own storages (upstream's
loopback ``SharedInformerFactory``, minus HTTP and serialization).

A resource's lister-watcher LISTs and WATCHes the storage that serves it (the watch
cache when it is on, else etcd), under the resource's whole key prefix; the storage is
looked up at each LIST or WATCH, since storages are built when the server starts, after
the controllers have asked for their informers. A resource the registry does not serve
has no informer (``NotServed``).
"""

from __future__ import annotations

from proxy.informer import SharedInformerFactory, StorageListerWatcher
from proxy.registry.resources import Registry
from proxy.registry.storage_factory import StorageMap
from storage.interfaces import Interface

__all__ = ["storage_informers"]


def storage_informers(registry: Registry, storages: StorageMap) -> SharedInformerFactory:
    """A factory whose informers read ``storages`` for the resources of ``registry``."""

    def lister_watcher_for(group: str, plural: str) -> StorageListerWatcher | None:
        resource = registry.lookup(group, plural)
        if resource is None:
            return None

        def resolve() -> tuple[Interface, str]:
            rs = storages.for_resource(resource)
            return rs.store, rs.list_key("")

        return StorageListerWatcher(resolve)

    return SharedInformerFactory(lister_watcher_for)
