"""The store: key order, indexes, resourceVersion, wait-until-fresh."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from cacher.cacher import _added_then, _selected
from cacher.clock import FakeClock
from storage.errors import TooLargeResourceVersion
from tests.unit.cacher.helpers import PREFIX, new_cache, pod, predicate, rv_of


def test_replace_then_list_in_key_order_with_namespace_prefix() -> None:
    c = new_cache(FakeClock())
    c.replace([pod("b", 3, ns="ns1"), pod("a", 2, ns="ns2"), pod("a", 4, ns="ns1")], 10)
    assert c.resource_version == 10
    res = c.list_objects(PREFIX, predicate())
    assert [o.key for o in res.items] == [
        f"{PREFIX}ns1/a",
        f"{PREFIX}ns1/b",
        f"{PREFIX}ns2/a",
    ]
    assert res.resource_version == 10
    assert [o.key for o in c.list_objects(f"{PREFIX}ns1/", predicate()).items] == [
        f"{PREFIX}ns1/a",
        f"{PREFIX}ns1/b",
    ]


def test_process_tracks_types_and_deleted_carries_deletion_rv() -> None:
    c = new_cache(FakeClock())
    c.replace([], 1)
    added = c.process(f"{PREFIX}default/p", pod("p", 2), 2)
    modified = c.process(f"{PREFIX}default/p", pod("p", 3), 3)
    deleted = c.process(f"{PREFIX}default/p", None, 4)
    assert added is not None and added.type == "ADDED" and added.prev is None
    assert modified is not None and modified.type == "MODIFIED" and modified.prev is not None
    assert deleted is not None and deleted.type == "DELETED"
    assert rv_of(deleted.object.stored.data) == "4"
    assert deleted.object.stored.resource_version == 4
    assert c.get(f"{PREFIX}default/p") is None
    assert c.process(f"{PREFIX}default/zz", None, 5) is None  # unknown key: only RV moves
    assert c.resource_version == 5
    assert [e.resource_version for e in c.events_since(1)] == [2, 3, 4]


def test_node_index_fetches_only_the_bucket() -> None:
    c = new_cache(FakeClock())
    pods = [pod(f"p{i}", i + 2, node=f"n{i % 4}") for i in range(40)]
    c.replace(pods, 100)
    res = c.list_objects(PREFIX, predicate(field="spec.nodeName=n1"))
    assert res.index == "spec.nodeName"
    assert res.fetched == 10 and len(res.items) == 10
    assert [o.key for o in res.items] == sorted(o.key for o in res.items)
    # the index follows moves between nodes
    c.process(f"{PREFIX}default/p1", pod("p1", 101, node="n2"), 101)
    assert len(c.list_objects(PREFIX, predicate(field="spec.nodeName=n1")).items) == 9
    assert len(c.list_objects(PREFIX, predicate(field="spec.nodeName=n2")).items) == 11
    # a non-indexed selector scans everything
    scan = c.list_objects(PREFIX, predicate(field="spec.nodeName!=n1"))
    assert scan.index == "" and scan.fetched == 40 and scan.evaluated == 40
    assert len(scan.items) == 31


def test_an_index_bucket_is_the_scan_in_key_order_whatever_the_changes() -> None:
    c = new_cache(FakeClock())
    # a re-list out of key order that names a key twice (the last one wins)
    c.replace([pod("p5", 2, node="n1"), pod("p1", 3, node="n1"), pod("p5", 4, node="n2"),
               pod("p3", 5, node="n1")], 5)  # fmt: skip
    changes = [("p2", "n1"), ("p0", "n1"), ("p3", "n2"), ("p4", "n1"), ("p1", None), ("p3", "n1")]
    for rv, (name, node) in enumerate(changes, start=6):
        c.process(f"{PREFIX}default/{name}", None if node is None else pod(name, rv, node=node), rv)
        for n in ("n1", "n2"):
            indexed = c.list_objects(PREFIX, predicate(field=f"spec.nodeName={n}"))
            every = c.list_objects(PREFIX, predicate()).items
            scan = [o for o in every if o.field("spec.nodeName") == n]
            assert indexed.index == "spec.nodeName" and indexed.fetched == len(scan)
            assert [(o.key, o.resource_version) for o in indexed.items] == [
                (o.key, o.resource_version) for o in scan
            ]
    names = [o.key.rsplit("/", 1)[1] for o in c.list_objects(PREFIX, predicate(
        field="spec.nodeName=n1")).items]  # fmt: skip
    assert names == ["p0", "p2", "p3", "p4"]


def test_label_selector_in_memory() -> None:
    c = new_cache(FakeClock())
    c.replace([pod("a", 2, labels={"app": "x"}), pod("b", 3, labels={"app": "y"})], 3)
    res = c.list_objects(PREFIX, predicate(label="app in (x)"))
    assert [orjson.loads(o.stored.data)["metadata"]["name"] for o in res.items] == ["a"]


async def test_wait_until_fresh_wakes_on_progress() -> None:
    c = new_cache(FakeClock())
    c.replace([], 5)
    waiter = asyncio.ensure_future(c.wait_until_fresh(8))
    await asyncio.sleep(0)
    assert c.waiting == 1
    c.update_resource_version(7)
    await asyncio.sleep(0)
    assert not waiter.done()
    c.update_resource_version(8)
    await waiter


async def test_wait_until_fresh_times_out_with_too_large_rv() -> None:
    clock = FakeClock()
    c = new_cache(clock)
    c.replace([], 5)
    waiter = asyncio.ensure_future(c.wait_until_fresh(9))
    await asyncio.sleep(0)
    clock.advance(3.01)
    with pytest.raises(TooLargeResourceVersion) as err:
        await waiter
    assert err.value.message == "Too large resource version: 9, current: 5"


def test_the_bytes_held_follow_every_change() -> None:
    """APF's list estimate reads the average stored size (SizeBasedListCostEstimate):
    the total follows replaces (a repeated key counted once), adds, updates, deletes."""
    c = new_cache(FakeClock())
    first, second, again = pod("b", 3), pod("a", 2), pod("b", 4, labels={"x": "y" * 50})
    c.replace([first, second, again], 10)  # unsorted, "b" twice: the last one counts
    assert c.object_bytes == len(second.data) + len(again.data)
    grown = pod("a", 11, labels={"k": "v" * 300})
    c.process(second.key, grown, 11)
    assert c.object_bytes == len(grown.data) + len(again.data)
    added = pod("c", 12)
    c.process(added.key, added, 12)
    c.process(again.key, None, 13)
    assert c.object_bytes == len(grown.data) + len(added.data)
    c.replace([], 14)
    assert c.object_bytes == 0


def test_bytes_under_a_prefix_are_its_share_of_the_average() -> None:
    """The large-LIST estimate (proxy.endpoints.large_lists): one namespace's share."""
    c = new_cache(FakeClock())
    pods = [pod(f"p{i}", i + 1, ns="a" if i < 3 else "b") for i in range(4)]
    c.replace(pods, 10)
    average = sum(len(p.data) for p in pods) // 4
    assert c.bytes_under(f"{PREFIX}a/") == 3 * average
    assert c.bytes_under(f"{PREFIX}c/") == 0
    assert c.bytes_under(PREFIX) == 4 * average


