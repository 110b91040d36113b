"""Issue 25 §6, measured: the relist storm ("if infrastructure services start or restart
at scale, they can blow up the control plane"). Part of ``watchcache bench`` (scenario
``relist_storm``: a note per round, ``relist_storm`` in results.json, the plot
``storm-N.png``): ``watchcache bench --scenarios relist_storm --storm 1000,5000``.

The storm runs on two servers of its own over the bench's etcd and data (HTTPS, a
static token allowed to impersonate, ``--authorization-mode=AlwaysAllow``: watchcache
has no Node authorizer), one of them with ``ConsistentListFromCache`` on; a bench with
``--server`` does not run it. K node agents relist their pods at once, as K kubelets
do when they all restart:
``GET /api/v1/pods?fieldSelector=spec.nodeName=<node>``, agent i for node i (modulo the
nodes seeded), each on a connection of its own (one client process holding K
connections, all K requests sent at once), each as its node would be
(``Impersonate-User: system:node:<node>``, group ``system:nodes``: API Priority and
Fairness classifies them as kubelets, flow schema ``system-nodes``, priority level
``system``). Three rounds per K:

- ``unset``: resourceVersion unset, a quorum read from etcd: each request ranges over
  every pod in etcd and filters by node in the server (etcd knows no fields);
- ``rv0``: ``resourceVersion=0``, from the watch cache, through its ``spec.nodeName``
  index (client-go's reflectors list so);
- ``consistent``: resourceVersion unset on the bench's server with
  ``ConsistentListFromCache`` on: etcd is asked only for its revision, the list comes
  from the cache (on an etcd without the progress-notify fixes it falls back to etcd).

Before each round an unrelated key is written to etcd (as a live cluster's Lease
renewals move its revision), so the consistent round's cache must prove it caught up.

Per round: the time from the first request sent until the last answered (and until
the last 200: no agent retries a 429, as a kubelet would after its Retry-After), the answers
by status (200, 429 from APF, 504 from the request timeout, 0 = the connection
failed; with APF's own count of the kubelets' flow dispatched and rejected), where
each 200 was served from (``X-Watchcache-Served-From``) and the objects fetched and
returned (the ``X-Watchcache-Objects-*`` headers), the bytes etcd sent to
its gRPC clients (etcd's own ``etcd_network_client_grpc_sent_bytes_total``: all of
them, the servers' idle watches and the light client included, which is noise next to
a storm's ranges), the server's and etcd's CPU seconds, the server's peak CPU (cores,
over 250 ms windows) and RSS (before and at its peak: the rounds share a server), and
a light client's small requests meanwhile (the namespace ``default``'s configmaps, one
after another on its own connection; as
``system:masters`` it is exempt from APF, so its latency is the server's load, not
queueing).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import psutil  # type: ignore[import-untyped]

from lab import seed
from lab.apiserver import APIServer
from lab.bench_client import CHURN_KEY
from lab.bench_concurrency import light_client
from lab.bench_report import percentile
from lab.bench_snapshots import rss
from lab.etcd import free_port
from lab.metrics import Scrape, scrape
from lab.observe import FETCHED, RETURNED, SERVED_FROM

__all__ = [
    "CACHE_FETCHED", "CONSISTENT_FLAG", "ETCD_SENT", "ROUNDS", "STORAGE_FETCHED", "describe",
    "measure", "nodes_for", "relist_all", "storm_path",
]  # fmt: skip

# (round, the server it runs on, the query after the field selector, where it should be
# served from: the consistent round's own answer depends on etcd, see measure)
ROUNDS: tuple[tuple[str, str, str, str], ...] = (
    ("unset", "server", "", "etcd"),
    ("rv0", "server", "&resourceVersion=0", "cache"),
    ("consistent", "server-consistent", "", "cache"),
)
ETCD_SENT = "etcd_network_client_grpc_sent_bytes_total"
STORAGE_FETCHED = "apiserver_storage_list_fetched_objects_total"
CACHE_FETCHED = "apiserver_cache_list_fetched_objects_total"
DISPATCHED = "apiserver_flowcontrol_dispatched_requests_total"
REJECTED = "apiserver_flowcontrol_rejected_requests_total"
REJECT_REASONS = ("queue-full", "time-out", "concurrency-limit", "cancelled")
KUBELETS = {"flow_schema": "system-nodes"}  # upstream's flow schema for group system:nodes
TOKEN = "bench-storm-token"  # in the storm servers' own token file
CONSISTENT_FLAG = "--feature-gates=ConsistentListFromCache=true"
SAMPLE = 0.25  # seconds between the samplers' reads of RSS and CPU
SETTLE = 2.0  # seconds between rounds: the previous round's garbage collected


def storm_path(node: str, query: str = "") -> str:
    """The kubelet's relist of its node's pods."""
    return f"/api/v1/pods?fieldSelector=spec.nodeName%3D{node}{query}"


def nodes_for(agents: int, nodes: int) -> list[str]:
    """The node each of ``agents`` relists: agent i node i, modulo the ``nodes`` seeded."""
    return [seed.node_name(i % max(nodes, 1)) for i in range(agents)]


# -- the agents: a child process, so the client's own loop is not the light client's ----


async def _agent(session: aiohttp.ClientSession, base: str, node: str,
                 query: str) -> list[Any]:  # fmt: skip
    """One relist: [status, seconds, served_from, fetched, returned, bytes]; status 0
    when the connection failed or timed out."""
    t0 = time.perf_counter()
    headers = {"Accept-Encoding": "identity", "Impersonate-User": f"system:node:{node}",
               "Impersonate-Group": "system:nodes"}  # fmt: skip
    try:
        async with session.get(base + storm_path(node, query), headers=headers) as r:
            body = await r.read()
            h = r.headers
            return [r.status, time.perf_counter() - t0, h.get(SERVED_FROM),
                    int(h.get(FETCHED) or 0), int(h.get(RETURNED) or 0), len(body)]  # fmt: skip
    except (aiohttp.ClientError, TimeoutError, OSError):
        return [0, time.perf_counter() - t0, None, 0, 0, 0]


async def _fire(base: str, query: str, agents: int, nodes: int, within: float,
                ca: str) -> dict[str, Any]:  # fmt: skip
    names = nodes_for(agents, nodes)
    # no pooling limit: K requests in flight open K connections (K TLS handshakes), one
    # per agent, as K kubelets would
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0,
                                     ssl=ssl.create_default_context(cafile=ca) if ca else False)
    timeout = aiohttp.ClientTimeout(total=within)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(connector=connector, timeout=timeout,
                                     headers=headers) as session:  # fmt: skip
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        elapsed, answers = await relist_all(session, base, names, query)
    return {"elapsed": elapsed, "answers": answers}


async def relist_all(session: aiohttp.ClientSession, base: str, names: list[str],
                     query: str) -> tuple[float, list[list[Any]]]:  # fmt: skip
    """Every node's relist at once: the seconds until the last answered, and per agent
    [status, seconds, served_from, fetched, returned, bytes]."""
    t0 = time.perf_counter()
    answers = await asyncio.gather(*(_agent(session, base, n, query) for n in names))
    return time.perf_counter() - t0, answers


def fire_main(argv: list[str]) -> int:
    """``python -m lab.bench_storm BASE QUERY AGENTS NODES WITHIN CA``: wait for a line
    on stdin, send every relist at once, print the answers as JSON."""
    base, query, agents, nodes, within, ca = argv
    out = asyncio.run(_fire(base, query, int(agents), int(nodes), float(within), ca))
    sys.stdout.buffer.write(orjson.dumps(out) + b"\n")
    return 0


# -- the round, measured from the bench's process -------------------------------------


def _cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            t = psutil.Process(pid).cpu_times()
            total += t.user + t.system
    return total


async def _sample(pids: list[int], done: asyncio.Event, peak: dict[str, float]) -> None:
    """The peak RSS and the peak CPU (cores over one window) of ``pids``."""
    last, t_last = _cpu(pids), time.perf_counter()
    while not done.is_set():
        await asyncio.sleep(SAMPLE)
        now, t_now = _cpu(pids), time.perf_counter()
        peak["cores"] = max(peak["cores"], (now - last) / max(t_now - t_last, 1e-3))
        peak["rss"] = max(peak["rss"], rss(pids))
        last, t_last = now, t_now


async def _scrape_or_none(session: aiohttp.ClientSession, base: str) -> Scrape | None:
    try:
        return await scrape(session, base)
    except (aiohttp.ClientError, ValueError):
        return None


def _since(after: Scrape | None, before: Scrape | None, name: str, **labels: str) -> float | None:
    """The counter's change over the round; None only when a scrape failed. A labelled
    counter appears at its first increment: a server that never read pods from etcd
    has no ``apiserver_storage_list_fetched_objects_total`` series yet, which is 0."""
    if after is None or before is None:
        return None
    if not after.has(name):
        return 0.0
    return after.since(before, name, **labels)


async def _churn(endpoints: list[str], serial: int) -> None:
    """Move etcd's revision (an unrelated key), as a live cluster's Lease renewals do: a
    consistent read must then prove its cache caught up (a progress notification)."""
    from etcdclient import EtcdClient

    async with EtcdClient(endpoints) as client:
        await client.put(CHURN_KEY, str(serial).encode())


def _apf(after: Scrape, before: Scrape) -> dict[str, float | None]:
    """The kubelets' flow: dispatched and rejected (by reason) during the round."""
    out = {"dispatched": _since(after, before, DISPATCHED, **KUBELETS)}
    for reason in REJECT_REASONS:
        out[f"rejected_{reason}"] = _since(after, before, REJECTED, reason=reason, **KUBELETS)
    return out


