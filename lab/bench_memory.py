"""What the bench's pods cost the server in memory, and how long a restart takes to be
ready again (issue 25 items 4 and 5).

- **growth per pod**: the server's RSS when it started (no pods) against its RSS once
  it held every seeded pod (filled by the seeding's writes through its watch: the
  history ring still holds the writes' earlier versions, and each write left a
  snapshot for up to 75 s) and after a restart (primed by one LIST: one version per
  pod, nothing else), each divided by the pods and compared with their JSON bytes
  (``/debug/watchcache?memory=1``: what the cache keeps per pod, too);
- **restart**: the main server stopped and started again on the same etcd and flags,
  timed until it listens (``/livez``), until its pods cache is primed (its LIST of
  every pod, ``/debug/watchcache``) and until ``/readyz`` (every watch cache primed).
"""

from __future__ import annotations

import time
import urllib.request
from typing import Any

import orjson
import psutil  # type: ignore[import-untyped]

from lab.apiserver import APIServer

MIB = 1024 * 1024


def rss(pid: int | None) -> int:
    """Resident bytes of ``pid`` (0 when it is gone or unknown)."""
    try:
        return int(psutil.Process(pid).memory_info().rss) if pid else 0
    except psutil.Error:
        return 0


def pods_cache(url: str) -> dict[str, int]:
    """The pods cache's objects, JSON bytes, held bytes and history size."""
    with urllib.request.urlopen(f"{url}/debug/watchcache?memory=1", timeout=600) as r:
        caches = orjson.loads(r.read())["caches"]
    pods = next(c for c in caches if c["resource"].split(".")[0] == "pods")
    return {"objects": int(pods["objects"]), "json_bytes": int(pods["jsonBytes"]),
            "held_bytes": int(pods["heldBytes"]), "history": int(pods["history"]["size"]),
            "snapshots": int(pods.get("snapshots", {}).get("count", 0))}  # fmt: skip


def growth(empty_rss: int, rss_now: int, cache: dict[str, int]) -> dict[str, Any]:
    """RSS growth since the empty start, per pod and against the pods' JSON bytes."""
    pods = max(cache["objects"], 1)
    grown = rss_now - empty_rss
    return {"rss": rss_now, "grown": grown, "per_pod": grown / pods,
            "json_per_pod": cache["json_bytes"] / pods,
            "ratio": grown / max(cache["json_bytes"], 1),
            "held_per_pod": cache["held_bytes"] / pods,
            "held_ratio": cache["held_bytes"] / max(cache["json_bytes"], 1), **cache}  # fmt: skip


def restart(server: APIServer, timeout: float = 1800.0) -> tuple[APIServer, dict[str, Any]]:
    """Stop ``server`` and start the same one again (same etcd, port and flags); the
    new server and its timings: seconds to listen, to be ready, and its RSS then."""
    server.stop()
    again = APIServer(server.etcd_servers, prefix=server.prefix, port=server.port,
                      extra_args=server.extra_args, log_path=server.log_path)  # fmt: skip
    t0 = time.monotonic()
    again.start(timeout, ready=False)
    listening = time.monotonic() - t0
    while not _pods_ready(again.url) and time.monotonic() - t0 < timeout:
        time.sleep(0.1)
    primed = time.monotonic() - t0
    again.wait_ready(timeout)
    ready = time.monotonic() - t0
    return again, {"listening_s": listening, "pods_primed_s": primed, "ready_s": ready,
                   "rss_ready": rss(again.pid)}  # fmt: skip


def _pods_ready(url: str) -> bool:
    """Whether the pods cache is primed (``/debug/watchcache``: its state, no walk)."""
    try:
        with urllib.request.urlopen(f"{url}/debug/watchcache", timeout=10) as r:
            caches = orjson.loads(r.read())["caches"]
    except (OSError, ValueError, KeyError):
        return False
    return any(c["resource"].split(".")[0] == "pods" and c["ready"] for c in caches)
