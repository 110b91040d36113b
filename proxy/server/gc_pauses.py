"""Garbage-collector pauses, measured, and kept short (watchcache's own concern: Go's
collector runs concurrently, CPython's stops the loop).

CPython's cyclic collector walks every tracked container of the generation it
collects; an oldest-generation pass over a process holding 10,000 cached pods, the
OpenAPI documents and the protobuf schema took 100-300 ms, during which the loop
served nobody. Two measures:

- ``watchcache_gc_pause_seconds`` (histogram, by generation) times every collection
  through ``gc.callbacks``, so the benchmark and an operator see the pauses;
- a primed watch cache calls ``gc.freeze()`` (``cacher.Cacher``): everything alive
  moves to the permanent generation, which collections skip, so later passes walk only
  what requests allocate. The cache's objects live until replaced and hold no
  reference cycles: reference counting frees them when replaced, frozen or not.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import Histogram

__all__ = ["GC_PAUSE", "install"]

GC_PAUSE = Histogram(
    "watchcache_gc_pause_seconds",
    "How long each collection of CPython's cyclic garbage collector held the process "
    "(watchcache's metric), by generation.",
    ["generation"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
)

_started: list[float] = []


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _started.append(time.perf_counter())
    elif _started:
        GC_PAUSE.labels(str(info.get("generation", "?"))).observe(
            time.perf_counter() - _started.pop()
        )


def install() -> Callable[[], None]:
    """Start timing collections; returns the function that stops it."""
    if _on_gc not in gc.callbacks:
        gc.callbacks.append(_on_gc)

    def uninstall() -> None:
        if _on_gc in gc.callbacks:
            gc.callbacks.remove(_on_gc)

    return uninstall
