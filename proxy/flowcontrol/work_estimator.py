"""Seats a request occupies (upstream's ``util/flowcontrol/request``: ``width.go`` and
``list_work_estimator.go``).

- LIST (and a WATCH with ``sendInitialEvents=true``, which starts with a list): one
  seat per 100 objects it is estimated to process, at least 1 and at most 10. The
  estimate starts from the resource's stored object count (the watch cache's size,
  or a periodic etcd count without one; unknown: the maximum): a list served from the
  cache processes every stored object; one from etcd with a selector reads them all
  plus the page; one from etcd without a selector reads about twice its page
  (``limit``, else all).
- everything else: 1 seat. A WATCH holds its seat only until it is initialized (the
  filter releases it when the response starts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from proxy.request.request_info import RequestInfo

__all__ = ["MAX_SEATS", "MIN_SEATS", "OBJECTS_PER_SEAT", "estimate_seats", "served_from_cache"]

MIN_SEATS = 1
MAX_SEATS = 10
OBJECTS_PER_SEAT = 100.0

CountGetter = Callable[[str, str], int | None]  # (group, resource) -> stored objects


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


def _list_seats(
    info: RequestInfo, query: Mapping[str, str], count: int | None, from_cache: bool
) -> int:
    if count is None:
        return MAX_SEATS
    try:
        limit = int(query.get("limit", "0") or 0)
    except ValueError:
        limit = 0
    page = limit if 0 < limit < count else count
    if from_cache:
        objects = count
    elif info.field_selector or info.label_selector:
        objects = count + page
    else:
        objects = 2 * page
    return max(MIN_SEATS, min(MAX_SEATS, math.ceil(objects / OBJECTS_PER_SEAT)))


def estimate_seats(
    info: RequestInfo,
    query: Mapping[str, str],
    counts: CountGetter,
    from_cache: Callable[[RequestInfo, Mapping[str, str]], bool],
) -> int:
    """The request's initial seats."""
    if not info.is_resource_request:
        return MIN_SEATS
    if info.verb == "list" or (
        info.verb == "watch" and query.get("sendInitialEvents", "") == "true"
    ):
        from_cache_now = info.verb == "watch" or from_cache(info, query)
        return _list_seats(info, query, counts(info.group, info.resource), from_cache_now)
    return MIN_SEATS
