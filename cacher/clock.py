"""An injectable clock, so the cache's timing (history freshness, bookmarks, time budgets,
watch deadlines, wait-until-fresh bounds) is tested without sleeping.

Cacher code waits for time only through ``Clock.call_later`` / ``Clock.sleep``;
``FakeClock`` fires timers only when a test calls ``advance()``.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` on the event loop after ``delay`` seconds, unless cancelled."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


def until_next_tick(now: float, interval: float) -> float:
    """Seconds from ``now`` to the next whole multiple of ``interval`` on the clock.

    Periodic work sleeps with it so that every ticker of one interval wakes the event
    loop at the same instant: a server's ~60 watch caches tick once a second each, and
    at their own phases they woke an idle loop ~60 times a second (each wake-up costs
    the process more than the tick's own work). A multiple closer than a tenth of the
    interval counts as this tick's own (a timer may fire slightly early or late), so
    ticks stay 0.9 to 1.1 intervals apart and never run twice at one boundary.
    """
    passed = now % interval
    if passed > interval * 0.9:  # woke just before the boundary: it was this one
        passed -= interval
    return interval - passed


class _FakeTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """Time moves only on ``advance``; timers whose deadline passed fire then, in order."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._seq = itertools.count()
        self._timers: list[tuple[float, int, _FakeTimer]] = []  # heap, event-loop owned

    def now(self) -> float:
        return self._now

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = _FakeTimer(callback)
        heapq.heappush(self._timers, (self._now + max(0.0, delay), next(self._seq), timer))
        return timer

    async def sleep(self, seconds: float) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        timer = self.call_later(seconds, functools.partial(resolve, fut))
        try:
            await fut
        finally:
            timer.cancel()

    @property
    def pending(self) -> int:
        """Timers not yet fired nor cancelled."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)

    def deadlines(self) -> list[float]:
        """When the pending timers are due, soonest first (what a test advances to)."""
        return sorted(when for when, _, t in self._timers if not t.cancelled)

    def advance(self, seconds: float) -> None:
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            self._now = max(self._now, when)
            if not timer.cancelled:
                timer.callback()
        self._now = target


def resolve(fut: asyncio.Future[None]) -> None:
    """Complete ``fut`` unless it already is (a timer callback)."""
    if not fut.done():
        fut.set_result(None)


async def wait_for_future(clock: Clock, fut: asyncio.Future[None], seconds: float) -> bool:
    """Wait until ``fut`` completes or ``seconds`` (by ``clock``) pass; True if it completed.

    Cancelling the caller cancels only the wait; ``fut`` is left to its owner.
    """
    if fut.done():
        return True
    expired: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    timer = clock.call_later(seconds, functools.partial(resolve, expired))
    try:
        await asyncio.wait({fut, expired}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
        expired.cancel()
    return fut.done()
