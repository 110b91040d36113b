"""The reference bench's measures beyond the reads (:mod:`lab.bench_reference`): the
watch fan-out's latency and the pods cache's memory, on any :class:`Endpoint`."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from typing import Any

import orjson

from lab import seed
from lab.bench_endpoint import Endpoint
from lab.bench_report import percentile

__all__ = ["cache_memory", "json_bytes", "measure_fanout"]


async def measure_fanout(ep: Endpoint, ns: str, *, watchers: int, writes: int) -> dict[str, Any]:
    """From each patch's response to its event at each of ``watchers`` watchers, over
    ``writes`` label patches one after the other."""
    pods = f"{ep.url}/api/v1/namespaces/{ns}/pods"
    target = seed.pod_name(1)
    acked: dict[str, float] = {}
    received: list[tuple[str, float]] = []
    async with ep.session(limit=watchers + 4, total=None) as s:
        async with s.get(f"{pods}?limit=1") as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        ready, everything = asyncio.Event(), asyncio.Event()
        opened = 0

        async def watcher() -> None:
            nonlocal opened
            url = f"{pods}?watch=1&resourceVersion={rv}&fieldSelector=metadata.name%3D{target}"
            async with s.get(url, headers={"Accept-Encoding": "identity"}) as r:
                opened += 1
                if opened == watchers:
                    ready.set()
                async for line in r.content:
                    event = orjson.loads(line)
                    if event.get("type") == "MODIFIED":
                        got = event["object"]["metadata"]["resourceVersion"]
                        received.append((got, time.perf_counter()))
                        if len(received) >= watchers * writes:
                            everything.set()

        tasks = [asyncio.create_task(watcher()) for _ in range(watchers)]
        try:
            await asyncio.wait_for(ready.wait(), 30)
            await asyncio.sleep(0.5)  # the watches are registered server-side
            for k in range(writes):
                patch = {"metadata": {"labels": {"bench-write": str(k)}}}
                async with s.patch(f"{pods}/{target}", data=orjson.dumps(patch),
                                   headers={"Content-Type": "application/merge-patch+json"}
                                   ) as r:  # fmt: skip
                    doc = await r.json()
                acked[doc["metadata"]["resourceVersion"]] = time.perf_counter()
                await asyncio.sleep(0.05)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(everything.wait(), 10)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    lat = [t - acked[v] for v, t in received if v in acked]
    return {"watchers": watchers, "writes": writes, "events": len(lat),
            "expected": watchers * writes,
            "p50": statistics.median(lat) if lat else None,
            "p99": percentile(lat, 99) if lat else None}  # fmt: skip




async def cache_memory(ep: Endpoint) -> dict[str, Any]:
    """The pods cache's JSON bytes and held bytes (``/debug/watchcache?memory=1``), and
    the garbage collector's pauses so far (``watchcache_gc_pause_seconds``)."""
    async with ep.session() as s:
        async with s.get(f"{ep.url}/debug/watchcache?memory=1") as r:
            caches = (await r.json())["caches"]
        async with s.get(f"{ep.url}/metrics") as r:
            metrics = await r.text()
    pods = next(c for c in caches if c["resource"].split(".")[0] == "pods")
    out: dict[str, Any] = {"json_bytes": pods["jsonBytes"], "held_bytes": pods["heldBytes"],
                           "held_ratio": pods["heldBytes"] / max(pods["jsonBytes"], 1)}
    pauses = {"count": 0.0, "sum": 0.0, "over_50ms": 0.0}
    for line in metrics.splitlines():
        if line.startswith("watchcache_gc_pause_seconds_count"):
            pauses["count"] += float(line.split()[-1])
        elif line.startswith("watchcache_gc_pause_seconds_sum"):
            pauses["sum"] += float(line.split()[-1])
        elif line.startswith('watchcache_gc_pause_seconds_bucket') and 'le="0.05"' in line:
            pauses["over_50ms"] -= float(line.split()[-1])
    pauses["over_50ms"] += pauses["count"]
    out["gc_pauses"] = pauses
    return out




async def json_bytes(ep: Endpoint, ns: str) -> int:
    async with ep.session() as s, s.get(f"{ep.url}/api/v1/namespaces/{ns}/pods?resourceVersion=0",
                                        headers={"Accept-Encoding": "identity"}) as r:  # fmt: skip
        doc = orjson.loads(await r.read())
    return sum(len(orjson.dumps(i)) for i in doc["items"])
