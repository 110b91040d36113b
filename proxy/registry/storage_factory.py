"""Which storage serves each resource — decided in exactly one function, ``new_storage``.

With ``--watch-cache`` (the default) each resource's etcd3 store is wrapped in its watch
cache (``cacher.new_cached_storage``); with ``--watch-cache=false`` the etcd3 store alone
serves it. The cache's knobs come from ``ctx.settings``: default_watch_cache_size,
watch_cache_index, watch_cache_indexes, feature_gates, watch_bookmark_interval.

``StorageContext`` owns what is shared: the etcd client, one etcd3 store per resource
(kube-apiserver has one per resource, so etcd calls are labelled by resource), and the
client's one compactor (``--etcd-compaction-interval``, upstream's etcd3 ``compact.go``),
started with ``start()`` and stopped with ``close()``. ``ResourceStorage`` is a
per-resource view that knows the resource's keys.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from proxy.registry.resources import ResourceInfo
from storage import keys
from storage.codec import JSON_CODEC, Codec, codec_for
from storage.errors import NotReady
from storage.etcd3 import Compactor, Etcd3Store
from storage.fields import attrs_func
from storage.interfaces import AttrsFunc, Interface
from storage.protobuf.errors import SchemaUnavailable

if TYPE_CHECKING:
    from etcdclient import EtcdClient

# kube-apiserver's feature gate (beta, on by default since 1.37)
UNSAFE_DELETE_GATE = "AllowUnsafeMalformedObjectDeletion"
# kube-apiserver's gate (beta, on by default since 1.34): exact and paged LISTs from
# watch cache snapshots
SNAPSHOT_GATE = "ListFromCacheSnapshot"
# how often compact_rev_key is read for other servers' compactions when this one does
# not compact (upstream's compactorPollPeriod)
COMPACTION_OBSERVE_INTERVAL = 15.0

log = logging.getLogger("watchcache.proxy")

__all__ = ["ResourceStorage", "StorageContext", "StorageMap", "new_storage"]


def _storage_codec(media_type: str) -> Codec:
    """--storage-media-type's codec; protobuf without its schema falls back to JSON,
    loudly (reads of protobuf values then fail as undecodable, naming the remedy)."""
    try:
        return codec_for(media_type)
    except SchemaUnavailable as err:
        log.warning("storing JSON instead of %s: %s", media_type, err)
        return JSON_CODEC


class StorageSettings(Protocol):
    """The flags a resource's storage is built from (upstream's ``storagebackend.Config``
    and the watch cache's options), read from the server's settings (``proxy.server.
    settings.Settings`` has them all); nothing else of the server's options."""

    @property
    def etcd_prefix(self) -> str: ...
    @property
    def etcd_request_timeout(self) -> float: ...
    @property
    def etcd_compaction_interval(self) -> float: ...
    @property
    def storage_media_type(self) -> str: ...
    @property
    def event_ttl(self) -> float: ...
    @property
    def feature_gates(self) -> Mapping[str, bool]: ...
    @property
    def watch_cache(self) -> bool: ...
    @property
    def watch_cache_index(self) -> bool: ...
    @property
    def watch_cache_indexes(self) -> Mapping[str, tuple[str, ...]]: ...
    @property
    def default_watch_cache_size(self) -> int: ...
    @property
    def watch_bookmark_interval(self) -> float: ...
    @property
    def watch_cache_snapshot_retention(self) -> float: ...
    @property
    def watch_cache_snapshot_max(self) -> int: ...