async def test_a_scan_selects_in_bounded_steps_at_the_lists_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A whole list's selector without an index is applied by the cacher between other
    tasks' turns (``STEP_SECONDS`` 0: one candidate a step), to the versions the list
    took: a write that lands meanwhile is not in it, as in one step."""
    c = new_cache(FakeClock())
    c.replace([pod(f"p{i}", i + 2, node=f"n{i % 4}") for i in range(40)], 100)
    scan = predicate(field="spec.nodeName!=n1")
    whole = c.list_objects(PREFIX, scan)
    pending = c.list_objects(PREFIX, scan, later=True)
    assert pending.selecting is scan and len(pending.items) == 40
    monkeypatch.setattr("storage.steps.STEP_SECONDS", 0.0)
    turns = 0

    async def writer() -> None:  # another request's turns: one write, then counting
        nonlocal turns
        c.process(f"{PREFIX}default/p0", pod("p0", 101, node="n1"), 101)
        while not done:
            turns += 1
            await asyncio.sleep(0)

    done = False
    task = asyncio.create_task(writer())
    res = await _selected(pending)
    done = True
    await task
    assert turns >= 40
    assert [o.stored for o in res.items] == [o.stored for o in whole.items]
    assert (res.evaluated, res.fetched, res.selecting) == (40, 40, None)
    assert len(whole.items) == 30 and len(c.list_objects(PREFIX, scan).items) == 29  # p0 left


def test_a_watchs_initial_state_is_selected_as_its_events_are_read() -> None:
    """A watch from RV 0 takes the candidates at registration and selects them as its
    ADDED events are read: the versions it was registered at, only the matching ones."""
    c = new_cache(FakeClock())
    c.replace([pod(f"p{i}", i + 2, node=f"n{i % 4}") for i in range(8)], 100)
    scan = predicate(field="spec.nodeName!=n1")
    state = c.list_objects(PREFIX, scan, later=True)
    events = _added_then(state.items, state.selecting, None)
    first = next(events)
    c.process(f"{PREFIX}default/p7", pod("p7", 101, node="n1"), 101)  # leaves the selection
    rest = list(events)
    names = [orjson.loads(e.data)["metadata"]["name"] for e in [first, *rest]]
    assert names == ["p0", "p2", "p3", "p4", "p6", "p7"]
    assert {e.type for e in rest} == {"ADDED"} and rest[-1].resource_version == 9
