"""The event-loop lag ticker: it observes how late it woke, a step that holds the loop
shows in it, and the application owns (starts and cancels) it."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from proxy.server.loop_lag import LagTicker, loop_lag_context


async def test_a_step_holding_the_loop_shows_as_lag() -> None:
    seen: list[float] = []
    enough = asyncio.Event()

    def observe(lag: float) -> None:
        seen.append(lag)
        if len(seen) == 3:
            enough.set()

    ticker = LagTicker(observe, interval=0.001)
    ticker.start()  # armed now
    time.sleep(0.03)  # noqa: ASYNC251 -- the point: a step that holds the loop
    await enough.wait()
    ticker.stop()
    assert all(lag >= 0 for lag in seen)
    assert seen[0] >= 0.02  # woke at least the held time late


async def test_an_observe_that_raises_stops_nothing() -> None:
    calls = 0
    again = asyncio.Event()

    def observe(lag: float) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            again.set()
        raise RuntimeError("a broken metric")

    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda loop, context: None)  # the loop logs it; not here
    ticker = LagTicker(observe, interval=0.001)
    ticker.start()
    await asyncio.wait_for(again.wait(), 5)
    ticker.stop()
    ticker.stop()  # idempotent
    assert not ticker.running


async def test_the_app_runs_the_ticker_for_its_lifetime() -> None:
    seen = 0
    ticked = asyncio.Event()

    def observe(lag: float) -> None:
        nonlocal seen
        seen += 1
        ticked.set()

    app = web.Application()
    app.cleanup_ctx.append(loop_lag_context(interval=0.001, observe=observe))
    runner = web.AppRunner(app)
    await runner.setup()  # startup: the ticker runs
    await asyncio.wait_for(ticked.wait(), 5)
    await runner.cleanup()  # cleanup: stopped
    stopped_at = seen
    await asyncio.sleep(0.02)
    assert seen == stopped_at  # no tick after cleanup
