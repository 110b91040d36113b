"""Each collection of the cyclic garbage collector is timed, by generation, while the
timing is installed."""

from __future__ import annotations

import gc

from proxy.server.gc_pauses import GC_PAUSE, install


def _count(generation: str) -> float:
    for metric in GC_PAUSE.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count") and sample.labels["generation"] == generation:
                return sample.value
    return 0.0


def test_collections_are_timed_while_installed() -> None:
    before = _count("2")
    stop = install()
    try:
        gc.collect()
        assert _count("2") == before + 1
    finally:
        stop()
    gc.collect()
    assert _count("2") == before + 1
