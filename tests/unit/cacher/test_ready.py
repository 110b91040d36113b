"""The readiness gate (ready_test.go behaviours)."""

from __future__ import annotations

import asyncio

import pytest

from cacher.clock import FakeClock
from cacher.ready import Ready, State, Stopped


async def test_wait_returns_when_ready() -> None:
    r = Ready(FakeClock())
    assert not r.check()
    waiter = asyncio.ensure_future(r.wait(10))
    await asyncio.sleep(0)
    r.set_ready()
    assert await waiter
    assert r.check() and r.generation == 1


async def test_wait_times_out_by_the_clock() -> None:
    clock = FakeClock()
    r = Ready(clock)
    waiter = asyncio.ensure_future(r.wait(3))
    await asyncio.sleep(0)
    clock.advance(2.9)
    await asyncio.sleep(0)
    assert not waiter.done()
    clock.advance(0.2)
    assert await waiter is False


async def test_pending_again_and_stop_is_terminal() -> None:
    r = Ready(FakeClock())
    r.set_ready()
    r.set_pending()
    assert r.state is State.PENDING
    waiter = asyncio.ensure_future(r.wait(10))
    await asyncio.sleep(0)
    r.stop()
    with pytest.raises(Stopped):
        await waiter
    r.set_ready()
    assert r.state.value == State.STOPPED.value
