"""Issue 23 §8, measured: others are still served while many large LISTs run. Part of
``watchcache bench`` (scenario ``concurrent_lists``: one note per size,
``concurrency`` in results.json); against any server:
``watchcache bench --server URL --scenarios concurrent_lists [--lists N]``.

``lists`` unset-RV LISTs of every pod (read from etcd, the heaviest read) start at
once, each on its own connection, bodies read in full; meanwhile a light client LISTs
one namespace's configmaps (a few objects, from etcd too) one after another on its own
connection. Reported: the light client's p50/p99/max, how many large LISTs answered
200 (and how many 504, 429 or failed), how long the slowest took, the server's RSS
before and at its peak (sampled every 50 ms), and the event loop's lag (p99 and max of
``watchcache_event_loop_lag_seconds`` over the whole run, with the longest pause of
CPython's collector, ``watchcache_gc_pause_seconds``, which it includes).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import aiohttp

from lab.bench_client import LOOP_LAG
from lab.bench_report import bucket_max, bucket_quantile, percentile
from lab.bench_snapshots import rss
from lab.metrics import scrape

__all__ = ["describe", "light_client", "measure"]

LIGHT_PATH = "/api/v1/namespaces/default/configmaps"


GC_PAUSE = "watchcache_gc_pause_seconds"


def _moved(before: Any, after: Any, metric: str) -> list[tuple[float, float]]:
    """A histogram's cumulative buckets moved between two scrapes (summed over its
    labels), in bucket order."""
    if before is None or after is None:
        return []
    moved: dict[float, float] = {}
    for (name, labels), value in after.samples.items():
        if name == metric + "_bucket":
            le = float(dict(labels)["le"])
            moved[le] = moved.get(le, 0.0) + value - before.samples.get((name, labels), 0.0)
    return sorted(moved.items())


async def _large(url: str, within: float) -> tuple[int, float, int]:
    """One LIST of every pod on a connection of its own: (status, seconds, bytes);
    status 0 when the connection failed."""
    t0 = time.perf_counter()
    identity = {"Accept-Encoding": "identity"}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=within)) as s,
            s.get(f"{url}/api/v1/pods", headers=identity) as r,
        ):
            body = await r.read()
            return r.status, time.perf_counter() - t0, len(body)
    except (aiohttp.ClientError, TimeoutError):
        return 0, time.perf_counter() - t0, 0


async def light_client(url: str, done: asyncio.Event, out: list[float],
                       codes: Counter[int]) -> None:  # fmt: skip
    """Small LISTs on a connection of its own until ``done``: latencies into ``out``."""
    async with aiohttp.ClientSession() as s:
        while not done.is_set():
            t0 = time.perf_counter()
            async with s.get(url + LIGHT_PATH) as r:
                await r.read()
                codes[r.status] += 1
            out.append(time.perf_counter() - t0)
            await asyncio.sleep(0.02)  # a client's pace, not a flood


async def _sample_rss(pids: list[int], done: asyncio.Event, peak: list[int]) -> None:
    while not done.is_set():
        peak[0] = max(peak[0], rss(pids))
        await asyncio.sleep(0.05)


async def measure(url: str, pids: list[int], lists: int, within: float = 120) -> dict[str, Any]:
    """Run ``lists`` concurrent LISTs of every pod with a light client beside them."""
    async with aiohttp.ClientSession() as s:
        before = await scrape(s, url)
    rss_before = rss(pids)
    done = asyncio.Event()
    light: list[float] = []
    light_codes: Counter[int] = Counter()
    peak = [rss_before]
    side = [asyncio.create_task(light_client(url, done, light, light_codes)),
            asyncio.create_task(_sample_rss(pids, done, peak))]  # fmt: skip
    await asyncio.sleep(0.5)  # the light client's pace before the load
    started = time.perf_counter()
    results = await asyncio.gather(*(_large(url, within) for _ in range(lists)))
    elapsed = time.perf_counter() - started
    done.set()
    await asyncio.gather(*side)
    async with aiohttp.ClientSession() as s:
        after = await scrape(s, url)
    buckets = _moved(before, after, LOOP_LAG)
    pauses = _moved(before, after, GC_PAUSE)
    codes = Counter(status for status, _, _ in results)
    return {
        "lists": lists, "elapsed": elapsed,
        "list_codes": {str(k): v for k, v in sorted(codes.items())},
        "list_bytes": max((n for _, _, n in results), default=0),
        "list_max_seconds": max((t for _, t, _ in results), default=0.0),
        "light_requests": len(light),
        "light_codes": {str(k): v for k, v in sorted(light_codes.items())},
        "light_p50": percentile(light, 50) if light else 0.0,
        "light_p99": percentile(light, 99) if light else 0.0,
        "light_max": max(light, default=0.0),
        "rss_before": rss_before, "rss_peak": peak[0],
        "lag_p99": bucket_quantile(buckets, 0.99) if buckets else float("nan"),
        "lag_max": bucket_max(buckets) if buckets else float("nan"),
        "gc_pause_max": bucket_max(pauses) if pauses else float("nan"),
    }  # fmt: skip


def describe(m: dict[str, Any]) -> str:
    mib = 2**20
    ms = 1000
    rss = ""
    if m["rss_before"]:
        rss = f"; server RSS {m['rss_before'] / mib:.0f} → {m['rss_peak'] / mib:.0f} MiB peak"
    return (f"{m['lists']} concurrent unset-RV LISTs of every pod ({m['list_bytes'] / mib:.1f} "
            f"MiB each): answers {m['list_codes']}, the slowest {m['list_max_seconds']:.1f} s, "
            f"all in {m['elapsed']:.1f} s; meanwhile a light client's small LISTs "
            f"({m['light_requests']}, {m['light_codes']}) took p50 "
            f"{m['light_p50'] * ms:.0f} ms, p99 {m['light_p99'] * ms:.0f} ms, max "
            f"{m['light_max'] * ms:.0f} ms; event loop lag p99 {m['lag_p99'] * ms:.1f} ms, "
            f"max ≤ {m['lag_max'] * ms:.0f} ms (the longest GC pause ≤ "
            f"{m['gc_pause_max'] * ms:.0f} ms){rss}.")  # fmt: skip
