"""The simulated cluster's event correlator (client-go's EventCorrelator), without a
server: what the spam filter lets through, when similar events are combined, which
events are one Event (a count) — and the scheduler's FailedScheduling message. The
writes themselves are tested end to end in tests/e2e/test_sim.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from lab.sim.events import AGGREGATE_MAX_EVENTS, COMBINED, SPAM_BURST, EventBroadcaster
from lab.sim.events import object_reference as ref_of
from lab.sim.scheduler import Scheduler

JSON = dict[str, Any]
POD: JSON = {"metadata": {"name": "web", "namespace": "default", "uid": "u1"}}


@pytest.fixture
async def broadcaster() -> AsyncIterator[EventBroadcaster]:
    b = EventBroadcaster("http://127.0.0.1:1")  # never contacted: nothing runs its writer
    yield b
    await b.client.close()


def _queued(b: EventBroadcaster) -> list[JSON]:
    out = []
    while not b.queue.empty():
        out.append(b.queue.get_nowait())
    return out


async def test_an_event_names_its_object_its_source_and_its_namespace(
    broadcaster: EventBroadcaster,
) -> None:
    broadcaster.recorder("kubelet", "node-1").event(
        ref_of(POD, "Pod", field_path="spec.containers{web}"), "Normal", "Started",
        "Started container web")  # fmt: skip
    broadcaster.recorder("node-controller").event(
        ref_of({"metadata": {"name": "node-1", "uid": "n1"}}, "Node"), "Normal", "X", "y")
    pod_event, node_event = _queued(broadcaster)
    assert pod_event["metadata"]["namespace"] == "default"
    assert pod_event["metadata"]["name"].startswith("web.")
    assert pod_event["involvedObject"] == {"kind": "Pod", "name": "web", "uid": "u1",
                                           "apiVersion": "v1", "namespace": "default",
                                           "fieldPath": "spec.containers{web}"}  # fmt: skip
    assert pod_event["source"] == {"component": "kubelet", "host": "node-1"}
    assert pod_event["count"] == 1 and pod_event["firstTimestamp"] == pod_event["lastTimestamp"]
    assert node_event["metadata"]["namespace"] == "default"  # a cluster-scoped object's


async def test_the_spam_filter_lets_a_burst_through_per_object_and_type(
    broadcaster: EventBroadcaster,
) -> None:
    recorder = broadcaster.recorder("kubelet", "node-1")
    for i in range(SPAM_BURST + 5):
        recorder.event(ref_of(POD, "Pod"), "Normal", "Started", f"m{i}")
    recorder.event(ref_of(POD, "Pod"), "Warning", "BackOff", "again")  # another type
    other = {"metadata": {"name": "db", "namespace": "default", "uid": "u2"}}
    recorder.event(ref_of(other, "Pod"), "Normal", "Started", "m")  # another object
    allowed = [e for e in _queued(broadcaster) if broadcaster._allowed(e)]
    assert len(allowed) == SPAM_BURST + 2
    assert broadcaster.dropped == 5


async def test_similar_events_are_combined_after_ten_messages(
    broadcaster: EventBroadcaster,
) -> None:
    recorder = broadcaster.recorder("kubelet", "node-1")
    for i in range(AGGREGATE_MAX_EVENTS + 2):
        recorder.event(ref_of(POD, "Pod"), "Warning", "Unhealthy", f"probe failed {i}")
    results = [broadcaster._aggregate(e) for e in _queued(broadcaster)]
    plain, combined = results[:AGGREGATE_MAX_EVENTS], results[AGGREGATE_MAX_EVENTS:]
    assert len({key for _, key in plain}) == AGGREGATE_MAX_EVENTS  # each its own Event
    assert [e["message"] for e, _ in combined] == [
        f"{COMBINED}probe failed {i}" for i in (10, 11)]  # fmt: skip
    assert combined[0][1] == combined[1][1]  # one Event, patched


async def test_a_repeated_event_has_the_key_of_the_first(broadcaster: EventBroadcaster) -> None:
    recorder = broadcaster.recorder("kubelet", "node-1")
    for _ in range(2):
        recorder.event(ref_of(POD, "Pod"), "Normal", "Pulled", "already present")
    first, second = (broadcaster._aggregate(e)[1] for e in _queued(broadcaster))
    assert first == second


class _Nodes:
    def __init__(self, nodes: list[JSON]) -> None:
        self._nodes = nodes

    def items(self) -> list[JSON]:
        return self._nodes


async def test_the_failed_scheduling_message_counts_the_nodes_filtered_out(
    broadcaster: EventBroadcaster,
) -> None:
    scheduler = Scheduler("http://127.0.0.1:1", _Nodes([]), broadcaster)  # type: ignore[arg-type]
    try:
        assert scheduler.unschedulable_message() == "no nodes available to schedule pods"
        scheduler.nodes = _Nodes([{"spec": {"unschedulable": True}}, {}, {}])  # type: ignore[assignment]
        assert scheduler.unschedulable_message() == (
            "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated "
            "taint {node.kubernetes.io/not-ready: }. preemption: 0/3 nodes are available: 3 "
            "Preemption is not helpful for scheduling.")  # fmt: skip
    finally:
        await scheduler.client.close()
