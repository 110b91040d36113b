"""The request deadlines of one duration share one timer and keep asyncio.timeout's
contract (proxy/server/request_deadline.py)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from proxy.server import request_deadline
from proxy.server.request_deadline import DeadlineQueue


async def test_many_requests_arm_one_timer_and_leave_nothing_behind() -> None:
    queue = DeadlineQueue(asyncio.get_running_loop(), 60.0)
    release = asyncio.Event()
    timers: set[asyncio.TimerHandle] = set()

    async def request() -> None:
        async with queue.scope():
            assert queue.timer is not None
            timers.add(queue.timer)
            await release.wait()

    tasks = [asyncio.create_task(request()) for _ in range(50)]
    await asyncio.sleep(0)
    assert len(queue.pending) == 50
    assert len(timers) == 1  # one handle for all fifty, not one each
    release.set()
    await asyncio.gather(*tasks)
    assert not queue.pending


async def test_past_the_deadline_the_request_ends_with_timeout_error() -> None:
    queue = DeadlineQueue(asyncio.get_running_loop(), 0.05)
    scope = queue.scope()
    with pytest.raises(TimeoutError):
        async with scope:
            await asyncio.sleep(5)
    assert scope.expired()
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_requests_that_end_in_time_are_not_cancelled_and_later_ones_still_expire() -> None:
    queue = DeadlineQueue(asyncio.get_running_loop(), 0.1)
    quick = queue.scope()
    async with quick:
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    slow = queue.scope()  # its deadline is after the armed timer's (the quick one's)
    with pytest.raises(TimeoutError):
        async with slow:
            await asyncio.sleep(5)
    assert not quick.expired() and slow.expired()
    assert queue.timer is None and not queue.pending


async def test_a_cancellation_from_outside_stays_a_cancellation() -> None:
    queue = DeadlineQueue(asyncio.get_running_loop(), 60.0)

    async def request() -> None:
        async with queue.scope():
            await asyncio.sleep(5)

    task = asyncio.create_task(request())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not queue.pending


async def test_a_handler_that_swallows_the_cancellation_returns_normally() -> None:
    queue = DeadlineQueue(asyncio.get_running_loop(), 0.02)
    scope = queue.scope()
    async with scope:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(5)
    assert scope.expired()
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_done_entries_behind_a_long_request_are_swept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(request_deadline, "_COMPACT_AT", 8)
    queue = DeadlineQueue(asyncio.get_running_loop(), 60.0)
    long_done = asyncio.Event()

    async def long_request() -> None:
        async with queue.scope():
            await long_done.wait()

    head = asyncio.create_task(long_request())
    await asyncio.sleep(0)
    for _ in range(100):
        async with queue.scope():
            pass
    assert len(queue.pending) < 10  # not the 101 a queue without sweeping would hold
    long_done.set()
    await head
    assert not queue.pending
