"""API Priority and Fairness pieces without a server: shuffle sharding, the queue set's
fair queuing (fake clock), classification, seat estimation, borrowing, the dumps."""

from __future__ import annotations

import asyncio
import math

import pytest

from proxy.flowcontrol.apf_controller import APFController, PriorityLevel, allocate
from proxy.flowcontrol.debug import tabulate
from proxy.flowcontrol.fairqueuing.queueset import QueueSet, QueuingConfig, Rejected, Request
from proxy.flowcontrol.fairqueuing.shufflesharding import deal, flow_hash
from proxy.flowcontrol.work_estimator import Stats, estimate_seats, served_from_cache
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


def _level(hand: int) -> dict[str, object]:
    queuing = {"queues": 128, "handSize": hand, "queueLengthLimit": 50}
    return {"metadata": {"name": "global-default", "uid": "u1"},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 20,
                     "limitResponse": {"type": "Queue", "queuing": queuing}}}}  # fmt: skip


async def test_a_levels_most_seats_follow_its_spec_when_it_changes() -> None:
    """``max_seats`` reads the level's queue set, which the controller reshapes with
    every new spec (not the spec parsed again on each request): a new hand size moves
    it at once."""
    factory = fake_factory()
    informers = {p: factory.informer_for("flowcontrol.apiserver.k8s.io", p)
                 for p in ("flowschemas", "prioritylevelconfigurations")}  # fmt: skip
    controller = APFController(None, 600)
    controller.watch(informers)
    informers["flowschemas"].replace([], "1")
    seats = []
    for rv, hand in (("1", 6), ("2", 50)):
        informers["prioritylevelconfigurations"].replace([_level(hand)], rv)
        await controller.reconcile("configuration")
        level = controller.levels["global-default"]
        expected = max(1, min(level.nominal // hand, math.ceil(level.nominal * 0.15)))
        assert level.max_seats == expected
        seats.append(level.max_seats)
    assert seats[1] < seats[0]


def test_nominal_limits_and_borrowing() -> None:
    assert allocate(10, [(1, 10, 1), (1, 10, 9)]) == pytest.approx([1, 9])
    assert allocate(10, [(6, 6, 6), (6, 6, 6)]) == [6, 6]  # lower bounds win
    shares = allocate(100, [(0, 100, 30), (0, 100, 10)])
    assert shares == pytest.approx([75, 25])


def _cached(info, query):  # type: ignore[no-untyped-def]
    return served_from_cache(query, True, False)


def test_list_seats_by_object_count_without_the_size_gate() -> None:
    """SizeBasedListCostEstimate off (or no sizes known): one seat per 100 objects."""
    lst = _info("GET", "/api/v1/pods", {"resourceVersion": "0"})
    stats = {"pods": Stats(2500)}

    def get(group: str, resource: str) -> Stats | None:
        return stats.get(resource)

    assert estimate_seats(lst, {"resourceVersion": "0"}, get, _cached, False) == 10
    assert estimate_seats(lst, {"resourceVersion": "0"}, get, _cached) == 25  # no sizes
    stats["pods"] = Stats(250)
    assert estimate_seats(lst, {"resourceVersion": "0"}, get, _cached, False) == 3
    # from etcd with a page: twice the page
    assert estimate_seats(lst, {"limit": "50"}, get, _cached, False) == 1
    stats.clear()
    assert estimate_seats(lst, {}, get, _cached, False) == 10  # unknown: the maximum
    assert estimate_seats(lst, {}, get, _cached) == 100
    assert estimate_seats(_info("GET", "/api/v1/namespaces/a/pods/p"), {}, get, _cached) == 1


@pytest.mark.parametrize(
    ("count", "size", "query", "expected"),
    [
        # upstream's TestListWorkEstimator: "limit 399, expect read 4MB read from etcd"
        (699, 10_000, {"limit": "399", "resourceVersion": "1"}, 40),
        # from the cache: it streams, at most 1 MB at once
        (2500, 5_000, {"resourceVersion": "0"}, 10),
        (10, 5_000, {"resourceVersion": "0"}, 1),
        # from etcd without a page: every object, capped at 100 seats
        (5000, 5_600, {}, 100),
        (1000, 5_000, {}, 50),
        # a selector on etcd loads half of them at least
        (1000, 10_000, {"labelSelector": "a=b", "limit": "10"}, 50),
        # a list naming one object
        (1000, 10_000, {"fieldSelector": "metadata.name=x"}, 1),
        (0, 0, {}, 1),
    ],
)  # fmt: skip
def test_list_seats_by_the_bytes_held_at_once(
    count: int, size: int, query: dict[str, str], expected: int
) -> None:
    """Issue 23 §8: a 28 MB LIST cost the seats of any 5,000-object list; upstream's
    SizeBasedListCostEstimate (on since 1.34) charges one seat per 100 kB in memory."""
    lst = _info("GET", "/api/v1/pods", query)
    seats = estimate_seats(lst, query, lambda g, r: Stats(count, size), _cached)
    assert seats == expected


@pytest.mark.parametrize(
    ("nominal", "hand", "expected"),
    [(5, 6, 1), (10, 6, 1), (15, 6, 2), (20, 6, 3), (35, 6, 5), (100, 6, 15), (200, 6, 30),
     (10, 1, 2), (100, 20, 5)],
)  # fmt: skip
def test_a_levels_most_seats_per_request_are_upstreams(
    nominal: int, hand: int, expected: int
) -> None:
    """Upstream's Test_GetMaxSeats table; a list's seats are capped by them, so that one
    big LIST never takes a whole level from its other flows."""
    spec = {"type": "Limited", "limited": {"limitResponse": {
        "type": "Queue", "queuing": {"handSize": hand}}}}  # fmt: skip
    queuing = QueuingConfig(queues=64, hand_size=hand, queue_length_limit=50)
    level = PriorityLevel("pl", "", spec, QueueSet("pl", limit=1, exempt=False, queuing=queuing))
    level.nominal = nominal
    assert level.max_seats == expected
    lst = _info("GET", "/api/v1/pods", {})
    seats = estimate_seats(lst, {}, lambda g, r: Stats(5000, 5_600), _cached,
                           level_max=level.max_seats)  # fmt: skip
    assert seats == expected


def test_dumps_align_like_go_tabwriter() -> None:
    text = tabulate([["Name", "Index", "Last"], ["a-long-name", "1", "x"]])
    assert text == "Name,        Index, Last\na-long-name, 1,     x\n"
