"""API Priority and Fairness pieces without a server: shuffle sharding, the queue set's
fair queuing (fake clock), classification, seat estimation, borrowing, the dumps."""

from __future__ import annotations

import asyncio

import pytest

from proxy.flowcontrol.apf_controller import APFController, allocate
from proxy.flowcontrol.debug import tabulate
from proxy.flowcontrol.fairqueuing.queueset import QueueSet, QueuingConfig, Rejected, Request
from proxy.flowcontrol.fairqueuing.shufflesharding import deal, flow_hash
from proxy.flowcontrol.work_estimator import estimate_seats, served_from_cache
from proxy.request.request_info import parse_request_info
from proxy.request.user import UserInfo
from tests.unit.proxy.informer.fakes import fake_factory


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_hand_is_distinct_cards_of_the_deck() -> None:
    for flow in range(2000):
        hand = deal(flow_hash("fs", f"user-{flow}"), 64, 6)
        assert len(set(hand)) == 6 and all(0 <= c < 64 for c in hand)
    assert deal(flow_hash("fs", "a"), 64, 6) == deal(flow_hash("fs", "a"), 64, 6)
    with pytest.raises(ValueError, match="hand size"):
        deal(1, 4, 5)


def _req(flow: str, seats: int = 1) -> Request:
    return Request("fs", flow, seats, 0.0, 0.0)


async def test_fair_queuing_serves_a_quiet_flow_before_an_elephants_backlog() -> None:
    clock = FakeClock()
    qs = QueueSet("pl", limit=1, queuing=QueuingConfig(64, 1, 100), clock=clock)
    running = _req("elephant")
    await qs.acquire(running, 10)
    elephants = [_req("elephant") for _ in range(20)]
    waits = [asyncio.create_task(qs.acquire(r, 10)) for r in elephants]
    await asyncio.sleep(0)
    mouse = _req("mouse")
    mouse_wait = asyncio.create_task(qs.acquire(mouse, 10))
    await asyncio.sleep(0)
    clock.now += 0.01
    qs.release(running)  # one seat frees: who goes next?
    await asyncio.sleep(0)
    started = [r for r in [*elephants, mouse] if r.start is not None]
    assert started == [mouse], "the mouse's queue has the smaller virtual finish time"
    await mouse_wait
    for r in started:
        qs.release(r)
    for task in waits:
        task.cancel()
    await asyncio.gather(*waits, return_exceptions=True)
    assert qs.waiting_count == 0 and not qs.executing and qs.seats_in_use == 0


async def test_queue_full_time_out_and_reject_only_levels() -> None:
    qs = QueueSet("pl", limit=1, queuing=QueuingConfig(1, 1, 1))
    await qs.acquire(_req("a"), 1)
    waiter = asyncio.create_task(qs.acquire(_req("a"), 0.05))
    await asyncio.sleep(0)
    with pytest.raises(Rejected) as full:
        await qs.acquire(_req("a"), 1)
    assert full.value.reason == "queue-full"
    with pytest.raises(Rejected) as late:
        await waiter
    assert late.value.reason == "time-out" and qs.timed_out == 1
    reject_only = QueueSet("catch-all", limit=1)
    await reject_only.acquire(_req("x"), 1)
    with pytest.raises(Rejected) as busy:
        await reject_only.acquire(_req("y"), 1)
    assert busy.value.reason == "concurrency-limit"
    exempt = QueueSet("exempt", limit=0, exempt=True)
    for _ in range(5):
        await exempt.acquire(_req("z"), 1)
    assert len(exempt.executing) == 5


def _info(method: str, path: str, query: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return parse_request_info(method, path, query or {})


def test_classification_follows_the_bootstrap_schemas() -> None:
    controller = APFController(None, 600)
    masters = UserInfo("admin", groups=("system:masters", "system:authenticated"))
    alice = UserInfo("alice", groups=("system:authenticated",))
    pods = _info("GET", "/api/v1/namespaces/ns/pods")
    assert controller.classify(masters, pods)[1].name == "exempt"
    schema, level = controller.classify(alice, pods)
    assert (schema.name, level.name) == ("catch-all", "catch-all")  # mandatory only
    probe = _info("GET", "/healthz")
    assert controller.classify(alice, probe)[0].name == "probes"
    assert controller.levels["catch-all"].nominal == 600  # the only limited level


async def test_the_mandatory_schemas_classify_until_they_are_stored() -> None:
    """Synced on an empty configuration (the config producer has not written it yet:
    its writes are classified meanwhile), system:masters is still exempt and the rest
    still caught all, as upstream's digest supplies the missing mandatory FlowSchemas."""
    factory = fake_factory()
    informers = {p: factory.informer_for("flowcontrol.apiserver.k8s.io", p)
                 for p in ("flowschemas", "prioritylevelconfigurations")}  # fmt: skip
    controller = APFController(None, 6)
    controller.watch(informers)
    for informer in informers.values():
        informer.replace([], "1")
    await controller.reconcile("configuration")
    masters = UserInfo("system:apiserver", groups=("system:masters", "system:authenticated"))
    alice = UserInfo("alice", groups=("system:authenticated",))
    pods = _info("POST", "/api/v1/namespaces/ns/pods")
    assert controller.classify(masters, pods)[0].name == "exempt"
    assert controller.classify(alice, pods)[0].name == "catch-all"


def test_nominal_limits_and_borrowing() -> None:
    assert allocate(10, [(1, 10, 1), (1, 10, 9)]) == pytest.approx([1, 9])
    assert allocate(10, [(6, 6, 6), (6, 6, 6)]) == [6, 6]  # lower bounds win
    shares = allocate(100, [(0, 100, 30), (0, 100, 10)])
    assert shares == pytest.approx([75, 25])


def test_list_seats_grow_with_the_objects_to_process() -> None:
    lst = _info("GET", "/api/v1/pods", {"resourceVersion": "0"})
    counts = {"pods": 2500}

    def get(group: str, resource: str) -> int | None:
        return counts.get(resource)

    def cached(info, query):  # type: ignore[no-untyped-def]
        return served_from_cache(query, True, False)

    assert estimate_seats(lst, {"resourceVersion": "0"}, get, cached) == 10
    counts["pods"] = 250
    assert estimate_seats(lst, {"resourceVersion": "0"}, get, cached) == 3
    # from etcd with a page: twice the page
    assert estimate_seats(lst, {"limit": "50"}, get, cached) == 1
    counts.clear()
    assert estimate_seats(lst, {}, get, cached) == 10  # unknown: the maximum
    assert estimate_seats(_info("GET", "/api/v1/namespaces/a/pods/p"), {}, get, cached) == 1


def test_dumps_align_like_go_tabwriter() -> None:
    text = tabulate([["Name", "Index", "Last"], ["a-long-name", "1", "x"]])
    assert text == "Name,        Index, Last\na-long-name, 1,     x\n"
