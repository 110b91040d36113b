"""What one more cached pod costs the server in memory: the slope of its RSS between
two pod counts (issue 25 item 4, docs/performance.md "Memory per object").

``python -m lab.memory_slope --pods 10000,30000 --code . --code /path/to/other``
starts one etcd, writes the first count of small pods straight into it as the server
stores them (``lab.seed.seed_etcd``), starts a server of each checkout in turn on it
(primed by its LIST), reads its RSS once ready and stops it; then writes up to the
next count, and so on. ``--runs`` repeats each start, alternating the order of the
checkouts; the least RSS of a count's runs is kept. A count of 0 gives the empty
server's RSS, and with it each count's growth from empty (the bench's figure, fixed
costs included). The slope between the first and last non-zero counts is the cost of
one more pod; both are against the pods' JSON bytes as the server holds them
(``/debug/watchcache?memory=1``). Output: one JSON document on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from lab import seed
from lab.apiserver import APIServer
from lab.bench_memory import pods_cache, rss
from lab.etcd import EtcdCluster

SETTLE_S = 5.0  # after /readyz: the priming LIST's garbage freed, the loop idle


def measure(endpoints: list[str], code: Path, log_dir: Path) -> dict[str, int]:
    """One server of ``code`` on ``endpoints``: its RSS once primed, and its pods cache."""
    server = APIServer(endpoints, cwd=code, log_path=log_dir / f"{code.name}-{time.time_ns()}.log")
    server.start(timeout=900)
    try:
        time.sleep(SETTLE_S)
        cache = pods_cache(server.url)
        samples = []
        for _ in range(3):  # the least of three a second apart: a request's garbage aside
            time.sleep(1)
            samples.append(rss(server.pid))
        return {"rss": min(samples), **cache}
    finally:
        server.stop()


def summary(counts: Sequence[int], rows: dict[int, list[dict[str, int]]]) -> dict[str, Any]:
    """Least RSS per count, growth from the empty count, and the slope per pod."""
    best = {n: min(rows[n], key=lambda r: r["rss"]) for n in counts}
    out: dict[str, Any] = {"rss": {n: best[n]["rss"] for n in counts}}
    pods = [n for n in counts if n > 0]
    if 0 in best:
        out["growth_per_pod"] = {n: (best[n]["rss"] - best[0]["rss"]) / n for n in pods}
        out["growth_ratio"] = {n: (best[n]["rss"] - best[0]["rss"]) / best[n]["json_bytes"]
                               for n in pods}  # fmt: skip
    if len(pods) >= 2:
        lo, hi = best[pods[0]], best[pods[-1]]
        json_bytes = hi["json_bytes"] - lo["json_bytes"]
        out["slope_per_pod"] = (hi["rss"] - lo["rss"]) / (pods[-1] - pods[0])
        out["json_per_pod"] = json_bytes / (pods[-1] - pods[0])
        out["slope_ratio"] = (hi["rss"] - lo["rss"]) / json_bytes
        out["held_ratio"] = (hi["held_bytes"] - lo["held_bytes"]) / json_bytes
    return out


def run(counts: Sequence[int], codes: Sequence[Path], runs: int, log_dir: Path) -> dict[str, Any]:
    rows: dict[Path, dict[int, list[dict[str, int]]]] = {c: {} for c in codes}
    with EtcdCluster(size=1) as cluster:  # started on entering
        written = 0
        for n in counts:
            if n > written:
                plan = seed.Plan(pods=n, nodes=100, namespaces=10, pod_size="small",
                                 pods_from=written)  # fmt: skip
                asyncio.run(seed.seed_etcd(cluster.endpoints, plan))
                written = n
            for i in range(runs):
                for code in codes if i % 2 == 0 else list(reversed(codes)):
                    row = measure(cluster.endpoints, code, log_dir)
                    rows[code].setdefault(n, []).append(row)
                    print(f"{code} {n} pods: RSS {row['rss']} (load {os.getloadavg()[0]:.1f})",
                          file=sys.stderr)  # fmt: skip
    return {str(c): summary(counts, rows[c]) for c in codes}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.memory_slope", description=__doc__)
    p.add_argument("--pods", default="10000,30000", help="increasing pod counts (0: empty)")
    p.add_argument("--code", action="append", type=Path, help="a checkout (default: this one)")
    p.add_argument("--runs", type=int, default=1, help="starts per checkout and count")
    p.add_argument("--logs", type=Path, default=Path("/tmp"), help="the servers' logs")
    args = p.parse_args(argv)
    counts = sorted({int(n) for n in args.pods.split(",")})
    codes = [c.resolve() for c in (args.code or [Path(__file__).resolve().parent.parent])]
    result = run(counts, codes, max(args.runs, 1), args.logs)
    sys.stdout.buffer.write(
        orjson.dumps(result, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    )
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
