"""``watchcache bench --reference URL [--kubeconfig F]``: the same reads against any
kube-apiserver, side by side with a watchcache of the bench's own.

The bench starts its own etcd and ``watchcache serve``, then seeds the same pods
(:func:`lab.seed.pod`, N of them on ``--nodes`` nodes) into a namespace of its own,
``watchcache-bench-<random>``, on both servers (on the reference: first its ``default``
ServiceAccount, which pod admission needs when no controller manager makes it). Every
read scenario is then timed on both, interleaved (each round a new order of scenarios
and, within each, of the two servers), the body read in full and not parsed. Then:

- **load**: N connections asking one GET (RV=0) back to back for a fixed time:
  requests per second, p50/p99, and the server's CPU (when its process is on this
  machine: given by ``--reference-pid`` or found by its listening port);
- **watch fan-out**: W watchers of the namespace's pods, then K label patches one after
  the other: from the write's response to the event at each watcher, p50/p99;
- **memory**: watchcache's RSS after it was filled by the seeding writes, and after a
  restart (the cache primed by its LIST); the reference's RSS when its process is known.

Finally the namespace is emptied (pods deleted with ``gracePeriodSeconds=0``: no
kubelet confirms anything) and deleted, finalized by hand when no namespace controller
runs. Output: ``reference.json``, ``reference.md`` and ``reference-reads.png`` in
``--out``, with the reference's ``/version``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import gzip
import json
import os
import random
import secrets
import statistics
import subprocess
import tempfile
import time
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from lab import bench_native_load as native_load
from lab import seed
from lab.apiserver import APIServer
from lab.bench_endpoint import Endpoint, listening_pid, reference_endpoint
from lab.bench_native_load import tree_cpu, tree_rss
from lab.bench_reference_load import cache_memory, json_bytes, measure_fanout, start_floor
from lab.bench_report import percentile
from lab.etcd import EtcdCluster, free_port
from lab.kube_apiserver import KubeAPIServer, insecure_context
from lab.process import stop_process
from lab.wrk import find_wrk
from proxy.server.event_loop import default_name as default_event_loop

__all__ = ["Endpoint", "ReferenceConfig", "reference_endpoint", "run_reference"]

TABLE = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
         "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")  # kubectl's
PROTOBUF = "application/vnd.kubernetes.protobuf"


def shipped_event_loop() -> str:
    """The loop ``watchcache serve`` runs on without ``--event-loop`` (uvloop's when this
    machine has it, as the image does; asyncio's otherwise), named so the report says it."""
    return default_event_loop()


@dataclass
class ReferenceConfig:
    reference: str  # URL ("" = the kubeconfig's server); unused with reference_binary
    kubeconfig: Path | None = None
    # a kube-apiserver binary the bench starts itself (on its own etcd, with the token
    # it gives watchcache too), instead of reaching a running one
    reference_binary: Path | None = None
    # one watchcache per value, each `--workers N`: reads, fan-out and memory use the
    # first; the native load measures all of them
    workers: tuple[int, ...] = (1,)
    # the watchcaches' --event-loop: uvloop, as the image ships it, when it is installed
    event_loop: str = field(default_factory=shipped_event_loop)
    wrk: str | None = None  # wrk's path (None: found or fetched, lab.wrk)
    native_load: bool = True  # small requests through wrk (False: the Python client)
    load_rounds: int = 3
    reference_pid: int | None = None
    pods: int = 2000
    nodes: int = 20
    # "etcd": the pods are put straight into each server's etcd as kube-apiserver stores
    # them (lab.seed.put_pods), for 100,000 pods; needs an etcd the bench owns on both
    # sides (--reference-binary). "api": created through each server's API
    seed_via: str = "api"
    runs: int = 5
    warmup: int = 1
    connections: int = 16
    load_seconds: float = 5.0
    watchers: int = 20
    writes: int = 20
    out: Path = Path("bench-results")
    quiet: bool = False


def _pod(i: int, ns: str, nodes: int) -> dict[str, Any]:
    body = seed.pod(i, nodes, 1)
    body["metadata"]["namespace"] = ns
    return body


async def _seed(ep: Endpoint, ns: str, cfg: ReferenceConfig, etcd: list[str] | None,
                prefix: str = "/registry") -> None:  # fmt: skip
    """The namespace and its ``default`` ServiceAccount through the API, then the pods:
    through the API, or straight into ``etcd`` (the server's own, under its ``prefix``)
    when it is given (``seed_via=etcd``)."""
    async with ep.session() as s:
        for path, body in (("/api/v1/namespaces", {"metadata": {"name": ns}}),
                           (f"/api/v1/namespaces/{ns}/serviceaccounts",
                            {"metadata": {"name": "default"}})):  # fmt: skip
            async with s.post(ep.url + path, json=body) as r:
                if r.status not in (201, 409):
                    raise RuntimeError(f"{ep.name}: POST {path}: {r.status} {await r.text()}")
        if etcd is not None:
            await seed.put_pods(etcd, (_pod(i, ns, cfg.nodes) for i in range(cfg.pods)),
                                prefix=prefix)  # fmt: skip
            await _wait_for_pods(s, ep, ns, cfg)
            return
        items = (seed.Item("pods", f"/api/v1/namespaces/{ns}/pods", _pod(i, ns, cfg.nodes))
                 for i in range(cfg.pods))  # fmt: skip
        result = await seed.create_items(s, ep.url, items, concurrency=16)
        if not result.ok:
            raise RuntimeError(f"{ep.name}: seeding failed: {result.summary()} {result.errors}")


async def _wait_for_pods(s: aiohttp.ClientSession, ep: Endpoint, ns: str, cfg: ReferenceConfig
                         ) -> None:  # fmt: skip
    """Until the server's watch cache has taken in every pod put into its etcd: etcd's
    revision from a ``limit=1`` LIST (read from etcd), then a GET at that
    resourceVersion, which the cache answers once it has seen it (504 until then)."""
    pods = f"{ep.url}/api/v1/namespaces/{ns}/pods"
    async with s.get(f"{pods}?limit=1") as r:
        rv = (await r.json())["metadata"]["resourceVersion"]
    name = _pod(0, ns, cfg.nodes)["metadata"]["name"]
    for _ in range(120):
        async with s.get(f"{pods}/{name}?resourceVersion={rv}") as r:
            await r.read()
            if r.status == 200:
                return
        await asyncio.sleep(1)
    raise RuntimeError(f"{ep.name}: its cache did not reach resourceVersion {rv} in 120 s")


async def _cleanup(ep: Endpoint, ns: str) -> None:
    """Delete the pods at once (no kubelet), then the namespace; finalize it by hand
    when no namespace controller does (a bare kube-apiserver)."""
    async with ep.session() as s:
        base = f"{ep.url}/api/v1/namespaces/{ns}"
        async with s.delete(f"{base}/pods?gracePeriodSeconds=0") as r:
            await r.read()
        async with s.delete(base) as r:
            await r.read()
        for _ in range(50):
            async with s.get(base) as r:
                if r.status == 404:
                    return
                doc = await r.json()
            doc["spec"] = {"finalizers": []}
            async with s.put(f"{base}/finalize", json=doc) as r:
                await r.read()
            await asyncio.sleep(0.2)


def _reads(ns: str, pod: str) -> list[tuple[str, str, dict[str, str]]]:
    """(name, path, headers) of each read scenario, all within the bench namespace."""
    pods = f"/api/v1/namespaces/{ns}/pods"
    plain = {"Accept-Encoding": "identity"}
    gz = {"Accept-Encoding": "gzip"}
    return [
        ("list_cache", f"{pods}?resourceVersion=0", plain),
        ("list_etcd", pods, plain),
        ("table_cache", f"{pods}?resourceVersion=0", {**plain, "Accept": TABLE}),
        ("table_etcd", pods, {**plain, "Accept": TABLE}),
        ("list_cache_gzip", f"{pods}?resourceVersion=0", gz),
        # what `kubectl get pods` asks: a Table, gzip, RV unset, pages of 500 (its
        # --chunk-size default), every page followed
        ("table_gzip_kubectl", f"{pods}?limit=500", {**gz, "Accept": TABLE}),
        ("list_cache_protobuf", f"{pods}?resourceVersion=0", {**plain, "Accept": PROTOBUF}),
        ("field_cache", f"{pods}?fieldSelector=spec.nodeName%3D{seed.node_name(1)}"
                        "&resourceVersion=0", plain),
        ("get_etcd", f"{pods}/{pod}", plain),
        ("get_cache", f"{pods}/{pod}?resourceVersion=0", plain),
    ]  # fmt: skip


async def _time(s: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> tuple[float, int]:
    """One read, body read in full; a paged one (``limit=``) follows every ``continue``
    token as kubectl does. (seconds, bytes of every page.)"""
    t0, total, token = time.perf_counter(), 0, ""
    while True:
        page = url + (f"&continue={quote(token)}" if token else "")
        async with s.get(page, headers=headers) as r:
            body = await r.read()
            if r.status != 200:
                raise RuntimeError(f"GET {page}: {r.status} {body[:200]!r}")
            gzipped = r.headers.get("Content-Encoding") == "gzip"
        total += len(body)
        if "limit=" not in url:
            break
        token = continue_token(body, gzipped=gzipped)
        if not token:
            break
    return time.perf_counter() - t0, total


# A list's or Table's ListMeta comes right after its kind and apiVersion (Go's field
# order, on both servers): its first bytes hold the whole of it
_LIST_HEAD = 64 * 1024
_METADATA = b'"metadata":'


def continue_token(body: bytes, *, gzipped: bool) -> str:
    """The ``continue`` token of a list page, read from its ListMeta alone. Parsing the
    whole page to find it cost the bench's client 15-35 ms of Python per page of 500
    Table rows (each with its object's metadata), the same for both servers: time that
    is neither server's, and that flattened the paged ratio toward 1. Where the ListMeta
    is not at the head, the whole page is parsed."""
    if gzipped:
        head = zlib.decompressobj(wbits=31).decompress(body, _LIST_HEAD)
    else:
        head = body[:_LIST_HEAD]
    at = head.find(_METADATA)
    meta: Any = None
    if head[:1] == b"{" and at != -1 and b"{" not in head[1:at]:  # the top level's
        with contextlib.suppress(ValueError):  # the head's cut may split a character
            text = head[at + len(_METADATA):].decode(errors="ignore")
            meta, _ = json.JSONDecoder().raw_decode(text)
    if not isinstance(meta, dict):
        doc = orjson.loads(gzip.decompress(body) if gzipped else body)
        meta = doc.get("metadata") or {}
    token = meta.get("continue")
    return token if isinstance(token, str) else ""


async def measure_reads(eps: list[Endpoint], ns: str, cfg: ReferenceConfig) -> list[dict[str, Any]]:
    """Every read scenario on every endpoint, interleaved; p50/p99 and bytes."""
    scenarios = _reads(ns, seed.pod_name(0))
    samples: dict[tuple[str, str], list[float]] = {}
    sizes: dict[tuple[str, str], int] = {}
    sessions = {ep.name: ep.session(auto_decompress=False) for ep in eps}
    try:
        for rnd in range(cfg.warmup + cfg.runs):
            order = random.Random(rnd)
            for name, path, headers in order.sample(scenarios, len(scenarios)):
                for ep in order.sample(eps, len(eps)):
                    seconds, n = await _time(sessions[ep.name], ep.url + path, headers)
                    if rnd >= cfg.warmup:
                        samples.setdefault((name, ep.name), []).append(seconds)
                        sizes[(name, ep.name)] = n
    finally:
        for s in sessions.values():
            await s.close()
    rows = []
    for name, _, _ in scenarios:
        row: dict[str, Any] = {"name": name}
        for ep in eps:
            xs = samples[(name, ep.name)]
            row[ep.name] = {"p50": statistics.median(xs), "p99": percentile(xs, 99),
                            "bytes": sizes[(name, ep.name)]}  # fmt: skip
        row["ratio"] = row["watchcache"]["p50"] / row["reference"]["p50"]
        rows.append(row)
    return rows


def _cpu(pid: int | None) -> float | None:
    return tree_cpu(pid)


async def measure_load(ep: Endpoint, path: str, cfg: ReferenceConfig) -> dict[str, Any]:
    """``cfg.connections`` clients, each GETting ``path`` back to back for
    ``cfg.load_seconds``: req/s, p50/p99 latency, server CPU (cores) if known."""
    latencies: list[float] = []
    deadline = time.perf_counter() + cfg.load_seconds

    async def client(s: aiohttp.ClientSession) -> None:
        while time.perf_counter() < deadline:
            seconds, _ = await _time(s, ep.url + path, {"Accept-Encoding": "identity"})
            latencies.append(seconds)

    cpu0, t0 = _cpu(ep.pid), time.perf_counter()
    async with ep.session(limit=cfg.connections) as s:
        await asyncio.gather(*(client(s) for _ in range(cfg.connections)))
    elapsed, cpu1 = time.perf_counter() - t0, _cpu(ep.pid)
    cores = (cpu1 - cpu0) / elapsed if cpu0 is not None and cpu1 is not None else None
    return {"connections": cfg.connections, "seconds": round(elapsed, 2),
            "rps": len(latencies) / elapsed, "p50": statistics.median(latencies),
            "p99": percentile(latencies, 99), "server_cpu_cores": cores}  # fmt: skip


def _rss(pid: int | None) -> float | None:
    return tree_rss(pid)


def _watchcache(endpoints: list[str], work: Path, token: Path, workers: int, name: str,
                *, first: bool, event_loop: str = "asyncio") -> APIServer:  # fmt: skip
    """A watchcache as the reference is served: HTTPS with the same static token and
    RBAC. Only the first one keeps the ``kubernetes`` Service's endpoints (another on
    the same etcd would rewrite them and move etcd's revision past every watch cache)."""
    port = free_port()
    args: tuple[str, ...] = (
        f"--secure-port={port}", f"--cert-dir={work / name}", f"--token-auth-file={token}",
        "--authorization-mode=RBAC", f"--workers={workers}", "--log-level=warning",
        f"--event-loop={event_loop}")  # fmt: skip
    if not first:
        args += ("--endpoint-reconciler-type=none",)
    return APIServer(endpoints, extra_args=args, log_path=work / f"{name}.log").start()


def _endpoint(name: str, server: APIServer, token: str) -> Endpoint:
    return Endpoint(name, server.secure_url, {"Authorization": f"Bearer {token}"},
                    insecure_context(), server.pid)  # fmt: skip


@dataclass
class _Servers:
    """Everything the run started, stopped in reverse by ``close``."""

    clusters: list[EtcdCluster] = field(default_factory=list)
    watchcaches: list[APIServer] = field(default_factory=list)
    kube: KubeAPIServer | None = None
    floor: subprocess.Popen[bytes] | None = None

    def close(self) -> None:
        if self.floor is not None:
            stop_process(self.floor)
        for server in self.watchcaches:
            server.stop()
        if self.kube is not None:
            self.kube.stop()
        for cluster in self.clusters:
            cluster.stop()


def _reference(cfg: ReferenceConfig, work: Path, token: str, servers: _Servers) -> Endpoint:
    if cfg.reference_binary is None:
        ref = reference_endpoint(cfg.reference, cfg.kubeconfig, work)
        ref.pid = cfg.reference_pid or listening_pid(ref.url)
        return ref
    cluster = EtcdCluster(size=1).start()
    servers.clusters.append(cluster)
    servers.kube = KubeAPIServer(cfg.reference_binary, cluster.endpoints, work / "kube",
                                 work / "tokens.csv", token).start()  # fmt: skip
    return Endpoint("reference", servers.kube.url, {"Authorization": f"Bearer {token}"},
                    insecure_context(), servers.kube.pid)  # fmt: skip


def run_reference(cfg: ReferenceConfig) -> dict[str, Any]:
    """The whole comparison (see the module docstring); results also written to
    ``cfg.out``."""
    from rich.console import Console

    from lab import bench_reference_report as report

    if cfg.seed_via == "etcd" and cfg.reference_binary is None:
        raise SystemExit("--seed-via etcd needs --reference-binary: the bench writes into "
                         "the reference's etcd, which it owns only when it starts it")
    console = Console(highlight=False, quiet=cfg.quiet)
    cfg.out.mkdir(parents=True, exist_ok=True)
    ns = f"watchcache-bench-{uuid.uuid4().hex[:6]}"
    t_start, load_start = time.monotonic(), os.getloadavg()
    wrk = find_wrk(cfg.wrk) if cfg.native_load else None
    servers, ref = _Servers(), None
    with tempfile.TemporaryDirectory(prefix="watchcache-bench-ref-") as tmp:
        work, token = Path(tmp), secrets.token_hex(16)
        (work / "tokens.csv").write_text(f"{token},bench-admin,bench-admin,system:masters\n")
        try:
            ref = _reference(cfg, work, token, servers)
            cluster = EtcdCluster(size=1).start()
            servers.clusters.append(cluster)
            for i, n in enumerate(cfg.workers):
                servers.watchcaches.append(_watchcache(
                    cluster.endpoints, work, work / "tokens.csv", n,
                    "watchcache" if i == 0 else f"watchcache-w{n}", first=i == 0,
                    event_loop=cfg.event_loop))  # fmt: skip
            # the native load names each watchcache by its workers; the rest compares the
            # first one, "watchcache", with the reference
            loaded = [_endpoint(f"watchcache --workers {n}", server, token)
                      for n, server in zip(cfg.workers, servers.watchcaches, strict=True)]
            own = dataclasses.replace(loaded[0], name="watchcache")
            version = asyncio.run(_version(ref))
            console.print(f"reference {ref.url}: {version.get('gitVersion')}; namespace {ns}; "
                          f"seeding {cfg.pods} pods on each ...")  # fmt: skip
            direct = cfg.seed_via == "etcd"
            asyncio.run(_seed(own, ns, cfg, cluster.endpoints if direct else None))
            asyncio.run(_seed(ref, ns, cfg, servers.clusters[0].endpoints if direct else None))
            filled = _filled_by_writes(servers.watchcaches[0], own, ns)
            result = asyncio.run(_measure(cfg, [own, ref], ns, console, python_load=wrk is None))
            if wrk is not None:
                console.print(f"native load ({wrk.version().split()[1]}) ...")
                floor, servers.floor = start_floor(
                    own, native_load.pod_path(ns), work, work / "watchcache", cfg.event_loop)
                result["native_load"] = native_load.measure(
                    wrk, [ref, *loaded, floor], ns, connections=cfg.connections,
                    seconds=cfg.load_seconds, rounds=cfg.load_rounds, console=console)  # fmt: skip
            result["memory"] = {**filled, **_memory(cfg, servers, cluster, own, ref, ns, work,
                                                     token)}  # fmt: skip
        finally:
            if ref is not None and servers.kube is None:  # a reference of our own just stops
                with contextlib.suppress(Exception):
                    asyncio.run(_cleanup(ref, ns))
            servers.close()
    result["meta"] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "reference_url": ref.url, "reference_version": version, "namespace": ns,
        "reference_binary": str(cfg.reference_binary) if cfg.reference_binary else None,
        "pods": cfg.pods, "nodes": cfg.nodes, "seed_via": cfg.seed_via, "runs": cfg.runs,
        "warmup": cfg.warmup,
        "workers": list(cfg.workers), "event_loop": cfg.event_loop, "cpus": os.cpu_count(),
        # each server's own etcd (the reference's when the bench started it); gates:
        # the servers' defaults (neither is given --feature-gates)
        "etcd": servers.clusters[-1].version_string if servers.clusters else None,
        "feature_gates": "defaults",
        "elapsed_s": round(time.monotonic() - t_start, 1),
        "loadavg_start": load_start, "loadavg_end": os.getloadavg(),
        "reference_pid_known": ref.pid is not None,
    }  # fmt: skip
    report.write(result, cfg.out)
    console.print(report.markdown(result))
    return result


async def _version(ep: Endpoint) -> dict[str, Any]:
    async with ep.session() as s, s.get(ep.url + "/version") as r:
        version: dict[str, Any] = await r.json()
        return version


async def _measure(cfg: ReferenceConfig, eps: list[Endpoint], ns: str, console: Any,
                   *, python_load: bool) -> dict[str, Any]:  # fmt: skip
    console.print(f"reads: {len(_reads(ns, ''))} scenarios x {cfg.runs} runs, interleaved ...")
    reads = await measure_reads(eps, ns, cfg)
    get = f"/api/v1/namespaces/{ns}/pods/{seed.pod_name(0)}?resourceVersion=0"
    load = {}
    fanout = {}
    for ep in eps:
        console.print(f"watch fan-out on {ep.name} ...")
        if python_load:
            load[ep.name] = await measure_load(ep, get, cfg)
        fanout[ep.name] = await measure_fanout(ep, ns, watchers=cfg.watchers, writes=cfg.writes)
    return {"reads": reads, "load": load, "fanout": fanout}


def _filled_by_writes(server: APIServer, own: Endpoint, ns: str) -> dict[str, Any]:
    """watchcache's RSS and pods cache right after the seeding writes (before any read
    made Table rows, gzip segments or protobuf bytes)."""
    return {"json_bytes": asyncio.run(json_bytes(own, ns)),
            "watchcache_rss_after_writes": _rss(server.pid),
            "cache_after_writes": asyncio.run(cache_memory(own))}  # fmt: skip


def _memory(cfg: ReferenceConfig, servers: _Servers, cluster: EtcdCluster, own: Endpoint,
            ref: Endpoint, ns: str, work: Path, token: str) -> dict[str, Any]:  # fmt: skip
    """watchcache's pods cache after the reads, then RSS and cache after a restart
    (primed by its LIST, then one JSON LIST)."""
    after_reads = asyncio.run(cache_memory(own))
    servers.watchcaches[0].stop()
    fresh = _watchcache(cluster.endpoints, work, work / "tokens.csv", cfg.workers[0],
                        "watchcache-restarted", first=True, event_loop=cfg.event_loop)  # fmt: skip
    servers.watchcaches[0] = fresh
    own.url, own.pid = fresh.secure_url, fresh.pid
    asyncio.run(json_bytes(own, ns))  # the cache is primed; a LIST answered from it
    time.sleep(1)
    return {"watchcache_rss_after_restart": _rss(fresh.pid),
            "cache_after_reads": after_reads,
            "cache_after_restart": asyncio.run(cache_memory(own)),
            "reference_rss": _rss(ref.pid)}  # fmt: skip
