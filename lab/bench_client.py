"""The benchmark's client: a separate process that times each scenario through real I/O.

``python -m lab.bench_client SPEC.json OUT.json``. The spec names the scenarios, the
runs, and the PIDs of the processes to account (servers, etcd members, the bytes
floor). Scenarios run interleaved, in a new seeded random order each round, so that drift
(caches warming, the machine's other work, a previous request's garbage) spreads evenly
over all of them. Around
every request the client reads the CPU time of each accounted process (psutil), so a
scenario's CPU cost is measured even though all processes run throughout; peak RSS is
sampled after each request.

Kinds of scenario: ``http`` (one GET, body read in full, not parsed), ``paginate``
(follow ``continue`` tokens until the list ends; one sample is the whole walk, served
from "etcd", "cache" or "etcd+cache" as its pages were) and
``etcd_range`` (one Range of the prefix through etcdclient: the etcd path's floor).
A ``churn`` scenario first writes an unrelated key (untimed), so that etcd's revision is
ahead of the watch cache's and a consistent read must establish freshness; a ``touch``
scenario first changes a pod (untimed) and waits until the cache has it, so that the
cache has seen etcd's revision. ``headers``
are sent with each request (``Accept`` for Table, YAML, metadata-only lists).

Loop lag: around every request of a server with ``watchcache_event_loop_lag_seconds``
(a 10 ms ticker inside the server, :mod:`proxy.server.loop_lag`) the client reads the
histogram and keeps the change of its buckets, so the report can give, per scenario,
the p99 and the largest lateness of the ticker while that scenario ran; first, the same
over a few idle seconds (what the machine's other processes alone cause). A ``readyz``
scenario also asks ``/readyz`` over and over on other connections while its request
runs, and keeps those latencies: what any other client waited meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import itertools
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson
import psutil  # type: ignore[import-untyped]

from lab.observe import FETCHED, RETURNED, SERVED_FROM

__all__ = ["Sample", "Scenario", "lag_buckets", "run"]

# Outside every resource prefix: writing it moves etcd's revision past every watch
# cache's, as the constant writes of a live cluster do, without touching any object.
CHURN_KEY = b"/watchcache-bench/churn"


@dataclass(frozen=True)
class Scenario:
    name: str
    kind: str  # http | paginate | etcd_range
    target: str  # URL for http/paginate, key prefix for etcd_range
    serving: str  # the accounted process that serves it (key of "processes")
    churn: bool = False  # move etcd's revision (an unrelated key) before each request
    headers: dict[str, str] = field(default_factory=dict)  # sent with each request (Accept)
    readyz: bool = False  # probe /readyz concurrently while the request runs
    resource: str = "pods"  # the resource label of the /metrics counters it moves
    # a pod's URL to change (untimed) before each request, then read at that revision
    # from the cache: the cache has then seen etcd's revision (a paged list's first page,
    # read from etcd, is at a revision its pages after the first can find in the cache)
    touch: str = ""


@dataclass
class Sample:
    seconds: float
    nbytes: int
    status: int
    requests: int = 1
    served_from: str | None = None
    fetched: int | None = None
    returned: int | None = None
    items: int | None = None
    cpu: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    # change of watchcache_event_loop_lag_seconds around the request: [(le, count), ...]
    # cumulative as Prometheus buckets (le "+Inf" last); empty without the metric
    lag_buckets: list[tuple[str, float]] = field(default_factory=list)
    readyz: list[float] = field(default_factory=list)  # concurrent /readyz latencies (s)


LOOP_LAG = "watchcache_event_loop_lag_seconds"
# Counters read from the serving server's /metrics around one request of each scenario.
METRICS = {
    "storage_fetched": "apiserver_storage_list_fetched_objects_total",
    "storage_evaluated": "apiserver_storage_list_evaluated_objects_total",
    "storage_returned": "apiserver_storage_list_returned_objects_total",
    "cache_fetched": "apiserver_cache_list_fetched_objects_total",
    "cache_returned": "apiserver_cache_list_returned_objects_total",
}


async def _scrape(session: aiohttp.ClientSession, url: str) -> Any:
    from lab.metrics import scrape

    base = "/".join(url.split("/")[:3])
    try:
        return await scrape(session, base)
    except (aiohttp.ClientError, ValueError):
        return None  # a server without /metrics (the floor): nothing to cite


class Accounting:
    """CPU seconds and peak RSS of named groups of processes."""

    def __init__(self, processes: dict[str, list[int]]) -> None:
        self.procs = {k: [psutil.Process(p) for p in pids] for k, pids in processes.items()}
        self.peak_rss: dict[str, int] = dict.fromkeys(processes, 0)

    def cpu(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for k, procs in self.procs.items():
            total = 0.0
            for p in procs:
                try:
                    t = p.cpu_times()
                    total += t.user + t.system
                except psutil.Error:
                    pass
            out[k] = total
        return out

    def sample_rss(self) -> None:
        for k, procs in self.procs.items():
            rss = 0
            for p in procs:
                with contextlib.suppress(psutil.Error):
                    rss += p.memory_info().rss
            self.peak_rss[k] = max(self.peak_rss[k], rss)


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.isdigit() else None


def lag_buckets(before: Any, after: Any) -> list[tuple[str, float]]:
    """The loop-lag histogram's cumulative bucket counts moved between two scrapes,
    in bucket order."""
    if before is None or after is None or not after.has(LOOP_LAG + "_bucket"):
        return []
    out: list[tuple[str, float]] = []
    for (name, labels), value in after.samples.items():
        if name == LOOP_LAG + "_bucket":
            moved = value - before.samples.get((name, labels), 0.0)
            out.append((dict(labels)["le"], moved))
    return sorted(out, key=lambda b: float(b[0]))


async def _readyz_probe(
    session: aiohttp.ClientSession, base: str, out: list[float], done: asyncio.Event
) -> None:
    """GET /readyz one after another until ``done`` is set, appending each latency (the
    one in flight when ``done`` is set is finished and counted too: on a stalled
    server it is the one that waited longest)."""
    while not done.is_set():
        t0 = time.perf_counter()
        async with session.get(base + "/readyz") as r:
            await r.read()
        out.append(time.perf_counter() - t0)


async def _probed(session: aiohttp.ClientSession, sc: Scenario, parse: bool) -> Sample:
    """``_http``, with ``/readyz`` probed meanwhile when the scenario asks for it."""
    if not sc.readyz:
        return await _http(session, sc, parse)
    latencies: list[float] = []
    done = asyncio.Event()
    base = "/".join(sc.target.split("/")[:3])
    probe = asyncio.create_task(_readyz_probe(session, base, latencies, done))
    try:
        s = await _http(session, sc, parse)
    finally:
        done.set()
        await probe
    s.readyz = latencies
    return s


async def _http(session: aiohttp.ClientSession, sc: Scenario, parse: bool) -> Sample:
    t0 = time.perf_counter()
    async with session.get(sc.target, headers=sc.headers) as r:
        body = await r.read()
        seconds = time.perf_counter() - t0
        h = r.headers
        s = Sample(seconds, len(body), r.status, 1, h.get(SERVED_FROM), _int(h.get(FETCHED)),
                   _int(h.get(RETURNED)))  # fmt: skip
    if parse and r.status == 200 and h.get("Content-Type", "").startswith("application/json"):
        doc = orjson.loads(gzip.decompress(body) if h.get("Content-Encoding") == "gzip" else body)
        if "items" in doc or "rows" in doc:  # a List or a Table
            s.items = len(doc.get("items") or doc.get("rows") or [])
        else:
            s.items = 1
    return s


async def _paginate(session: aiohttp.ClientSession, sc: Scenario, parse: bool) -> Sample:
    t0 = time.perf_counter()
    total = requests = items = fetched = returned = 0
    token, status, sources = "", 200, []
    while True:
        url = sc.target + (f"&continue={quote(token)}" if token else "")
        async with session.get(url) as r:
            body = await r.read()
            status, requests, total = r.status, requests + 1, total + len(body)
            sources.append(r.headers.get(SERVED_FROM) or "?")
            fetched += _int(r.headers.get(FETCHED)) or 0
            returned += _int(r.headers.get(RETURNED)) or 0
        if status != 200:
            break
        # The token must be read to go on; a real client parses every page anyway.
        doc = orjson.loads(body)
        items += len(doc.get("items") or [])
        token = (doc.get("metadata") or {}).get("continue") or ""
        if not token:
            break
    # where the pages came from, in order: "etcd", "cache", or "etcd+cache" (the first
    # page from etcd, the others from the cache's snapshot)
    served = "+".join(dict.fromkeys(sources)) if sources else None
    s = Sample(time.perf_counter() - t0, total, status, requests, served, fetched or None,
               returned or None)  # fmt: skip
    s.items = items if parse else None
    return s


async def touch(session: aiohttp.ClientSession, url: str, serial: int) -> None:
    """Label the pod at ``url`` with ``serial`` (a new one each time: an unchanged
    label would write nothing), and wait until the cache has it. The
    value has a fixed width, so that once the bench labelled it in its preparation
    (``lab.bench``), no round changes the size of a LIST (the floor serves its bytes)."""
    body = orjson.dumps({"metadata": {"labels": {"bench-touch": f"{serial:08d}"}}})
    headers = {"Content-Type": "application/merge-patch+json"}
    async with session.patch(url, data=body, headers=headers) as r:
        rv = orjson.loads(await r.read())["metadata"]["resourceVersion"]
    async with session.get(f"{url}?resourceVersion={rv}") as r:  # waits for the cache
        await r.read()


async def _etcd_range(client: Any, sc: Scenario) -> Sample:
    t0 = time.perf_counter()
    rng = await client.list_prefix(sc.target.encode())
    seconds = time.perf_counter() - t0
    nbytes = sum(len(kv.key) + len(kv.value) for kv in rng.kvs)
    return Sample(seconds, nbytes, 200, 1, "etcd", len(rng.kvs), len(rng.kvs), len(rng.kvs))


async def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the spec; returns ``{"samples": {name: [Sample...]}, "peak_rss": {...}}``."""
    from etcdclient import EtcdClient

    scenarios = [Scenario(**s) for s in spec["scenarios"]]
    runs, warmup = int(spec["runs"]), int(spec.get("warmup", 1))
    acct = Accounting({k: list(v) for k, v in spec["processes"].items()})
    samples: dict[str, list[dict[str, Any]]] = {s.name: [] for s in scenarios}
    timeout = aiohttp.ClientTimeout(total=float(spec.get("request_timeout", 300)))
    async with (
        # plain bodies unless a scenario asks for gzip (aiohttp would ask by default)
        aiohttp.ClientSession(timeout=timeout, auto_decompress=False,
                              headers={"Accept-Encoding": "identity"}) as session,
        EtcdClient(spec["etcd_endpoints"], request_timeout=120) as etcd,
    ):
        idle = await _idle_lag(session, scenarios, float(spec.get("idle_seconds", 5)))
        start = acct.cpu()
        # every touch a new value (the preparation wrote 0): a patch that changes nothing
        # writes nothing, and the cache would then be behind whatever moved etcd's
        # revision since (another scenario's churn, another touch)
        touches = itertools.count(1)
        for rnd in range(warmup + runs):
            # A fresh (seeded) order each round: no scenario always follows the same one,
            # so leftover work of an expensive request (GC of a 40 MB response) is not
            # charged to one cheap neighbour every time.
            for sc in random.Random(rnd).sample(scenarios, len(scenarios)):
                if sc.churn:
                    await etcd.put(CHURN_KEY, str(rnd).encode())
                if sc.touch:
                    await touch(session, sc.touch, next(touches))
                # Metrics around every request, outside timing and CPU: the loop lag
                # each time, the objects counters on the parsed round.
                metered = sc.kind != "etcd_range"
                m0 = await _scrape(session, sc.target) if metered else None
                # The client's own garbage collection out of the timing: parsing a
                # paged list's pages made this process pause up to ~50 ms between
                # two pages, which the scenario was charged for.
                gc.collect()
                gc.disable()
                before = acct.cpu()
                try:
                    if sc.kind == "http":
                        s = await _probed(session, sc, parse=rnd == 0)
                    elif sc.kind == "paginate":
                        s = await _paginate(session, sc, parse=rnd == 0)
                    else:
                        s = await _etcd_range(etcd, sc)
                finally:
                    gc.enable()
                after = acct.cpu()
                s.cpu = {p: after[p] - before[p] for p in after}
                m1 = await _scrape(session, sc.target) if m0 is not None else None
                if m0 is not None and m1 is not None and rnd == 0:
                    s.metrics = {k: m1.since(m0, n, resource=sc.resource)
                                 for k, n in METRICS.items()}  # fmt: skip
                s.lag_buckets = lag_buckets(m0, m1)
                acct.sample_rss()
                if rnd >= warmup or rnd == 0:
                    d = asdict(s)
                    d["warmup"] = rnd < warmup
                    samples[sc.name].append(d)
        end = acct.cpu()
    cpu_total = {p: end[p] - start[p] for p in end}
    return {"samples": samples, "peak_rss": acct.peak_rss, "cpu_total": cpu_total,
            "idle_lag_buckets": idle}  # fmt: skip


async def _idle_lag(
    session: aiohttp.ClientSession, scenarios: list[Scenario], seconds: float
) -> list[tuple[str, float]]:
    """The first server's loop lag over ``seconds`` without requests: the noise floor
    of this machine (other processes preempting the server), to read the scenarios'
    lag against."""
    target = next((sc.target for sc in scenarios if sc.kind != "etcd_range"), None)
    if target is None or seconds <= 0:
        return []
    before = await _scrape(session, target)
    await asyncio.sleep(seconds)
    return lag_buckets(before, await _scrape(session, target))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m lab.bench_client SPEC.json OUT.json", file=sys.stderr)
        return 2
    spec = orjson.loads(Path(args[0]).read_bytes())
    out = asyncio.run(run(spec))
    Path(args[1]).write_bytes(orjson.dumps(out, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
