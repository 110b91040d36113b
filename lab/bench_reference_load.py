"""The reference bench's measures beyond the reads (:mod:`lab.bench_reference`): the
watch fan-out's latency and the pods cache's memory, on any :class:`Endpoint`; and the
small request's floor (:func:`start_floor`), which the native load measures beside the
servers."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson

from lab import bench_floor, seed
from lab.bench_endpoint import Endpoint
from lab.bench_report import percentile
from lab.kube_apiserver import insecure_context

__all__ = ["FLOOR", "cache_memory", "json_bytes", "measure_fanout", "start_floor"]

FLOOR = "floor: aiohttp + TLS, fixed bytes"
"""The floor's name in the native load's rows."""


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


async def _pod_json(ep: Endpoint, path: str) -> bytes:
    async with ep.session() as s, s.get(ep.url + path + "?resourceVersion=0",
                                        headers={"Accept-Encoding": "identity"}) as r:  # fmt: skip
        r.raise_for_status()
        return await r.read()


def start_floor(own: Endpoint, path: str, work: Path, cert_dir: Path, event_loop: str
                ) -> tuple[Endpoint, subprocess.Popen[bytes]]:  # fmt: skip
    """The small request's floor: :mod:`lab.bench_floor` answering the pod at ``path``
    (its bytes as ``own`` serves them) to every GET, over HTTPS with ``cert_dir``'s
    serving certificate, on the watchcaches' event loop. Nothing of an API server runs
    in it (no authentication, routing, cache or encoding): what aiohttp and the TLS
    transport alone cost a request, so the report shows how much of watchcache's
    latency is its own. The caller stops the process."""
    body = work / "floor-pod.json"
    body.write_bytes(asyncio.run(_pod_json(own, path)))
    proc, url = bench_floor.spawn(body, cert_dir=cert_dir, loop=event_loop)
    return Endpoint(FLOOR, url, dict(own.headers), insecure_context(), proc.pid), proc
