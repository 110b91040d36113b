"""Seats a request occupies (upstream's ``util/flowcontrol/request``: ``width.go`` and
``list_work_estimator.go``).

- LIST (and a WATCH with ``sendInitialEvents=true``, which starts with a list): with
  ``SizeBasedListCostEstimate`` (beta, on by default since 1.34), one seat per
  100,000 bytes the list is expected to hold in memory at once: the objects it loads
  (its page, or every stored object; half of them at least with a selector on etcd;
  one for a list naming one object) times the resource's average object size; a list
  from the cache at most 1,000,000 bytes (it streams). Without the gate, or when the
  average size is unknown (an uncached resource: its periodic count has no sizes),
  one seat per 100 objects it processes (a list from the cache processes every stored
  object; one from etcd with a selector reads them all plus the page; one from etcd
  without a selector about twice its page). At least 1 seat; at most 100 with the
  gate (10 without), and at most the priority level's ``max_seats``. No statistics
  yet: the maximum.
- everything else: 1 seat. A WATCH holds its seat only until it is initialized (the
  filter releases it when the response starts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from proxy.request.request_info import RequestInfo

__all__ = [
    "MAX_LIST_SEATS",
    "MAX_SEATS",
    "MIN_SEATS",
    "OBJECTS_PER_SEAT",
    "Stats",
    "estimate_seats",
    "served_from_cache",
]

MIN_SEATS = 1
MAX_SEATS = 10  # a list's most seats without SizeBasedListCostEstimate
MAX_LIST_SEATS = 100  # with it (upstream's MaximumListSeatsLimit)
OBJECTS_PER_SEAT = 100.0
BYTES_PER_SEAT = 100_000
CACHE_STREAMING_MAX_BYTES = 1_000_000  # a list from the cache streams: this much at once


@dataclass(frozen=True)
class Stats:
    """A resource's stored objects (upstream's ``storage.Stats``)."""

    object_count: int
    average_object_bytes: int = 0  # 0: unknown


StatsGetter = Callable[[str, str], Stats | None]  # (group, resource) -> stats, or unknown


def served_from_cache(query: Mapping[str, str], cached: bool, consistent_from_cache: bool) -> bool:
    """Whether a LIST is served by the watch cache, as upstream's list work estimator
    asks the delegator's table (``ShouldDelegateListMeta``) with a cache *without*
    snapshots: continue, Exact and the legacy exact form count as etcd reads even
    though snapshots may serve them (the estimate cannot know what the cache holds)."""
    if not cached or query.get("continue"):
        return False
    rv = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    if match == "NotOlderThan":
        return True
    if match == "Exact":
        return False
    if rv == "":
        return consistent_from_cache
    return rv == "0" or not query.get("limit")


def _limited(query: Mapping[str, str], count: int) -> int:
    try:
        limit = int(query.get("limit", "0") or 0)
    except ValueError:
        limit = 0
    return limit if 0 < limit < count else count


def _objects(info: RequestInfo, stats: Stats, page: int, from_cache: bool, by_size: bool) -> int:
    """The objects a list holds in memory at once (``by_size``), or processes."""
    if info.name:
        return 1
    if from_cache:
        return page if by_size else stats.object_count
    if info.field_selector or info.label_selector:
        return max(page, stats.object_count // 2) if by_size else stats.object_count + page
    return page if by_size else 2 * page


def estimate_seats(
    info: RequestInfo,
    query: Mapping[str, str],
    stats: StatsGetter,
    from_cache: Callable[[RequestInfo, Mapping[str, str]], bool],
    size_based: bool = True,
    level_max: int = 0,
) -> int:
    """The request's initial seats; ``size_based``: the SizeBasedListCostEstimate gate;
    ``level_max``: its priority level's most seats per request (0: none)."""
    if not info.is_resource_request:
        return MIN_SEATS
    if not (
        info.verb == "list"
        or (info.verb == "watch" and query.get("sendInitialEvents", "") == "true")
    ):
        return MIN_SEATS
    most = MAX_LIST_SEATS if size_based else MAX_SEATS
    if 0 < level_max < most:
        most = level_max
    found = stats(info.group, info.resource)
    if found is None:
        return most
    cached = info.verb == "watch" or from_cache(info, query)
    by_size = size_based and (found.average_object_bytes > 0 or found.object_count == 0)
    objects = _objects(info, found, _limited(query, found.object_count), cached, by_size)
    if not by_size:
        seats = objects / OBJECTS_PER_SEAT
    else:
        in_memory = objects * found.average_object_bytes
        if cached:  # streamed from the cache
            in_memory = min(in_memory, CACHE_STREAMING_MAX_BYTES)
        seats = in_memory / BYTES_PER_SEAT
    return max(MIN_SEATS, min(most, math.ceil(seats)))
