"""What the watch cache's snapshots (ListFromCacheSnapshot) cost in memory: part of
``watchcache bench`` (one note per size, ``snapshots`` in results.json) and runnable on
its own: ``python -m lab.bench_snapshots URL [--updates N] [--pid PID]``.

``updates`` label changes (merge patches, as controllers make, 8 in flight) go to the
seeded pods one after another; each is one event, so one snapshot of the pods cache.
Then ``/debug/watchcache?memory=1`` says how many snapshots the cache holds and the
bytes of the tree nodes they hold beyond the current store (``cacher.btree.
extra_bytes``: the values are old versions the event history keeps anyway), and the
server's RSS is read before and after (with ``--pid``, or the bench's own process).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from typing import Any

import aiohttp
import orjson
import psutil  # type: ignore[import-untyped]

__all__ = ["describe", "measure"]

CONCURRENCY = 8


async def _pods_cache(s: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with s.get(f"{url}/debug/watchcache?memory=1") as r:
        doc = orjson.loads(await r.read())
    found: dict[str, Any] = next(c for c in doc["caches"] if c["resource"] == "pods")
    return found


def _rss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            total += psutil.Process(pid).memory_info().rss
    return total


async def _touch(s: aiohttp.ClientSession, url: str, names: list[str], updates: int) -> int:
    """Patch a label of ``updates`` pods (round robin); the last write's revision."""
    last = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(updates):
        queue.put_nowait(i)

    async def worker() -> None:
        nonlocal last
        while not queue.empty():
            i = queue.get_nowait()
            path = names[i % len(names)]
            body = orjson.dumps({"metadata": {"labels": {"bench-snapshot": str(i)}}})
            headers = {"Content-Type": "application/merge-patch+json"}
            async with s.patch(f"{url}{path}", data=body, headers=headers) as r:
                doc = orjson.loads(await r.read())
                last = max(last, int(doc["metadata"]["resourceVersion"]))

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return last


async def measure(url: str, pids: list[int], updates: int) -> dict[str, Any]:
    """Change ``updates`` pods, then read what the pods cache's snapshots hold."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as s:
        async with s.get(f"{url}/api/v1/pods?resourceVersion=0") as r:
            items = orjson.loads(await r.read())["items"]
        names = [f"/api/v1/namespaces/{i['metadata']['namespace']}/pods/"
                 f"{i['metadata']['name']}" for i in items]  # fmt: skip
        before = await _pods_cache(s, url)
        rss_before = _rss(pids)
        last = await _touch(s, url, names, updates)
        async with s.get(f"{url}/api/v1/pods?resourceVersion={last}&limit=1") as r:
            await r.read()  # the cache has seen every update
        after = await _pods_cache(s, url)
        rss_after = _rss(pids)
    snaps = after.get("snapshots") or {}
    count, size = int(snaps.get("count", 0)), int(snaps.get("bytes", 0))
    return {
        "pods": len(items), "updates": updates, "snapshots": count,
        "snapshots_before": int((before.get("snapshots") or {}).get("count", 0)),
        "snapshot_nodes": int(snaps.get("nodes", 0)), "snapshot_bytes": size,
        "bytes_per_snapshot": size / count if count else 0.0,
        "held_bytes": int(after.get("heldBytes", 0)), "json_bytes": int(after.get("jsonBytes", 0)),
        "rss_before": rss_before, "rss_after": rss_after,
    }  # fmt: skip


def describe(m: dict[str, Any]) -> str:
    mib = 2**20
    rss = ""
    if m["rss_before"]:
        rss = (f"; server RSS {m['rss_before'] / mib:.0f} → {m['rss_after'] / mib:.0f} MiB "
               "(the new versions, their history events and the snapshots)")  # fmt: skip
    return (f"after {m['updates']:,} pod updates the pods cache held {m['snapshots']:,} "
            f"snapshots (ListFromCacheSnapshot): {m['snapshot_bytes'] / mib:.1f} MiB of "
            f"B-tree nodes beyond the current store, {m['bytes_per_snapshot']:,.0f} bytes "
            f"each, against {m['held_bytes'] / mib:.1f} MiB held for the "
            f"{m['pods']:,} objects themselves{rss}.")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.bench_snapshots", description=__doc__)
    p.add_argument("url")
    p.add_argument("--updates", type=int, default=2000)
    p.add_argument("--pid", type=int, action="append", default=[])
    a = p.parse_args(argv)
    m = asyncio.run(measure(a.url, a.pid, a.updates))
    print(describe(m))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
