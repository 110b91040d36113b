"""The event loop's lag, measured from inside the server (watchcache's own metric).

One server process runs every request on one asyncio loop, so a handler step that holds
the loop for 500 ms delays every other client by up to 500 ms, ``/readyz`` included.
A ticker owned by the application, a timer re-armed every ``TICK`` seconds, records how
much later than due it ran, in the histogram ``watchcache_event_loop_lag_seconds`` on
``/metrics``. This metric is watchcache's, not
kube-apiserver's (Go's scheduler has no single loop to stall); the benchmark reads it
around each request to report the loop lag per scenario. The project's budget is no
step longer than ~20 ms at 10,000 pods.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from aiohttp import web
from prometheus_client import Histogram

__all__ = ["LOOP_LAG", "TICK", "LagTicker", "loop_lag_context"]

TICK = 0.010  # seconds the ticker asks to sleep each time

# fine below the 20 ms budget, coarse above it (a stall of seconds is a bug either way)
LAG_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2,
               0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)  # fmt: skip

LOOP_LAG = Histogram(
    "watchcache_event_loop_lag_seconds",
    "How much later than scheduled a 10 ms ticker on the server's event loop woke up "
    "(watchcache's metric, not kube-apiserver's): how long other work held the loop.",
    buckets=LAG_BUCKETS,
)


class LagTicker:
    """Every ``interval`` seconds, ``observe`` how much later than due (never negative)
    the loop ran this ticker: a timer that re-arms itself, from ``start`` until
    ``stop``. The loop's own clock measures.

    A plain timer callback, not a task sleeping in a loop: ``asyncio.sleep`` costs a
    future, a timer, and a task step that the loop schedules separately (on uvloop an
    extra pass of the loop with its own system call), and at 100 ticks a second that
    was a third of what an idle server spent (measured: a bare uvloop process ticking
    at 10 ms used 15 ms of CPU a second sleeping in a task, 10 ms as a timer; see
    docs/performance.md, round eight). What it measures is the same: the lateness of
    a callback due ``interval`` after the previous one ran.

    Started and stopped on the loop's thread; ``stop`` is idempotent.
    """

    def __init__(
        self, observe: Callable[[float], None] = LOOP_LAG.observe, interval: float = TICK
    ) -> None:
        self._observe = observe
        self._interval = interval
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0

    @property
    def running(self) -> bool:
        return self._timer is not None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._arm(self._loop.time())

    def stop(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _arm(self, now: float) -> None:
        assert self._loop is not None
        self._due = now + self._interval
        self._timer = self._loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        assert self._loop is not None
        now = self._loop.time()
        due = self._due
        self._arm(now)  # first: an ``observe`` that raises (logged by the loop) stops nothing
        self._observe(max(0.0, now - due))


def loop_lag_context(
    interval: float = TICK, observe: Callable[[float], None] = LOOP_LAG.observe
) -> Callable[[web.Application], AsyncIterator[None]]:
    """An aiohttp cleanup context that runs the ticker for the application's lifetime
    (started with the app, stopped at cleanup)."""

    async def run(app: web.Application) -> AsyncIterator[None]:
        ticker = LagTicker(observe, interval=interval)
        ticker.start()
        try:
            yield
        finally:
            ticker.stop()

    return run