async def _round(srv: StormServer, query: str, agents: int, nodes: int, etcd_pids: list[int],
                 etcd: str | None, within: float) -> dict[str, Any]:  # fmt: skip
    url, server = srv.plain, [srv.pid]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lab.bench_storm", srv.secure, query, str(agents), str(nodes),
        str(within), srv.ca, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    if (await proc.stdout.readline()).strip() != b"ready":
        raise RuntimeError(f"the storm's agents did not start (exit {await proc.wait()})")
    async with aiohttp.ClientSession() as s:
        before = await scrape(s, url)
        etcd_before = await _scrape_or_none(s, etcd) if etcd else None
    cpu0 = (_cpu(server), _cpu(etcd_pids))
    done = asyncio.Event()
    light: list[float] = []
    light_codes: Counter[int] = Counter()
    rss_before = rss(server)
    peak = {"rss": float(rss_before), "cores": 0.0}
    side = [asyncio.create_task(light_client(url, done, light, light_codes)),
            asyncio.create_task(_sample(server, done, peak))]  # fmt: skip
    await asyncio.sleep(0.5)  # the light client's pace before the storm
    proc.stdin.write(b"go\n")
    await proc.stdin.drain()
    fired: dict[str, Any] = orjson.loads(await proc.stdout.read())
    await proc.wait()
    done.set()
    await asyncio.gather(*side)
    cpu1 = (_cpu(server), _cpu(etcd_pids))
    async with aiohttp.ClientSession() as s:
        after = await scrape(s, url)
        etcd_after = await _scrape_or_none(s, etcd) if etcd else None
    answers = fired["answers"]
    ok = [a for a in answers if a[0] == 200]
    return {
        "agents": agents, "elapsed": fired["elapsed"],
        "codes": {str(k): v for k, v in sorted(Counter(a[0] for a in answers).items())},
        "served_from": dict(Counter(str(a[2]) for a in ok)),
        "fetched": sum(a[3] for a in ok), "returned": sum(a[4] for a in ok),
        "apf": _apf(after, before),
        "slowest": max((a[1] for a in answers), default=0.0),
        "last_ok": max((a[1] for a in ok), default=None),
        "p50": percentile([a[1] for a in ok], 50) if ok else None,
        "etcd_sent_bytes": _since(etcd_after, etcd_before, ETCD_SENT),
        "storage_fetched": _since(after, before, STORAGE_FETCHED, resource="pods"),
        "cache_fetched": _since(after, before, CACHE_FETCHED, resource="pods"),
        "server_cpu": cpu1[0] - cpu0[0], "etcd_cpu": cpu1[1] - cpu0[1],
        "server_cores_peak": peak["cores"], "rss_before": rss_before,
        "rss_peak": int(peak["rss"]),
        "light_requests": len(light),
        "light_codes": {str(k): v for k, v in sorted(light_codes.items())},
        "light_p50": percentile(light, 50) if light else None,
        "light_p99": percentile(light, 99) if light else None,
        "light_max": max(light, default=None),
    }  # fmt: skip


