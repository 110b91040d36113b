"""The cacher's knobs, named after kube-apiserver's flags where one exists."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from cacher.clock import Clock, RealClock
from cacher.snapshotter import DEFAULT_MAX_SNAPSHOTS, DEFAULT_RETENTION


@dataclass(frozen=True)
class CacherConfig:
    """Configuration shared by every resource's cache.

    ``default_watch_cache_size``: ``--default-watch-cache-size``; -1 (default) keeps
    kube-apiserver's dynamic ring (100 … 102,400 events), N > 0 a fixed ring of N.
    ``watch_cache_sizes``: per-resource overrides (``--watch-cache-sizes=pods#1000``).
    ``bookmark_interval``: seconds between BOOKMARKs (~1 min upstream; short in tests).
    ``bookmark_pre_timeout``: a BOOKMARK this long before a watch's deadline.
    ``watcher_buffer_size`` / ``watcher_time_budget``: a watcher whose buffer stays full
    longer than the budget (or reaches twice the size) is closed.
    ``consistent_list_from_cache``: ``--feature-gates=ConsistentListFromCache=true``.
    ``freshness_wait``: the bound on waiting for the cache to reach a requested RV (3 s).
    ``list_from_cache_snapshot``: ``--feature-gates=ListFromCacheSnapshot`` (on, as in
    kube-apiserver 1.34+): keep snapshots of the store and serve LISTs at an exact
    revision and continue pages from them.
    ``snapshot_retention`` / ``snapshot_max``: ``--watch-cache-snapshot-retention`` and
    ``--watch-cache-snapshot-max`` (ours; upstream keeps snapshots as long as its event
    history, see ``cacher.snapshotter``).
    ``compact_revision``: the latest etcd compaction known (the etcd3 compactor's, shared
    by every resource); snapshots below it are dropped. None: none known.
    """

    default_watch_cache_size: int = -1
    watch_cache_sizes: Mapping[str, int] = field(default_factory=dict)
    bookmark_interval: float = 60.0
    bookmark_pre_timeout: float = 2.0
    watcher_buffer_size: int = 100
    watcher_time_budget: float = 0.25
    consistent_list_from_cache: bool = False
    freshness_wait: float = 3.0
    progress_request_interval: float = 0.1
    page_size: int = 10_000
    list_from_cache_snapshot: bool = True
    snapshot_retention: float = DEFAULT_RETENTION
    snapshot_max: int = DEFAULT_MAX_SNAPSHOTS
    compact_revision: Callable[[], int] | None = None
    clock: Clock = field(default_factory=RealClock)

    def history_capacity(self, resource: str) -> int | None:
        """The ring size for ``resource``: None for the dynamic ring."""
        size = self.watch_cache_sizes.get(resource, self.default_watch_cache_size)
        return size if size > 0 else None

    @property
    def tick(self) -> float:
        """How often bookmarks are due-checked and budgets enforced (1 s upstream)."""
        return max(0.02, min(1.0, self.bookmark_interval / 4, self.bookmark_pre_timeout / 2))
