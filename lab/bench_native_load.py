"""Small requests through a native client: part of ``watchcache bench --reference``.

A Python client costs about as much per small request as the servers it measures, so
the GET latencies and the 16-connection throughput are taken with ``wrk``
(:mod:`lab.wrk`) against every server of the run — the reference and each watchcache
(one per ``--workers`` value) — over HTTPS with the same bearer token, and against the
floor (:func:`lab.bench_reference_load.start_floor`: aiohttp answering the same pod's
bytes over the same TLS, nothing else), so the report shows what the HTTP server and
TLS alone cost on this machine:

- ``get_cache_c1``: one connection, GET one pod with ``resourceVersion=0`` (p50, p99);
- ``get_etcd_c1``: the same with the resourceVersion unset (a read from etcd);
- ``get_cache_cN``: N connections (``--connections``, 16), GET RV=0: requests per second.

Each (scenario, server) pair first runs one uncounted second (a fresh server's first
requests are several times slower), then ``--load-seconds`` per round, ``--load-rounds``
rounds, in a new seeded order each round, so that the machine's other work spreads over
all of them; the figures are the medians over the rounds. Around every run the
server's CPU (its whole process tree: a ``--workers`` supervisor and its workers) and
wrk's own CPU are read, so the report gives CPU per request on both sides of the wire
and what the load generator itself cost.
"""

from __future__ import annotations

import contextlib
import os
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import psutil  # type: ignore[import-untyped]

from lab import seed
from lab.wrk import Wrk

__all__ = ["LoadTarget", "measure", "pod_path", "scenarios", "tree_cpu", "tree_rss"]


class LoadTarget(Protocol):
    name: str
    url: str
    headers: dict[str, str]
    pid: int | None


@dataclass(frozen=True)
class LoadScenario:
    name: str
    query: str
    connections: int


def scenarios(connections: int) -> tuple[LoadScenario, ...]:
    cached = "?resourceVersion=0"
    return (LoadScenario("get_cache_c1", cached, 1), LoadScenario("get_etcd_c1", "", 1),
            LoadScenario(f"get_cache_c{connections}", cached, connections))


def _tree_sum(pid: int | None, measure: Callable[[Any], float]) -> float | None:
    """``measure`` summed over ``pid`` and its descendants (a ``--workers``
    supervisor's workers), None when the process is unknown or gone."""
    if pid is None:
        return None
    total = 0.0
    with contextlib.suppress(psutil.Error):
        proc = psutil.Process(pid)
        for p in (proc, *proc.children(recursive=True)):
            with contextlib.suppress(psutil.Error):  # a worker may exit meanwhile
                total += measure(p)
        return total
    return None


def tree_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) of ``pid``'s process tree."""
    return _tree_sum(pid, lambda p: float(sum(p.cpu_times()[:2])))


def tree_rss(pid: int | None) -> float | None:
    """Resident bytes of ``pid``'s process tree."""
    return _tree_sum(pid, lambda p: float(p.memory_info().rss))


def pod_path(ns: str) -> str:
    """The one pod every small request asks for."""
    return f"/api/v1/namespaces/{ns}/pods/{seed.pod_name(0)}"


def _one(wrk: Wrk, ep: LoadTarget, path: str, sc: LoadScenario, seconds: float
         ) -> dict[str, Any]:  # fmt: skip
    cpu0 = tree_cpu(ep.pid)
    r = wrk.run(ep.url + path + sc.query, connections=sc.connections, seconds=seconds,
                headers=ep.headers)  # fmt: skip
    cpu1 = tree_cpu(ep.pid)
    server = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    return {"requests": r.requests, "seconds": r.seconds, "errors": r.errors, "rps": r.rps,
            "p50": r.p50, "p99": r.p99, "server_cpu": server, "client_cpu": r.client_cpu}


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def med(key: str) -> float | None:
        xs = [x[key] for x in runs if x[key] is not None]
        return statistics.median(xs) if xs else None

    requests = sum(x["requests"] for x in runs)
    server = [x["server_cpu"] for x in runs]
    known = None not in server
    return {
        "rps": med("rps"), "p50": med("p50"), "p99": med("p99"), "rounds": len(runs),
        "requests": requests, "errors": sum(x["errors"] for x in runs),
        "server_cpu_cores": (statistics.median(x["server_cpu"] / x["seconds"] for x in runs)
                             if known else None),
        "server_cpu_ms_per_request": (1e3 * sum(server) / requests
                                      if known and requests else None),
        "client_cpu_ms_per_request": (1e3 * sum(x["client_cpu"] for x in runs) / requests
                                      if requests else None),
        "all_rps": [x["rps"] for x in runs],
    }  # fmt: skip


def measure(wrk: Wrk, eps: list[LoadTarget], ns: str, *, connections: int, seconds: float,
            rounds: int, console: Any = None) -> dict[str, Any]:  # fmt: skip
    """Every scenario on every server (see the module docstring). The first endpoint
    is the reference; every ratio is a watchcache's figure over the reference's."""
    path = pod_path(ns)
    scs = scenarios(connections)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    load_before = os.getloadavg()
    pairs = [(sc, ep) for sc in scs for ep in eps]
    for sc, ep in pairs:  # warm-up, not counted: a fresh server's first second is slower
        _one(wrk, ep, path, sc, 1)
    for rnd in range(rounds):
        for sc, ep in random.Random(rnd).sample(pairs, len(pairs)):
            if console is not None:
                console.print(f"  round {rnd + 1}/{rounds}: {sc.name} on {ep.name} ...")
            runs.setdefault((sc.name, ep.name), []).append(_one(wrk, ep, path, sc, seconds))
    ref = eps[0].name
    rows = []
    for sc in scs:
        row: dict[str, Any] = {"name": sc.name, "connections": sc.connections,
                               "servers": {ep.name: _summary(runs[(sc.name, ep.name)])
                                           for ep in eps}}  # fmt: skip
        key = "p50" if sc.connections == 1 else "rps"
        base = row["servers"][ref][key]
        row["ratio_of"] = key
        row["ratios"] = {ep.name: row["servers"][ep.name][key] / base
                         for ep in eps[1:] if base}  # fmt: skip
        rows.append(row)
    return {"tool": wrk.version(), "rounds": rounds, "seconds": seconds, "path": path,
            "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
            "scenarios": rows}  # fmt: skip
