"""The event loop's lag, measured from inside the server (watchcache's own metric).

One server process runs every request on one asyncio loop, so a handler step that holds
the loop for 500 ms delays every other client by up to 500 ms, ``/readyz`` included.
A ticker task owned by the application asks to sleep ``TICK`` seconds again and again
and records how much later than asked it woke up, in the histogram
``watchcache_event_loop_lag_seconds`` on ``/metrics``. This metric is watchcache's, not
kube-apiserver's (Go's scheduler has no single loop to stall); the benchmark reads it
around each request to report the loop lag per scenario. The project's budget is no
step longer than ~20 ms at 10,000 pods.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from aiohttp import web
from prometheus_client import Histogram

from proxy.apimachinery.wait import SupervisedTask

__all__ = ["LOOP_LAG", "TICK", "loop_lag_context", "run_ticker"]

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


async def run_ticker(
    observe: Callable[[float], None] = LOOP_LAG.observe, interval: float = TICK
) -> None:
    """Sleep ``interval`` seconds forever; after each sleep, ``observe`` the lateness in
    seconds (never negative). Runs until cancelled; the loop's own clock measures."""
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time()
        await asyncio.sleep(interval)
        observe(max(0.0, loop.time() - asked - interval))


def loop_lag_context(
    interval: float = TICK,
) -> Callable[[web.Application], AsyncIterator[None]]:
    """An aiohttp cleanup context that runs the ticker for the application's lifetime
    (started with the app, cancelled and awaited at cleanup)."""

    async def run(app: web.Application) -> AsyncIterator[None]:
        ticker = SupervisedTask("event-loop-lag", lambda: run_ticker(interval=interval))
        ticker.start()
        yield
        await ticker.stop()

    return run
