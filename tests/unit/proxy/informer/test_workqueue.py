"""The work queue, its rate limiters and the workers loop, on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from proxy.informer import (
    BucketRateLimiter,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
    run_workers,
)
from tests.unit.proxy.informer.fakes import until


async def test_an_item_is_queued_once_however_often_it_is_added() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    for key in ("a", "b", "a", "a"):
        queue.add(key)
    assert len(queue) == 2
    assert [await queue.get(), await queue.get()] == ["a", "b"]


async def test_an_item_added_while_processing_is_queued_again_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue.add("a")
    assert await queue.get() == "a"
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0  # not handed to a second worker meanwhile
    queue.done("a")
    assert len(queue) == 1 and await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_add_after_waits_on_the_clock_and_the_earliest_delay_wins() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("a", 10)
    queue.add_after("a", 3)
    queue.add_after("a", 20)
    assert clock.deadlines() == [clock.now() + 3]
    clock.advance(2.9)
    assert len(queue) == 0
    clock.advance(0.1)
    assert len(queue) == 1


async def test_a_waiting_get_is_woken_by_an_add() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("x")
    assert await getter == "x"


async def test_shutdown_drains_then_get_raises() -> None:
    queue: WorkQueue[str] = WorkQueue(clock=FakeClock())
    waiting = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shut_down()
    with pytest.raises(ShutDown):
        await waiting
    queue2: WorkQueue[str] = WorkQueue(clock=FakeClock())
    queue2.add("a")
    queue2.shut_down()
    queue2.add("b")  # ignored
    assert await queue2.get() == "a"
    with pytest.raises(ShutDown):
        await queue2.get()


def test_per_item_backoff_doubles_and_forget_resets_it() -> None:
    limiter = ItemExponentialFailureRateLimiter(base=0.005, cap=0.03)
    assert [limiter.when("a") for _ in range(5)] == [0.005, 0.01, 0.02, 0.03, 0.03]
    assert limiter.when("b") == 0.005 and limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert limiter.when("a") == 0.005


def test_the_bucket_lets_a_burst_through_then_paces_retries() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(clock, qps=10, burst=3)
    assert [bucket.when(i) for i in range(3)] == [0, 0, 0]
    assert bucket.when(3) == pytest.approx(0.1) and bucket.when(4) == pytest.approx(0.2)
    clock.advance(1.0)
    assert bucket.when(5) == 0


def test_the_default_limiter_is_the_longer_of_both() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    delays = [limiter.when("hot") for _ in range(12)]
    assert delays[0] == 0.005 and delays[11] == pytest.approx(0.005 * 2**11)
    for i in range(200):  # exhaust the bucket with other keys
        limiter.when(i)
    assert limiter.when("fresh") > 0.005


async def test_workers_retry_a_failing_key_rate_limited_and_forget_it_on_success() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue("q", clock=clock)
    calls: list[str] = []

    async def reconcile(key: str) -> None:
        calls.append(key)
        if key == "bad" and calls.count("bad") < 3:
            raise RuntimeError("not yet")

    workers = asyncio.create_task(run_workers("test", queue, reconcile, workers=2))
    queue.add("bad")
    queue.add("good")
    await until(lambda: len(clock.deadlines()) == 1)
    assert sorted(calls) == ["bad", "good"]
    assert clock.deadlines()[0] - clock.now() == pytest.approx(0.005)
    clock.advance(0.005)
    await until(lambda: calls.count("bad") == 2 and len(clock.deadlines()) == 1)
    assert clock.deadlines()[0] - clock.now() == pytest.approx(0.01)
    clock.advance(0.01)
    await until(lambda: calls.count("bad") == 3)
    await until(lambda: queue.num_requeues("bad") == 0)
    queue.shut_down()
    await workers