async def _rounds(servers: dict[str, StormServer], etcd_endpoints: list[str],
                  etcd_pids: list[int], ks: list[int], nodes: int,
                  within: float) -> list[dict[str, Any]]:  # fmt: skip
    rounds: list[dict[str, Any]] = []
    for srv in servers.values():
        await _warm(srv)
    for k in ks:
        for name, server, query, expect in ROUNDS:
            await _churn(etcd_endpoints, len(rounds))
            r = await _round(servers[server], query, k, nodes, etcd_pids, etcd_endpoints[0],
                             within)  # fmt: skip
            rounds.append({"round": name, "expected_from": expect, **r})
            await asyncio.sleep(SETTLE)
    return rounds


def measure(etcd_endpoints: list[str], etcd_pids: list[int], ks: list[int], nodes: int,
            workdir: Path, within: float = 180.0) -> dict[str, Any]:  # fmt: skip
    """Every round for every K in ``ks``, on two servers of the storm's own over the
    bench's etcd (``etcd_pids``: its processes; ``nodes``: how many were seeded):
    HTTPS with a token that may impersonate (``--authorization-mode=AlwaysAllow``:
    watchcache has no Node authorizer), one with ``ConsistentListFromCache`` on."""
    (workdir / "storm-tokens.csv").write_text(f"{TOKEN},bench-storm,1,system:masters\n")
    started: dict[str, StormServer] = {}
    try:
        for name, flags in (("server", ()), ("server-consistent", (CONSISTENT_FLAG,))):
            started[name] = _start(etcd_endpoints, workdir, name, flags)
        rounds = asyncio.run(_rounds(started, etcd_endpoints, etcd_pids, ks, nodes, within))
    finally:
        for srv in started.values():
            srv.server.stop()
    return {"agents": ks, "nodes": nodes, "distinct_nodes": [min(k, nodes) for k in ks],
            "connections": "one per agent, HTTPS", "rounds": rounds}  # fmt: skip


