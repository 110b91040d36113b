"""``watchcache bench-auth``: what authentication and RBAC cost on the two hottest reads.

    watchcache bench-auth [--pods 2000] [--requests 1000] [--rounds 6] [--out FILE]
                          [--etcd-servers URLS] [--quick]

Starts a real etcd (unless ``--etcd-servers``) and two servers on it, both HTTPS with the
same static-token user: one ``--authorization-mode=AlwaysAllow``, one ``RBAC`` (the
bootstrap policy plus a ClusterRoleBinding of ``view`` to the user's group). Seeds pods
through the plain port, then alternates rounds of a cached GET (``resourceVersion=0``)
and an indexed LIST (``fieldSelector=spec.nodeName``, ``resourceVersion=0``) against
each. Reported per request: the server's CPU time (from the process's CPU counters: not
skewed by other load on the machine the way wall time is) and the client's median
latency; the overhead is RBAC over AlwaysAllow. Both servers run the same
authentication chain, so the difference is the authorizer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
import psutil  # type: ignore[import-untyped]

from lab.apiserver import APIServer
from lab.etcd import EtcdCluster, free_port

__all__ = ["main", "run"]

TOKEN = "bench-auth-token"
SCENARIOS = {
    "cached GET": "/api/v1/namespaces/bench/pods/pod-7?resourceVersion=0",
    "indexed LIST": "/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName%3Dnode-3",
}


def _pod(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"pod-{i}", "labels": {"app": f"a{i % 7}"}},
            "spec": {"nodeName": f"node-{i % 20}",
                     "containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip


async def _seed(s: aiohttp.ClientSession, plain: str, pods: int) -> None:
    await s.post(f"{plain}/api/v1/namespaces", json={"metadata": {"name": "bench"}})
    sem = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with sem, s.post(f"{plain}/api/v1/namespaces/bench/pods", json=_pod(i)) as r:
            await r.read()

    await asyncio.gather(*(one(i) for i in range(pods)))
    binding = {
        "metadata": {"name": "bench-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "bench"}],
    }  # fmt: skip
    path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
    async with s.post(plain + path, json=binding) as r:
        await r.read()


async def _round(
    s: aiohttp.ClientSession, base: str, path: str, pid: int, n: int
) -> tuple[float, float]:
    """(server CPU seconds per request, client median seconds per request)."""
    proc = psutil.Process(pid)
    before = sum(proc.cpu_times()[:2])
    latencies = []
    for _ in range(n):
        t0 = time.perf_counter()
        async with s.get(base + path) as r:
            await r.read()
            if r.status != 200:
                raise RuntimeError(f"{path}: {r.status}")
        latencies.append(time.perf_counter() - t0)
    return (sum(proc.cpu_times()[:2]) - before) / n, statistics.median(latencies)


async def _measure(servers: dict[str, tuple[APIServer, str]], ca: str, requests: int,
                   rounds: int) -> dict[str, Any]:  # fmt: skip
    ctx = ssl.create_default_context(cafile=ca)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx),
                                     headers=headers) as s:  # fmt: skip
        for name, path in SCENARIOS.items():
            samples: dict[str, list[tuple[float, float]]] = {m: [] for m in servers}
            for rnd in range(rounds + 1):  # round 0 warms up
                for mode, (server, base) in servers.items():
                    assert server.pid is not None
                    result = await _round(s, base, path, server.pid, requests)
                    if rnd:
                        samples[mode].append(result)
            out[name] = {m: {"server_cpu_ms": 1e3 * statistics.median(c for c, _ in v),
                             "client_median_ms": 1e3 * statistics.median(w for _, w in v)}
                         for m, v in samples.items()}  # fmt: skip
    return out


def measure_modes(work: Path, modes: Mapping[str, tuple[str, ...]], pods: int, requests: int,
                  rounds: int, etcd_servers: list[str]) -> dict[str, Any]:  # fmt: skip
    """One HTTPS server per mode (its extra flags; same token user), seeded alike,
    measured in alternating rounds (``bench-chain`` uses it too)."""
    (work / "tokens.csv").write_text(f"{TOKEN},bench-user,1,bench\n")
    cluster = None if etcd_servers else EtcdCluster(size=1, data_root=work / "etcd").start()
    endpoints = etcd_servers or (cluster.endpoints if cluster else [])
    servers: dict[str, tuple[APIServer, str]] = {}
    try:
        for mode, flags in modes.items():
            port = free_port()
            server = APIServer(endpoints, f"/bench-{port}", extra_args=(
                f"--secure-port={port}", f"--cert-dir={work / 'certs'}",
                f"--token-auth-file={work / 'tokens.csv'}", *flags,
                "--log-level=warning"), log_path=work / f"{port}.log").start()  # fmt: skip
            servers[mode] = (server, f"https://127.0.0.1:{port}")

        async def go() -> dict[str, Any]:
            async with aiohttp.ClientSession() as s:
                for server, _ in servers.values():
                    await _seed(s, server.url, pods)
            await asyncio.sleep(1)  # the binding reaches the RBAC informer
            return await _measure(servers, str(work / "certs" / "apiserver.crt"), requests, rounds)

        return asyncio.run(go())
    finally:
        for server, _ in servers.values():
            server.stop()
        if cluster is not None:
            cluster.stop()


def run(pods: int, requests: int, rounds: int, etcd_servers: list[str]) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-auth-"))
    modes = {m: (f"--authorization-mode={m}",) for m in ("AlwaysAllow", "RBAC")}
    return measure_modes(work, modes, pods, requests, rounds, etcd_servers)


def table(results: dict[str, Any], base: str = "AlwaysAllow", other: str = "RBAC") -> str:
    lines = [f"| request | {base} CPU | {other} CPU | overhead | {base} p50 | {other} p50 |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for name, by_mode in results.items():
        a, r = by_mode[base], by_mode[other]
        over = 100 * (r["server_cpu_ms"] / a["server_cpu_ms"] - 1) if a["server_cpu_ms"] else 0.0
        lines.append(f"| {name} | {a['server_cpu_ms']:.3f} ms | {r['server_cpu_ms']:.3f} ms | "
                     f"{over:+.1f} % | {a['client_median_ms']:.3f} ms | "
                     f"{r['client_median_ms']:.3f} ms |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="watchcache bench-auth", description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--requests", type=int, default=1000, help="requests per round and server")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--etcd-servers", default="", help="use this etcd instead of starting one")
    p.add_argument("--out", type=Path, default=None, help="also write the results as JSON")
    p.add_argument("--quick", action="store_true", help="tiny, for tests")
    a = p.parse_args(argv)
    if a.quick:
        a.pods, a.requests, a.rounds = 40, 20, 1
    endpoints = [u for u in a.etcd_servers.split(",") if u]
    results = run(a.pods, a.requests, a.rounds, endpoints)
    print(table(results))
    if a.out is not None:
        a.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0
