"""At most a few large LISTs are read and written at once (issue 23 §8).

Every request runs on one event loop, so the loop's lag is the sum of the steps of
every task that is ready: 20 LISTs of 11 MiB each, read and written concurrently in
bounded steps, still made a 10 ms ticker wait 150 ms at p99 (750 ms at most) and a
light client's small LIST 650 ms, and each held its whole result in memory meanwhile
(100 LISTs of 28 MB: 504s, RSS 299 → 609 MB). Go's scheduler runs such requests
beside the others; here a LIST expected to read more than ``LARGE_LIST_BYTES`` waits
for one of ``SLOTS`` slots before it reads anything, and holds it until its response is
written: the loop then interleaves at most ``SLOTS`` heavy tasks with the light ones,
and at most ``SLOTS`` large results are in memory. Waiting is bounded by the request's
deadline (a 504 past it, as any slow request) and counted in
``watchcache_large_lists_waiting`` (now) and ``watchcache_large_lists_waited_total``
(every one that found the slots taken). The slots are FIFO, so no large LIST starves.

What a LIST reads is estimated before it runs, from the watch cache (the objects under
its key prefix, O(log n), times their average size); a paged LIST (``limit`` ≤ 500)
is never large, nor is one of a resource without a watch cache (no estimate).
kube-apiserver has no such bound (its APF seats, which follow the bytes since 1.34,
are its only one); watchcache needs it because of its single loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from prometheus_client import Counter, Gauge

from proxy.registry.storage_factory import ResourceStorage
from storage.interfaces import ListOptions

__all__ = ["LARGE_LIST_BYTES", "SLOTS", "expected_bytes", "large_list_slot"]

LARGE_LIST_BYTES = 1 << 20
SLOTS = 2
PAGED = 500  # kubectl's --chunk-size: a page this small is never large

WAITING = Gauge(
    "watchcache_large_lists_waiting",
    "LISTs expected to read more than 1 MiB waiting for one of the few that run at once "
    "(watchcache's metric: its single event loop interleaves them with every request).",
)

WAITED = Counter(
    "watchcache_large_lists_waited",
    "LISTs expected to read more than 1 MiB that found every slot taken and waited.",
)

_slots: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}


def expected_bytes(rs: ResourceStorage, namespace: str, opts: ListOptions) -> int:
    """About how many stored bytes a LIST reads; 0 when small or unknown."""
    if 0 < opts.predicate.limit <= PAGED:
        return 0
    cacher = getattr(rs.store, "cacher", None)
    if cacher is None:
        return 0
    found: int = cacher.cache.bytes_under(rs.list_key(namespace))
    return found


def _semaphore() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    found = _slots.get(loop)
    if found is None:  # one per loop: tests run servers on fresh loops
        _slots.clear()
        found = _slots[loop] = asyncio.Semaphore(SLOTS)
    return found


@asynccontextmanager
async def large_list_slot(expected: int) -> AsyncIterator[None]:
    """Hold a slot while a LIST of ``expected`` bytes runs (none when it is small)."""
    if expected <= LARGE_LIST_BYTES:
        yield
        return
    slots = _semaphore()
    if slots.locked():
        WAITED.inc()
    WAITING.inc()
    try:
        await slots.acquire()
    finally:
        WAITING.dec()
    try:
        yield
    finally:
        slots.release()
