"""Garbage-collector pauses, measured, and kept short (watchcache's own concern: Go's
collector runs concurrently, CPython's stops the loop).

CPython's cyclic collector walks every tracked container of the generation it
collects; an oldest-generation pass over a process holding 10,000 cached pods, the
OpenAPI documents and the protobuf schema took 100-300 ms, during which the loop
served nobody. The measures:

- ``watchcache_gc_pause_seconds`` (histogram, by generation) times every collection
  through ``gc.callbacks``, so the benchmark and an operator see the pauses;
- a primed watch cache calls ``gc.freeze()`` (``cacher.Cacher``): everything alive
  moves to the permanent generation, which collections skip, so later passes walk only
  what requests allocate. The cache's objects live until replaced and hold no
  reference cycles: reference counting frees them when replaced, frozen or not;
- the survivors of a full collection are frozen too when there are more than
  ``FREEZE_SURVIVORS`` of them: objects the cache took in after it was primed (10,000
  pods created after the server started left ~200,000 tracked objects behind, each of
  them walked by every full pass: 250 ms pauses, 30 of them during one YAML LIST).
  Right after a full collection every unreachable cycle has just been freed, so what
  is frozen is what is alive. The cost: an object alive then that later dies *in a
  cycle* is never collected; reference counting frees everything else. Such objects
  are request state in flight at that instant (a few per request), and a freeze needs
  ``FREEZE_SURVIVORS`` new long-lived objects first, so they stay few
  (docs/bench/event-loop.md measures them);
- the young generations are sized to a request's garbage (``YOUNG_THRESHOLDS``, set
  by ``install``): with CPython's default of 700, an etcd LIST of 10,000 pods, which
  keeps a page of decoded objects alive while it writes them, ran ~17 young passes and
  1-2 middle ones, each promoting what was alive at that instant (objects that die a
  moment later, by reference counting, in an older generation). At 2,000 it runs ~4
  young passes, a middle pass walks about as many as with the default (6,000-9,000),
  and what lives a few milliseconds dies young. The thresholds count *net* new tracked
  objects, so cyclic garbage is still found by the same passes, a little later
  (docs/bench/event-loop.md, "Round six — collections").
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import Counter, Histogram

__all__ = ["FREEZE_SURVIVORS", "FROZEN", "GC_PAUSE", "YOUNG_THRESHOLDS", "install"]

# a full pass walks ~0.1-0.2 us an object idle, 0.5-1 us on a loaded machine (measured)
FREEZE_SURVIVORS = 20_000
OLDEST = 2  # CPython's oldest generation: its collection is the full one
# (generation 0, generation 1): net new tracked objects before a young pass, young
# passes before a middle one. A young pass walks at most ~2,000 objects (~1-2 ms of CPU
# on a loaded machine, 0.5-1 us each) and a middle one ~2,000 x 3 survivors, about as
# many as with CPython's (700, 10); (2,000, 7) made middle passes of 10-14 ms (measured).
YOUNG_THRESHOLDS = (2_000, 3)

GC_PAUSE = Histogram(
    "watchcache_gc_pause_seconds",
    "How long each collection of CPython's cyclic garbage collector held the process "
    "(watchcache's metric), by generation.",
    ["generation"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
)

FROZEN = Counter(
    "watchcache_gc_frozen_objects",
    "Objects that survived a full collection of CPython's cyclic garbage collector and "
    "were moved to its permanent generation, out of later passes (watchcache's metric).",
)

_started: list[float] = []


def _timer(freeze_survivors: int | None) -> Callable[[str, dict[str, Any]], None]:
    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            _started.append(time.perf_counter())
            return
        generation = info.get("generation")
        if _started:
            GC_PAUSE.labels(str(generation)).observe(time.perf_counter() - _started.pop())
        if freeze_survivors is not None and generation == OLDEST:
            survivors = len(gc.get_objects(OLDEST))
            if survivors > freeze_survivors:
                gc.freeze()  # the collection is over: the survivors are what is alive
                FROZEN.inc(survivors)

    return on_gc


def install(
    freeze_survivors: int | None = FREEZE_SURVIVORS,
    young_thresholds: tuple[int, int] = YOUNG_THRESHOLDS,
) -> Callable[[], None]:
    """Start timing collections, freezing the survivors of a full collection when they
    are more than ``freeze_survivors`` (None: never), and collecting the young
    generations at ``young_thresholds``; returns the function that undoes all three."""
    on_gc = _timer(freeze_survivors)
    gc.callbacks.append(on_gc)
    before = gc.get_threshold()
    gc.set_threshold(*young_thresholds, before[OLDEST])

    def uninstall() -> None:
        if on_gc in gc.callbacks:
            gc.callbacks.remove(on_gc)
            gc.set_threshold(*before)

    return uninstall