@dataclass
class StorageContext:
    """What a storage needs to be built: settings and the shared etcd client, plus the
    client's compactor (None while stopped or with compaction disabled)."""

    settings: StorageSettings
    client: EtcdClient
    # etcd3 stores by (group, resource); ("", "") is the unlabelled one health checks use
    _etcd3: dict[tuple[str, str], Etcd3Store] = field(default_factory=dict)
    compactor: Compactor | None = None
    # selectable fields of resources added at run time (custom resources' selectableFields)
    custom_attrs: dict[tuple[str, str, str], AttrsFunc] = field(default_factory=dict)
    # what the resources' storages write (--storage-media-type); set from the settings
    codec: Codec = field(init=False)

    def __post_init__(self) -> None:
        self.codec = _storage_codec(self.settings.storage_media_type)

    def attrs(self, resource: ResourceInfo) -> AttrsFunc:
        """(labels, fields) of an object of ``resource``, for selectors."""
        found = self.custom_attrs.get((resource.group, resource.version, resource.plural))
        return found if found is not None else attrs_func(resource.plural)

    def start(self) -> None:
        """Start the compactor (needs the event loop; idempotent). With compaction off
        it still observes other servers' compactions when the watch caches keep
        snapshots (they must not serve what etcd compacted)."""
        interval = self.settings.etcd_compaction_interval
        observe = COMPACTION_OBSERVE_INTERVAL if self.list_from_cache_snapshot else 0.0
        if self.compactor is None and (interval > 0 or observe > 0):
            self.compactor = Compactor(
                self.client,
                interval,
                request_timeout=self.settings.etcd_request_timeout,
                observe_interval=observe,
            )
            self.compactor.start()

    @property
    def list_from_cache_snapshot(self) -> bool:
        return self.settings.feature_gates.get(SNAPSHOT_GATE, True)

    def compact_revision(self) -> int:
        """The latest etcd compaction the compactor knows of (0: none)."""
        return self.compactor.compact_revision if self.compactor is not None else 0

    @property
    def allow_unsafe_malformed_object_deletion(self) -> bool:
        return self.settings.feature_gates.get(UNSAFE_DELETE_GATE, True)

    def ttl_seconds(self, group_resource: tuple[str, str]) -> int:
        """How long a value of ``group_resource`` lives after its last write (0: for
        ever): kube-apiserver gives only the events REST storage a TTLFunc
        (``--event-ttl``); events.k8s.io Events are the same storage."""
        if group_resource in (("", "events"), ("events.k8s.io", "events")):
            return max(int(self.settings.event_ttl), 0)
        return 0

    def etcd3(self, resource: ResourceInfo | None = None) -> Etcd3Store:
        """The etcd3 store of ``resource`` (one per resource, as kube-apiserver's, so its
        etcd calls are labelled in etcd_request_duration_seconds)."""
        key = (resource.group, resource.plural) if resource is not None else ("", "")
        store = self._etcd3.get(key)
        if store is None:
            store = Etcd3Store(
                self.client,
                request_timeout=self.settings.etcd_request_timeout,
                group=key[0],
                resource=key[1],
                allow_unsafe_malformed_object_deletion=self.allow_unsafe_malformed_object_deletion,
                codec=self.codec,
                ttl_seconds=self.ttl_seconds(key),
            )
            self._etcd3[key] = store
        return store

    def take_etcd3(self, resource: ResourceInfo) -> Etcd3Store | None:
        """Forget ``resource``'s etcd3 store and hand it to the caller, who closes it
        (a deleted CRD's, once its grace is over); the next ``etcd3`` builds a new one."""
        return self._etcd3.pop((resource.group, resource.plural), None)

    async def close(self) -> None:
        """Stop the compactor and close every etcd3 store (each stops its watchers)."""
        compactor, self.compactor = self.compactor, None
        if compactor is not None:
            await compactor.stop()
        for store in self._etcd3.values():
            await store.close()
        self._etcd3.clear()


def new_storage(resource: ResourceInfo, ctx: StorageContext) -> Interface:
    """THE choice of storage for ``resource``: with ``--watch-cache`` (the default) the
    etcd3 store wrapped in the resource's watch cache (``cacher.new_cached_storage``:
    RV=0 reads and every watch from memory, the rest routed as kube-apiserver does);
    with ``--watch-cache=false`` the etcd3 store alone. Called once per resource, at
    server start-up (``StorageMap.build_all``) as kube-apiserver builds every cacher,
    with the event loop running; etcd may be down (the cache then stays unready)."""
    settings = ctx.settings
    if not settings.watch_cache:
        return ctx.etcd3(resource)
    from cacher import DEFAULT_INDEXES, CacherConfig, new_cached_storage

    indexes: tuple[str, ...] = ()
    if settings.watch_cache_index:
        indexes = DEFAULT_INDEXES.get(resource.plural, ())
        extra = settings.watch_cache_indexes.get(resource.plural, ())
        indexes += tuple(f for f in extra if f not in indexes)
    config = CacherConfig(
        default_watch_cache_size=settings.default_watch_cache_size,
        bookmark_interval=settings.watch_bookmark_interval,
        consistent_list_from_cache=settings.feature_gates.get("ConsistentListFromCache", False),
        list_from_cache_snapshot=ctx.list_from_cache_snapshot,
        snapshot_retention=settings.watch_cache_snapshot_retention,
        snapshot_max=settings.watch_cache_snapshot_max,
        compact_revision=ctx.compact_revision,
    )
    return new_cached_storage(
        ctx.etcd3(resource),
        resource=resource.plural,
        resource_prefix=keys.resource_prefix(resource.group, resource.plural, settings.etcd_prefix),
        attrs=ctx.attrs(resource),
        kind=resource.kind,
        api_version=resource.api_version,
        indexes=indexes,
        config=config,
    )


