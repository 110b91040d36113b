"""The watch cache: kube-apiserver's cacher, serving RV=0 reads and watches from memory.

Public API::

    CacherConfig(...)                      # knobs (cacher.config)
    new_cached_storage(store, *, resource, resource_prefix, attrs, kind,
                       api_version, indexes=(), config=None) -> CacheDelegator
    DEFAULT_INDEXES: dict[str, tuple[str, ...]]   # {"pods": ("spec.nodeName",)}

``new_cached_storage`` must be called with the event loop running: it starts the cache's
tasks (reflector, bookmark ticker, progress requester). The cache reads etcd only through
``store`` (the storage floor: the etcd3 store is also a ``ListerWatcher``). The returned
object implements ``storage.interfaces.Interface``; its ``close()`` cancels and awaits
every task and closes the store. Compaction is not the cache's business: the etcd3
``Compactor`` belongs to whoever owns the etcd client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from cacher.cacher import Cacher
from cacher.config import CacherConfig
from cacher.delegator import CacheDelegator
from cacher.progress import Outcome
from storage.interfaces import AttrsFunc, Interface, ListerWatcher

DEFAULT_INDEXES: dict[str, tuple[str, ...]] = {"pods": ("spec.nodeName",)}


class CacheableStorage(Interface, ListerWatcher, Protocol):
    """A store a watch cache can wrap: the storage interface, and the lister-watcher
    the cache reads etcd through (``storage.etcd3.Etcd3Store`` is both)."""


def new_cached_storage(
    store: CacheableStorage,
    *,
    resource: str,
    resource_prefix: str,
    attrs: AttrsFunc | None,
    kind: str,
    api_version: str,
    indexes: Sequence[str] | None = None,
    config: CacherConfig | None = None,
) -> CacheDelegator:
    """Wrap ``store`` (the etcd3 store of ``resource``) with a watch cache.

    ``resource_prefix`` is the etcd prefix of every object of the resource, ending in
    ``/`` (``/registry/pods/``). ``indexes`` defaults to ``DEFAULT_INDEXES[resource]``;
    the first index also routes node-scoped watches.
    """
    config = config or CacherConfig()
    if not resource_prefix.endswith("/"):
        resource_prefix += "/"
    if indexes is None:
        indexes = DEFAULT_INDEXES.get(resource, ())
    cacher = Cacher(
        store,
        resource=resource,
        resource_prefix=resource_prefix,
        attrs=attrs,
        kind=kind,
        api_version=api_version,
        indexes=indexes,
        config=config,
    )
    cacher.start()
    return CacheDelegator(store, cacher)


__all__ = [
    "DEFAULT_INDEXES",
    "CacheDelegator",
    "CacheableStorage",
    "Cacher",
    "CacherConfig",
    "Outcome",
    "new_cached_storage",
]
