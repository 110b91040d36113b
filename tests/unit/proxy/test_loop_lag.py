"""The event-loop lag ticker: it observes how late it woke, a step that holds the loop
shows in it, and the application owns (starts and cancels) it."""

from __future__ import annotations

import asyncio
import contextlib
import time

from aiohttp import web

from proxy.server.loop_lag import loop_lag_context, run_ticker


async def test_a_step_holding_the_loop_shows_as_lag() -> None:
    seen: list[float] = []
    enough = asyncio.Event()

    def observe(lag: float) -> None:
        seen.append(lag)
        if len(seen) == 3:
            enough.set()

    ticker = asyncio.create_task(run_ticker(observe, interval=0.001))
    await asyncio.sleep(0)  # the ticker is asleep now
    time.sleep(0.03)  # noqa: ASYNC251 -- the point: a step that holds the loop
    await enough.wait()
    ticker.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await ticker
    assert all(lag >= 0 for lag in seen)
    assert seen[0] >= 0.02  # woke at least the held time late


async def test_the_app_runs_the_ticker_for_its_lifetime() -> None:
    app = web.Application()
    app.cleanup_ctx.append(loop_lag_context(interval=0.001))
    runner = web.AppRunner(app)
    await runner.setup()  # startup: the ticker runs
    assert [t for t in asyncio.all_tasks() if t.get_name() == "event-loop-lag" and not t.done()]
    await runner.cleanup()  # cleanup: cancelled and awaited
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "event-loop-lag"]
