"""Fan-out: interest by key, node-indexed wake-ups, bookmarks."""

from __future__ import annotations

from unittest import mock

import orjson

from cacher.clock import FakeClock
from cacher.dispatcher import Dispatcher
from tests.unit.cacher.helpers import PREFIX, new_cache, new_watcher, pod, predicate


def test_node_scoped_watchers_woken_only_for_their_node() -> None:
    clock = FakeClock()
    d = Dispatcher(clock=clock, kind="Pod", api_version="v1", index_field="spec.nodeName")
    c = new_cache(clock)
    c.replace([], 1)
    n1 = new_watcher(clock, selection=predicate(field="spec.nodeName=n1"), on_close=d.forget)
    n2 = new_watcher(clock, selection=predicate(field="spec.nodeName=n2"), on_close=d.forget)
    ns = new_watcher(clock, key=f"{PREFIX}other/", on_close=d.forget)
    d.add_watcher(n1, "n1")
    d.add_watcher(n2, "n2")
    d.add_watcher(ns)
    ev = c.process(f"{PREFIX}default/a", pod("a", 2, node="n1"), 2)
    assert ev is not None
    with mock.patch.object(n2, "add", wraps=n2.add) as n2_add:  # was n2 woken at all?
        d.dispatch(ev)
        assert n1.buffered == 1 and n2_add.call_count == 0 and ns.buffered == 0
        moved = c.process(f"{PREFIX}default/a", pod("a", 3, node="n2"), 3)
        assert moved is not None
        d.dispatch(moved)  # leaves n1 (DELETED there), enters n2
    assert n1.buffered == 2 and [call.args[0].key for call in n2_add.call_args_list] == [
        f"{PREFIX}default/a"
    ]


def test_bookmarks_every_interval_and_before_deadline_only_above_start_rv() -> None:
    clock = FakeClock()
    d = Dispatcher(clock=clock, kind="Pod", api_version="v1", bookmark_interval=10, pre_timeout=2)
    w = new_watcher(
        clock, allow_bookmarks=True, start_rv=5, deadline=clock.now() + 25, on_close=d.forget
    )
    d.add_watcher(w)
    clock.advance(10)
    d.tick(5)  # not above the start RV: nothing
    assert w.buffered == 0
    clock.advance(10)
    d.tick(7)
    assert w.buffered == 1
    assert w.next_bookmark == clock.now() + 3  # 2 s before the deadline
    clock.advance(3)
    d.tick(8)
    assert w.buffered == 2 and w.next_bookmark is None
    ev = w._buf[-1]
    assert ev.type == "BOOKMARK" and orjson.loads(ev.data) == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "8"},
    }
    clock.advance(2)
    assert w.closed is not None and len(d) == 0


def test_tick_closes_a_watcher_full_past_its_budget_without_new_events() -> None:
    clock = FakeClock()
    d = Dispatcher(clock=clock, kind="Pod", api_version="v1")
    c = new_cache(clock)
    c.replace([], 1)
    w = new_watcher(clock, buffer_size=2, time_budget=0.5, on_close=d.forget)
    d.add_watcher(w)
    for rv in (2, 3, 4):  # the third event finds the buffer full: the budget starts
        ev = c.process(f"{PREFIX}default/p{rv}", pod(f"p{rv}", rv), rv)
        assert ev is not None
        d.dispatch(ev)
    d.tick(4)
    assert w.closed is None
    clock.advance(0.6)
    d.tick(4)
    assert w.closed is not None and len(d) == 0 and d.terminated_slow == 1