@dataclass(frozen=True)
class ResourceStorage:
    """A resource's storage and key layout (``/registry/pods/<ns>/<name>``)."""

    resource: ResourceInfo
    store: Interface
    prefix: str
    get_attrs: AttrsFunc

    def object_key(self, namespace: str, name: str) -> str:
        ns = namespace if self.resource.namespaced else ""
        return keys.object_key(self.resource.group, self.resource.plural, name, ns, self.prefix)

    def list_key(self, namespace: str) -> str:
        """The prefix of a list/watch: one namespace, or the whole resource."""
        if self.resource.namespaced and namespace:
            return keys.namespace_prefix(
                self.resource.group, self.resource.plural, namespace, self.prefix
            )
        return keys.resource_prefix(self.resource.group, self.resource.plural, self.prefix)


@dataclass
class StorageMap:
    """Per-resource storages, built at start-up by ``build_all`` (or, for a resource not
    built then, on first use); ``close()`` closes each store once."""

    ctx: StorageContext
    _by_resource: dict[tuple[str, str, str], ResourceStorage] = field(default_factory=dict)
    # resources whose watch cache has been ready once (latched: storage-readiness)
    _ready_once: set[tuple[str, str, str]] = field(default_factory=set)
    # resources served by a view (add_view) that this map does not close
    _views: set[tuple[str, str, str]] = field(default_factory=set)

    def build_all(self, resources: Iterable[ResourceInfo]) -> None:
        """Build every resource's storage now (its watch cache starts priming at once)."""
        for resource in resources:
            self.for_resource(resource)

    def caches_ready(self) -> bool:
        """True once every built storage has been ready at least once (kube-apiserver's
        ``poststarthook/storage-readiness``: its ``ReadinessCheck``); at once without
        watch caches."""
        for key, rs in self._by_resource.items():
            if key in self._ready_once or key in self._views:
                # (resources added at run time are not the start-up hook's to wait for)
                continue
            try:
                rs.store.readiness_check()
            except NotReady:
                return False
            self._ready_once.add(key)
        return True

    def built(self) -> list[ResourceStorage]:
        """Every storage built so far."""
        return list(self._by_resource.values())

    def not_ready(self) -> list[NotReady]:
        """Why each storage that cannot serve now cannot (``readiness_check``'s errors),
        e.g. a watch cache restarting after an unexpected error (``failure`` set)."""
        reasons: list[NotReady] = []
        for rs in self._by_resource.values():
            try:
                rs.store.readiness_check()
            except NotReady as err:
                reasons.append(err)
        return reasons

    def for_resource(self, resource: ResourceInfo) -> ResourceStorage:
        key = (resource.group, resource.version, resource.plural)
        found = self._by_resource.get(key)
        if found is None:
            found = ResourceStorage(
                resource=resource,
                store=new_storage(resource, self.ctx),
                prefix=self.ctx.settings.etcd_prefix,
                get_attrs=self.ctx.attrs(resource),
            )
            self._by_resource[key] = found
        return found

    def add_view(self, resource: ResourceInfo, store: Interface) -> None:
        """Serve ``resource`` from ``store``, a view its owner built over a storage of its
        own (a custom resource version converted from its storage version's watch
        cache, ``proxy.apiextensions``); the owner closes it, not this map."""
        self._by_resource[(resource.group, resource.version, resource.plural)] = ResourceStorage(
            resource=resource,
            store=store,
            prefix=self.ctx.settings.etcd_prefix,
            get_attrs=self.ctx.attrs(resource),
        )
        self._views.add((resource.group, resource.version, resource.plural))

    def remove_view(self, resource: ResourceInfo) -> None:
        key = (resource.group, resource.version, resource.plural)
        self._views.discard(key)
        self._by_resource.pop(key, None)
        self._ready_once.discard(key)

    async def close(self) -> None:
        seen: set[int] = set()
        for key, rs in self._by_resource.items():
            if key not in self._views and id(rs.store) not in seen:
                seen.add(id(rs.store))
                await rs.store.close()
        self._by_resource.clear()
