"""The cacher's Prometheus metrics, named as kube-apiserver's (``storage/cacher/metrics``).

Registered once in the default registry; every cacher labels them with its resource.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

EVENTS_RECEIVED = Counter(
    "apiserver_watch_cache_events_received_total",
    "Counter of events received in watch cache broken by resource type.",
    ["resource"],
)
EVENTS_DISPATCHED = Counter(
    "apiserver_watch_cache_events_dispatched_total",
    "Counter of events dispatched in watch cache broken by resource type.",
    ["resource"],
)
RESOURCE_VERSION = Gauge(
    "apiserver_watch_cache_resource_version",
    "Current resource version of watch cache broken by resource type.",
    ["resource"],
)
INITIALIZATIONS = Counter(
    "apiserver_watch_cache_initializations_total",
    "Counter of watch cache initializations broken by resource type.",
    ["resource"],
)
READ_WAIT = Histogram(
    "apiserver_watch_cache_read_wait_seconds",
    "Histogram of time spent waiting for a watch cache to become fresh.",
    ["resource"],
    buckets=(0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3),
)
CONSISTENT_READ = Counter(
    "apiserver_watch_cache_consistent_read_total",
    "Counter for consistent reads from cache.",
    ["resource", "success", "fallback"],
)
# Ours: why a consistent read was (not) served from the cache (see cacher.progress).
CONSISTENT_READ_OUTCOME = Counter(
    "watchcache_consistent_read_outcomes_total",
    "Consistent LIST outcomes: fresh, progress, fallback_timeout, fallback_unsupported.",
    ["resource", "outcome"],
)
CACHE_LIST = Counter(
    "apiserver_cache_list_total", "Number of LIST requests served from watch cache",
    ["resource", "index"],
)  # fmt: skip
CACHE_LIST_FETCHED = Counter(
    "apiserver_cache_list_fetched_objects_total",
    "Number of objects read from watch cache in the course of serving a LIST request",
    ["resource", "index"],
)
CACHE_LIST_RETURNED = Counter(
    "apiserver_cache_list_returned_objects_total",
    "Number of objects returned for a LIST request from watch cache",
    ["resource"],
)
TERMINATED_WATCHERS = Counter(
    "apiserver_terminated_watchers_total",
    "Counter of watchers closed due to unresponsiveness broken by resource type.",
    ["resource"],
)
CAPACITY = Gauge(
    "watch_cache_capacity", "Total capacity of watch cache broken by resource type.", ["resource"]
)
# Ours: unexpected task failures that restarted a cache (see cacher.cacher).
RESTARTS = Counter(
    "watchcache_watch_cache_restarts_total",
    "Watch cache restarts after an unexpected error in one of its tasks.",
    ["resource", "task"],
)
# kube-apiserver's name (storage/etcd3 recordDecodeError): values the cache skipped.
DECODE_ERRORS = Counter(
    "apiserver_storage_decode_errors_total",
    "Number of stored object decode errors split by object type",
    ["resource"],
)
# Ours: snapshots held for LISTs at an exact revision and continue pages
# (ListFromCacheSnapshot; see cacher.snapshotter).
SNAPSHOTS = Gauge(
    "watchcache_watch_cache_snapshots",
    "Snapshots of the watch cache's store held for exact and paginated LISTs.",
    ["resource"],
)

# Ours: keys whose newest value cannot be decoded (skipped: the watch cache does not
# hold them, cacher.reflector), shown in /readyz?verbose too.
CORRUPT_OBJECTS = Gauge(
    "watchcache_corrupt_objects",
    "Keys whose newest value in etcd cannot be decoded, so the watch cache does not "
    "serve them (until a valid write or a delete).",
    ["resource"],
)


def corrupt_objects() -> dict[str, int]:
    """``{resource: keys}`` for every resource with at least one corrupt key."""
    found: dict[str, int] = {}
    for family in CORRUPT_OBJECTS.collect():
        for sample in family.samples:
            if sample.value:
                found[sample.labels["resource"]] = int(sample.value)
    return found