@dataclass
class StormServer:
    server: APIServer
    secure: str  # the agents' HTTPS URL
    ca: str  # its serving certificate's CA file

    @property
    def plain(self) -> str:  # the light client's and the scrapes' (system:masters)
        return self.server.url

    @property
    def pid(self) -> int:
        return self.server.pid


def _start(etcd_endpoints: list[str], workdir: Path, name: str,
           flags: tuple[str, ...]) -> StormServer:  # fmt: skip
    port = free_port()
    certs = workdir / f"storm-{name}-certs"
    srv = APIServer(etcd_endpoints, extra_args=(
        f"--secure-port={port}", f"--cert-dir={certs}",
        f"--token-auth-file={workdir / 'storm-tokens.csv'}", "--authorization-mode=AlwaysAllow",
        "--endpoint-reconciler-type=none", "--log-level=warning", *flags),
        log_path=workdir / f"storm-{name}.log").start()  # fmt: skip
    return StormServer(srv, f"https://127.0.0.1:{port}", str(certs / "apiserver.crt"))


async def _warm(srv: StormServer, within: float = 300) -> None:
    """Until the server's pods cache holds every pod etcd has (a fresh server lists
    them on first use): the rounds' objects counts are then the whole data set's."""
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession() as s:
        async with s.get(srv.plain + "/api/v1/pods?limit=1") as r:
            first = await r.json()
        total = len(first["items"]) + int(first["metadata"].get("remainingItemCount") or 0)
        while time.monotonic() < deadline:
            async with s.get(srv.plain + "/api/v1/pods?resourceVersion=0") as r:
                if r.status == 200 and len((await r.json())["items"]) >= total:
                    return
            await asyncio.sleep(0.5)
    raise TimeoutError(f"{srv.plain}: the pods cache did not fill in {within:.0f} s")


def describe(m: dict[str, Any]) -> str:
    """One note for the report: every round in a sentence."""
    mib, ms = 2**20, 1000
    parts = []
    for r in m["rounds"]:
        sent = r["etcd_sent_bytes"]
        etcd = "?" if sent is None else f"{sent / mib:.1f} MiB"
        light = "-" if r["light_p99"] is None else (
            f"p50 {r['light_p50'] * ms:.0f} / p99 {r['light_p99'] * ms:.0f} / max "
            f"{r['light_max'] * ms:.0f} ms")
        parts.append(
            f"K={r['agents']} {r['round']}: all answered in {r['elapsed']:.1f} s, "
            f"{r['codes']}, from {r['served_from']}, {r['fetched']} objects fetched for "
            f"{r['returned']} returned, etcd sent {etcd}, server {r['server_cpu']:.1f} CPU s "
            f"(peak {r['server_cores_peak']:.1f} cores, RSS {r['rss_peak'] / mib:.0f} MiB), "
            f"light client {light}")  # fmt: skip
    return (f"relist storm ({m['connections']}, over {m['nodes']} nodes): "
            + "; ".join(parts) + ".")


if __name__ == "__main__":
    raise SystemExit(fire_main(sys.argv[1:]))
