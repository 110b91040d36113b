"""Each collection of the cyclic garbage collector is timed, by generation, while the
timing is installed."""

from __future__ import annotations

import gc
import weakref

from proxy.server.gc_pauses import GC_PAUSE, YOUNG_THRESHOLDS, install


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


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_many_survivors_of_a_full_collection_are_frozen_and_garbage_is_not() -> None:
    gc.collect()
    frozen_before = gc.get_freeze_count()
    stop = install(freeze_survivors=1_000)
    try:
        kept = [[i] for i in range(5_000)]  # long-lived tracked objects, as a cache's
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a cycle: only the collector can free it
        dead = weakref.ref(a)
        del a, b
        gc.collect()
        assert dead() is None  # collected first: what is frozen is what was alive
        assert gc.get_freeze_count() >= frozen_before + len(kept)
        assert not any(o is kept for o in gc.get_objects(2))  # out of later passes
        assert len(gc.get_objects(2)) < 1_000
    finally:
        stop()
        gc.unfreeze()


def test_few_survivors_are_left_to_the_collector() -> None:
    gc.collect()
    frozen_before = gc.get_freeze_count()
    stop = install(freeze_survivors=10**9)
    try:
        kept = [[i] for i in range(5_000)]
        gc.collect()
        assert gc.get_freeze_count() == frozen_before
        assert any(o is kept for o in gc.get_objects(2))
    finally:
        stop()


def test_the_young_generations_are_sized_while_installed() -> None:
    before = gc.get_threshold()
    stop = install()
    try:
        assert gc.get_threshold() == (*YOUNG_THRESHOLDS, before[2])
    finally:
        stop()
    assert gc.get_threshold() == before


def test_cyclic_garbage_is_still_freed_by_the_collections_that_run_on_their_own() -> None:
    gc.collect()
    stop = install(freeze_survivors=None)
    try:
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # garbage only the collector can free, as a request's
        dead = weakref.ref(a)
        del a, b
        assert dead() is not None
        # net new tracked objects, as a request that holds a page: no gc.collect()
        kept = [[i] for i in range(YOUNG_THRESHOLDS[0] * 2)]
        assert dead() is None
        assert len(kept) == YOUNG_THRESHOLDS[0] * 2
    finally:
        stop()
