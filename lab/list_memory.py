"""Peak memory of one big LIST served from etcd (issue 3: LIST must not be built whole
in memory several times over).

``python -m lab.list_memory --pods 50000`` starts a private etcd, writes N realistic
pods (``lab.seed.pod``, ~4 KB of canonical JSON each) with ``EtcdClient.put``, then
measures, each in a FRESH subprocess so that one measurement's garbage cannot hide the
next one's peak:

- ``raw``: one ``EtcdClient.list_prefix`` of the pods prefix;
- ``store``: one ``Etcd3Store.get_list`` of it, no limit, items materialized;
- ``serve``: ``watchcache serve --watch-cache=false``, peak RSS (VmHWM) before and after
  one ``GET /api/v1/pods`` read to the end.

Peaks are ``ru_maxrss`` (children) or ``VmHWM`` (the server); sizes are given against
the total JSON size of the pods. Latency: the p50 of ``--repeat`` further lists in the
same child (after the peak was taken). Output: one JSON document on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from storage.etcd3.lister import PAGE_SIZE

MiB = 1024 * 1024
PREFIX = "/registry/pods/"


def _maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def _seed(endpoints: list[str], pods: int) -> int:
    """Write ``pods`` pods under PREFIX; returns their total JSON size in bytes."""
    from etcdclient import EtcdClient
    from lab import seed
    from storage import codec

    total = 0
    namespaces = max(pods // 1000, 1)
    async with EtcdClient(endpoints, request_timeout=30.0) as client:
        sem = asyncio.Semaphore(64)

        async def put(i: int) -> int:
            body = seed.pod(i, nodes=max(pods // 100, 1), namespaces=namespaces)
            meta = body["metadata"]
            data = codec.encode(body)
            async with sem:
                await client.put(f"{PREFIX}{meta['namespace']}/{meta['name']}".encode(), data)
            return len(data)

        for start in range(0, pods, 5000):
            sizes = await asyncio.gather(*(put(i) for i in range(start, min(start + 5000, pods))))
            total += sum(sizes)
    return total


async def _child(kind: str, endpoints: list[str], repeat: int, page_size: int) -> dict[str, Any]:
    """One measurement in this (fresh) process."""
    from etcdclient import EtcdClient
    from storage.etcd3 import Etcd3Store
    from storage.interfaces import ListOptions, SelectionPredicate

    async with EtcdClient(endpoints, request_timeout=120.0) as client:
        store = Etcd3Store(client, request_timeout=120.0, list_page_size=page_size)
        opts = ListOptions(predicate=SelectionPredicate(), recursive=True)

        async def once() -> tuple[int, int]:
            if kind == "raw":
                resp = await client.list_prefix(PREFIX.encode())
                return len(resp.kvs), sum(len(kv.value) for kv in resp.kvs)
            result = await store.get_list(PREFIX, opts)
            return len(result.items), sum(len(o.data) for o in result.items)

        base = _rss()
        t0 = time.perf_counter()
        items, size = await once()
        first = time.perf_counter() - t0
        peak = _maxrss()
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            await once()
            times.append(time.perf_counter() - t0)
        await store.close()
    return {
        "kind": kind, "items": items, "bytes": size, "baseline_rss": base, "peak_rss": peak,
        "first_s": first, "p50_s": statistics.median(times) if times else first,
    }  # fmt: skip


def _run_child(kind: str, endpoints: list[str], repeat: int, page_size: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "lab.list_memory", "--child", kind,
           "--endpoints", ",".join(endpoints), "--repeat", str(repeat),
           "--page-size", str(page_size)]  # fmt: skip
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def _vmhwm(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _serve(endpoints: list[str], repeat: int) -> dict[str, Any]:
    """Server peak RSS before and after one full GET /api/v1/pods (no watch cache)."""
    from lab.apiserver import APIServer

    server = APIServer(endpoints, extra_args=("--watch-cache=false", "--log-level=warning"),
                       log_path=Path(os.devnull))  # fmt: skip
    with server:
        pid = server.pid
        before = _vmhwm(pid)
        times, size = [], 0
        for i in range(1 + repeat):
            t0 = time.perf_counter()
            with urllib.request.urlopen(f"{server.url}/api/v1/pods", timeout=300) as r:
                size = sum(len(chunk) for chunk in iter(lambda: r.read(1 << 20), b""))
            times.append(time.perf_counter() - t0)
            if i == 0:
                after = _vmhwm(pid)
    return {
        "kind": "serve", "bytes": size, "baseline_rss": before, "peak_rss": after,
        "first_s": times[0], "p50_s": statistics.median(times[1:] or times),
    }  # fmt: skip


def _report(
    pods: int, page_size: int, json_bytes: int, results: list[dict[str, Any]]
) -> dict[str, Any]:
    rows = []
    for r in results:
        rows.append({
            **r,
            "peak_mib": round(r["peak_rss"] / MiB, 1),
            "growth_mib": round((r["peak_rss"] - r["baseline_rss"]) / MiB, 1),
            "growth_over_json": round((r["peak_rss"] - r["baseline_rss"]) / json_bytes, 2),
            "p50_ms": round(r["p50_s"] * 1000, 1),
        })  # fmt: skip
    return {
        "pods": pods,
        "page_size": page_size,
        "json_mib": round(json_bytes / MiB, 1),
        "results": rows,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.list_memory", description=__doc__)
    p.add_argument("--pods", type=int, default=50_000)
    p.add_argument("--repeat", type=int, default=3, help="timed lists after the peak")
    p.add_argument("--only", default="raw,store,serve", help="which measurements")
    p.add_argument("--page-size", type=int, default=PAGE_SIZE, help="Etcd3Store list pages")
    p.add_argument("--child", choices=("raw", "store"), help=argparse.SUPPRESS)
    p.add_argument("--endpoints", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        out = asyncio.run(
            _child(args.child, args.endpoints.split(","), args.repeat, args.page_size)
        )
        print(json.dumps(out))
        return 0
    from lab.etcd import EtcdCluster

    with EtcdCluster(size=1) as cluster:
        t0 = time.perf_counter()
        json_bytes = asyncio.run(_seed(cluster.endpoints, args.pods))
        print(f"seeded {args.pods} pods, {json_bytes / MiB:.1f} MiB of JSON in "
              f"{time.perf_counter() - t0:.0f}s", file=sys.stderr)  # fmt: skip
        results = []
        for kind in args.only.split(","):
            if kind == "serve":
                results.append(_serve(cluster.endpoints, args.repeat))
            else:
                results.append(_run_child(kind, cluster.endpoints, args.repeat, args.page_size))
            print(json.dumps(results[-1]), file=sys.stderr)
    print(json.dumps(_report(args.pods, args.page_size, json_bytes, results), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
