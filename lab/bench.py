"""``watchcache bench``: what each kind of LIST costs, cached vs uncached, in one run.

    watchcache bench [--pods 10000 --nodes 100] [--runs K] [--out DIR]
                     [--server URL --etcd-servers URLS] [--sweep 1000,10000,50000] [--quick]
                     [--scenarios table_cache,yaml_cache,...] [--no-custom-resources]
    watchcache bench --reference URL [--kubeconfig F] [--pods 2000] [--out DIR]
    watchcache bench --reference-binary PATH [--workers 1,2] [--pods 2000] [--out DIR]

Self-contained unless ``--server`` is given: starts a real etcd and three servers on it
(the default one; one with ``ConsistentListFromCache``; one whose watch cache has no
``spec.nodeName`` index, when the server has that flag), seeds N pods, starts the bytes
floor, then runs every scenario K times, interleaved, from a separate client process
(:mod:`lab.bench_client`). Writes ``results.json``, ``report.md`` and PNG charts into
``--out`` and prints a table. ``--sweep`` grows the data set step by step and measures
at each size. ``--quick`` is a small run for CI (well under a minute). ``--scenarios``
measures only the named ones. Unless ``--no-custom-resources``, the LISTs also run on
as many custom resources as pods (:mod:`lab.bench_crd`, scenarios ``cr_*``). Every
scenario reports the server's event-loop lag while it ran
(``watchcache_event_loop_lag_seconds``); the Table, metadata-only and YAML LISTs also
how long a concurrent ``/readyz`` waited. ``concurrent_lists``
(:mod:`lab.bench_concurrency`, issue 23 §8) runs ``--lists`` LISTs of every pod at once
beside a light client and reports its latency, the loop lag and the RSS.
``relist_storm`` (:mod:`lab.bench_storm`, issue 25 §6) has ``--storm`` K node agents
relist their node's pods at once, RV unset, RV=0 and consistent from the cache.
``--reference`` instead runs the same reads side by side with any kube-apiserver
(:mod:`lab.bench_reference`).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import importlib.metadata
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import psutil  # type: ignore[import-untyped]

from lab import (
    bench_client,
    bench_concurrency,
    bench_crd,
    bench_managed_fields,
    bench_memory,
    bench_snapshots,
    bench_storm,
    seed,
)
from lab import bench_report as report
from lab.bench_topology import Topology, external, start_floor, start_own

__all__ = ["BenchConfig", "main", "run_bench"]

PAGE = 500  # kubectl's --chunk-size
TABLE_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
                "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")  # kubectl's
METADATA_ACCEPT = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
PROTOBUF = "application/vnd.kubernetes.protobuf"


@dataclass
class BenchConfig:
    pods: int = 10_000
    nodes: int = 100
    namespaces: int = 10
    runs: int = 10
    warmup: int = 1
    out: Path = Path("bench-results")
    server: str | None = None
    etcd_servers: list[str] = field(default_factory=list)
    sweep: list[int] = field(default_factory=list)
    scenarios: list[str] = field(default_factory=list)  # only these (all when empty)
    machine: str = ""
    quiet: bool = False
    managed_fields: bool = True  # also measure what managedFields cost (not in --quick)
    custom_resources: bool = True  # the LISTs on as many widgets (lab.bench_crd) too
    lists: int = 20  # concurrent_lists: how many LISTs of every pod at once (issue 23 §8)
    pod_size: str = "default"  # seed.POD_SIZES: ~4 KB or ~2 KB pods (issue 25 item 4)
    seed_via: str = "api"  # or "etcd": pods written straight into etcd (100,000 pods)
    restart: bool = True  # restart the main server at the end: memory and time to ready
    storm: list[int] = field(default_factory=lambda: [1000, 5000])  # relist_storm's K


def source_revision(root: Path | None = None) -> str:
    """What was measured: ``commit <sha>`` (with ``+dirty`` for local changes) in a git
    checkout; outside one (a container image, an installed copy) ``version <v>`` from
    ``WATCHCACHE_VERSION`` (``git describe`` at build time) or the package's version,
    with ``WATCHCACHE_COMMIT`` when the build set it (the image's default is ``unknown``).
    ``root``: the source tree (default: this checkout)."""
    root = root or Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        version = _build_arg("WATCHCACHE_VERSION") or package_version()
        commit = _build_arg("WATCHCACHE_COMMIT")
        return f"version {version}" + (f", commit {commit}" if commit else "")
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        rev = ""
    if not rev:
        return f"version {package_version()}"
    return f"commit {rev}" + ("+dirty" if dirty.strip() else "")


def _build_arg(name: str) -> str:
    value = os.environ.get(name, "")
    return "" if value in ("", "unknown") else value


def package_version() -> str:
    """The installed distribution's version (pyproject.toml's), or ``unknown``."""
    try:
        return importlib.metadata.version("watchcache")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def machine_label() -> str:
    mem = psutil.virtual_memory().total / 2**30
    return f"{os.cpu_count()} cores, {mem:.0f} GiB, {platform.system()} {platform.machine()}"


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, bytes]:
    async with session.get(url) as r:
        return r.status, await r.read()


async def _caught_up(s: aiohttp.ClientSession, url: str, rv: str, within: float = 120) -> None:
    """Wait until ``url``'s pods cache has reached ``rv``: an RV=N LIST waits up to 3 s
    server-side (then 504), so ask again until the cache is there."""
    deadline = time.monotonic() + within
    while True:
        status, _ = await _get(s, f"{url}/api/v1/namespaces/default/pods?resourceVersion={rv}")
        if status == 200:
            return
        if status not in (429, 504) or time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not catch up to rv {rv}: {status}")
        await asyncio.sleep(0.2)


async def _prepare(topo: Topology, cfg: BenchConfig, pods: int, pods_from: int) -> dict[str, Any]:
    """Seed pods [pods_from, pods); wait until every server's cache has them; return
    facts the scenarios need (a pod's name, the cached LIST body for the floor)."""
    # Namespaces and nodes are POSTed again at each sweep step: 409s, counted, harmless.
    plan = seed.Plan(pods, cfg.nodes, cfg.namespaces, 0, pods_from=pods_from,
                     pod_size=cfg.pod_size)  # fmt: skip
    direct = cfg.seed_via == "etcd"
    res = await seed.seed_with_progress(
        topo.main, plan.without_pods() if direct else plan, quiet=cfg.quiet)
    if not res.ok:
        raise RuntimeError(f"seeding failed: {res.summary()}; {res.errors}")
    if direct:
        await seed.seed_etcd(topo.etcd_endpoints, plan)
    pod = seed.pod(0, cfg.nodes, cfg.namespaces, cfg.pod_size)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as s:
        # the touched scenarios label this pod every round: labelled once before the
        # floor's bytes are taken, no round changes the LIST's size
        await bench_client.touch(s, topo.main + _pod_path(pod), 0)
        # The newest pod's revision, not etcd's: other writes (a compactor's key) move
        # etcd past it, and a pods cache on an etcd without progress notifications
        # never reaches a revision no pod event carried.
        rv = await _newest_pod_revision(topo, s)
        for url in (topo.main, topo.consistent, topo.noindex):
            if url:
                await _caught_up(s, url, rv, within=max(120.0, pods / 100))
        status, cached = await _get(s, topo.main + "/api/v1/pods?resourceVersion=0")
        if status != 200:
            raise RuntimeError(f"cached LIST failed: {status}")
        async with s.get(topo.main + "/api/v1/pods?resourceVersion=0",
                         headers={"Accept": PROTOBUF}) as r:  # fmt: skip
            cached_pb = await r.read() if r.status == 200 else b""
    return {"cached_body": cached, "cached_protobuf_body": cached_pb, "pod": pod}


async def _newest_pod_revision(topo: Topology, s: aiohttp.ClientSession) -> str:
    """The newest pod's mod revision: from etcd's keys (no values: 100,000 pods' JSON
    decoded in the client took GBs), else from a LIST through the server."""
    if topo.etcd_endpoints:
        from etcdclient import EtcdClient

        async with EtcdClient(topo.etcd_endpoints, request_timeout=120) as c:
            rng = await c.list_prefix(b"/registry/pods/", keys_only=True)
            return str(max(kv.mod_revision for kv in rng.kvs))
    _, body = await _get(s, topo.main + "/api/v1/pods")
    items = orjson.loads(body)["items"]
    return str(max(int(i["metadata"]["resourceVersion"]) for i in items))


def _memory_start(topo: Topology, cfg: BenchConfig) -> dict[str, Any]:
    """The main server's RSS before any pod (empty without the bench's own server)."""
    srv = topo.servers.get("server")
    if srv is None:
        return {}
    return {"empty_rss": bench_memory.rss(srv.pid), "pod_size": cfg.pod_size,
            "seed_via": cfg.seed_via}  # fmt: skip


def _memory_after_writes(topo: Topology, memory: dict[str, Any]) -> None:
    srv = topo.servers.get("server")
    if srv is not None and memory:
        cache = bench_memory.pods_cache(topo.main)
        memory["after_writes"] = bench_memory.growth(
            memory["empty_rss"], bench_memory.rss(srv.pid), cache)


def _memory_after_restart(topo: Topology, cfg: BenchConfig, memory: dict[str, Any],
                          console: Any) -> None:  # fmt: skip
    """Restart the main server (the last thing measured: its URL stays, its PID does
    not), time it to ready, and take its RSS once the priming's garbage settled."""
    srv = topo.servers.get("server")
    if srv is None or not cfg.restart:
        return
    console.print("restarting the main server ...")
    again, memory["restart"] = bench_memory.restart(srv)
    topo.stoppers.append(again.stop)
    topo.servers["server"] = again
    time.sleep(RESTART_SETTLE)
    memory["after_restart"] = bench_memory.growth(
        memory["empty_rss"], bench_memory.rss(again.pid), bench_memory.pods_cache(topo.main))


# seconds between a restarted server's /readyz and its RSS: the priming LIST's pages
# and decoded values are garbage by then
RESTART_SETTLE = 5.0


def _pod_path(pod: dict[str, Any]) -> str:
    return f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods/{pod['metadata']['name']}"


def page_size(pods: int) -> int:
    """kubectl's 500, or a quarter of a smaller data set (so --quick pages too)."""
    return PAGE if pods >= 4 * PAGE else max(1, pods // 4)


def _scenarios(topo: Topology, cfg: BenchConfig, pod: dict[str, Any],
               pods: int) -> list[dict[str, Any]]:  # fmt: skip
    node = seed.node_name(1 % cfg.nodes)
    fs = f"fieldSelector=spec.nodeName%3D{node}"
    ls = "labelSelector=app%3Dweb"
    one = _pod_path(pod)
    m = topo.main
    pages = f"/api/v1/pods?limit={page_size(pods)}"
    # pages from etcd: the server without snapshots (or, against --server, the one given)
    etcd_pages = (topo.noindex, "server-noindex") if topo.noindex else (m, "server")
    sc: list[tuple[str, str, str, str]] = [
        ("list_etcd", "http", f"{m}/api/v1/pods", "server"),
        ("list_cache", "http", f"{m}/api/v1/pods?resourceVersion=0", "server"),
        ("list_consistent", "http", f"{topo.consistent}/api/v1/pods", "server-consistent"),
        ("list_paginated", "paginate", f"{etcd_pages[0]}{pages}", etcd_pages[1]),
        ("paged_list_cache", "paginate", f"{m}{pages}", "server"),
        ("paged_list_consistent", "paginate", f"{topo.consistent}{pages}", "server-consistent"),
        ("field_etcd", "http", f"{m}/api/v1/pods?{fs}", "server"),
        ("field_cache_indexed", "http", f"{m}/api/v1/pods?{fs}&resourceVersion=0", "server"),
        ("field_cache_noindex", "http", f"{topo.noindex}/api/v1/pods?{fs}&resourceVersion=0",
         "server-noindex"),
        ("label_etcd", "http", f"{m}/api/v1/pods?{ls}", "server"),
        ("label_cache", "http", f"{m}/api/v1/pods?{ls}&resourceVersion=0", "server"),
        ("get_etcd", "http", f"{m}{one}", "server"),
        ("get_cache", "http", f"{m}{one}?resourceVersion=0", "server"),
        ("floor_etcd_range", "etcd_range", "/registry/pods/", "etcd"),
        ("floor_bytes", "http", f"{topo.floor}/api/v1/pods", "floor"),
        # the same LISTs as application/vnd.kubernetes.protobuf
        ("list_etcd_protobuf", "http", f"{m}/api/v1/pods", "server"),
        ("list_cache_protobuf", "http", f"{m}/api/v1/pods?resourceVersion=0", "server"),
        ("field_cache_indexed_protobuf", "http", f"{m}/api/v1/pods?{fs}&resourceVersion=0",
         "server"),
        ("floor_bytes_protobuf", "http", f"{topo.floor}/api/v1/pods", "floor"),
        # converted LISTs, with /readyz probed meanwhile (how long they hold the loop)
        ("table_cache", "http", f"{m}/api/v1/pods?resourceVersion=0", "server"),
        ("table_etcd", "http", f"{m}/api/v1/pods", "server"),
        ("metadata_cache", "http", f"{m}/api/v1/pods?resourceVersion=0", "server"),
        ("yaml_cache", "http", f"{m}/api/v1/pods?resourceVersion=0", "server"),
        # what a Go client (kubectl) gets: it asks for gzip (APIResponseCompression)
        ("list_cache_gzip", "http", f"{m}/api/v1/pods?resourceVersion=0", "server"),
        ("list_etcd_gzip", "http", f"{m}/api/v1/pods", "server"),
        ("table_cache_gzip", "http", f"{m}/api/v1/pods?resourceVersion=0", "server"),
    ]  # fmt: skip
    converted = {"table_cache": TABLE_ACCEPT, "table_etcd": TABLE_ACCEPT,
                 "metadata_cache": METADATA_ACCEPT, "yaml_cache": "application/yaml"}
    if cfg.custom_resources:
        sc += bench_crd.scenarios(m, topo.noindex)
        converted.update(dict.fromkeys(bench_crd.TABLE, TABLE_ACCEPT))
    accept = {**converted, **{n: PROTOBUF for n, *_ in sc if n.endswith("_protobuf")},
              "table_cache_gzip": TABLE_ACCEPT}  # fmt: skip
    touch = {"paged_list_cache": m + one, "paged_list_consistent": f"{topo.consistent}{one}"}
    return [{"name": n, "kind": k, "target": t, "serving": p, "churn": n == "list_consistent",
             "touch": touch.get(n, ""),
             "headers": request_headers(n, accept.get(n)), "readyz": n in converted,
             "resource": bench_crd.RESOURCE if n in bench_crd.SCENARIOS else "pods"}
            for n, k, t, p in sc
            if n not in topo.unavailable and (not cfg.scenarios or n in cfg.scenarios)]  # fmt: skip


def request_headers(name: str, accept: str | None) -> dict[str, str]:
    """A scenario's headers: its ``Accept``, and ``Accept-Encoding`` gzip for the
    ``*_gzip`` scenarios, identity for the others (aiohttp would ask for gzip)."""
    headers = {"Accept-Encoding": "gzip" if name.endswith("_gzip") else "identity"}
    if accept:
        headers["Accept"] = accept
    return headers


def _measure(topo: Topology, cfg: BenchConfig, scenarios: list[dict[str, Any]],
             workdir: Path, pods: int) -> dict[str, Any]:  # fmt: skip
    spec = {
        "runs": cfg.runs, "warmup": cfg.warmup, "scenarios": scenarios,
        "etcd_endpoints": topo.etcd_endpoints,
        "processes": {k: v for k, v in topo.processes.items() if v},
    }  # fmt: skip
    spec_path, out_path = workdir / f"spec-{pods}.json", workdir / f"samples-{pods}.json"
    spec_path.write_bytes(orjson.dumps(spec))
    subprocess.run([sys.executable, "-m", "lab.bench_client", str(spec_path), str(out_path)],
                   check=True)  # fmt: skip
    raw: dict[str, Any] = orjson.loads(out_path.read_bytes())
    return raw


async def _pod_bytes(endpoints: list[str]) -> int:
    from etcdclient import EtcdClient

    async with EtcdClient(endpoints) as c:
        rng = await c.list_prefix(b"/registry/pods/")
        return sum(len(kv.value) for kv in rng.kvs)


async def _etcd_version(endpoints: list[str]) -> str:
    from etcdclient import EtcdClient

    async with EtcdClient(endpoints) as c:
        return (await c.status()).version


def run_bench(cfg: BenchConfig) -> dict[str, Any]:
    """Run the whole benchmark; returns the results (also written to ``cfg.out``)."""
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True, quiet=cfg.quiet)
    t0 = time.monotonic()
    load_before = os.getloadavg()[0]
    cfg.out.mkdir(parents=True, exist_ok=True)
    sizes = sorted(set(cfg.sweep)) if cfg.sweep else [cfg.pods]
    with tempfile.TemporaryDirectory(prefix="watchcache-bench-") as tmp:
        workdir = Path(tmp)
        topo = (start_own(workdir, custom_resources=cfg.custom_resources) if cfg.server is None
                else external(cfg.server, cfg.etcd_servers))
        if cfg.custom_resources:
            topo.unavailable.update(bench_crd.unavailable(topo.unavailable, cfg.server is not None))
        try:
            if cfg.server is not None and cfg.etcd_servers:
                topo.etcd_version = asyncio.run(_etcd_version(cfg.etcd_servers))
            runs: list[dict[str, Any]] = []
            done = 0
            memory = _memory_start(topo, cfg)
            for n in sizes:
                console.print(f"seeding pods {done}..{n} ...")
                facts = asyncio.run(_prepare(topo, cfg, n, done))
                _memory_after_writes(topo, memory)
                if cfg.custom_resources:
                    console.print(f"seeding widgets {done}..{n} ...")
                    caches = [u for u in (topo.main, topo.noindex) if u]
                    asyncio.run(bench_crd.prepare(topo.main, caches, n, done, cfg.namespaces))
                done = n
                if topo.floor is not None:
                    topo.stoppers.pop()()  # the floor serves fixed bytes: this size's
                start_floor(topo, facts["cached_body"], facts["cached_protobuf_body"], workdir)
                scenarios = _scenarios(topo, cfg, facts["pod"], n)
                console.print(f"measuring {len(scenarios)} scenarios x {cfg.runs} runs "
                              f"at {n} pods ...")  # fmt: skip
                raw = _measure(topo, cfg, scenarios, workdir, n)
                serving = {s["name"]: s["serving"] for s in scenarios}
                stats = report.summarize(raw, serving, topo.unavailable)
                runs.append({"pods": n, "scenarios": report.stats_dicts(stats),
                             "targets": report.target_dicts(report.targets(stats)),
                             "raw": raw})  # fmt: skip
                if not cfg.scenarios or "paged_list_cache" in cfg.scenarios:
                    pids = topo.processes.get("server", [])
                    snaps = asyncio.run(bench_snapshots.measure(topo.main, pids, min(n // 2, 2000)))
                    runs[-1]["snapshots"] = snaps
                    topo.notes.append(f"At {n} pods: {bench_snapshots.describe(snaps)}")
                if not cfg.scenarios or "concurrent_lists" in cfg.scenarios:
                    pids = topo.processes.get("server", [])
                    conc = asyncio.run(bench_concurrency.measure(
                        topo.main, pids, cfg.lists, within=max(120.0, n / 200)))
                    runs[-1]["concurrency"] = conc
                    topo.notes.append(f"At {n} pods: {bench_concurrency.describe(conc)}")
                if cfg.server is not None and "relist_storm" in cfg.scenarios:
                    topo.notes.append("relist_storm: not measured — it starts servers of its "
                                      "own on the bench's etcd (no --server).")
                elif cfg.server is None and (not cfg.scenarios or "relist_storm" in cfg.scenarios):
                    storm = bench_storm.measure(topo.etcd_endpoints, topo.processes["etcd"],
                                                cfg.storm, cfg.nodes, workdir)
                    runs[-1]["relist_storm"] = storm
                    topo.notes.append(f"At {n} pods: {bench_storm.describe(storm)}")
                if cfg.managed_fields and (not cfg.scenarios or "managed_fields" in cfg.scenarios):
                    few = max(10, min(50, n // 20))
                    mf = asyncio.run(bench_managed_fields.measure(topo.main, few, rounds=2))
                    runs[-1]["managed_fields"] = mf
                    topo.notes.append(f"At {n} pods: {bench_managed_fields.describe(mf)}")
            if memory:
                _memory_after_restart(topo, cfg, memory, console)
                runs[-1]["memory"] = memory
            pod_bytes = asyncio.run(_pod_bytes(topo.etcd_endpoints)) if topo.etcd_endpoints else 0
        finally:
            topo.stop()
    notes: list[str] = list(topo.notes)
    for run in runs:
        cons = next((s for s in run["scenarios"] if s["name"] == "list_consistent"), None)
        if cons and cons["available"] and cons["served_from"] != "cache":
            notes.append(
                f"At {run['pods']} pods the consistent read was served from "
                f"{cons['served_from']}, not the cache: ConsistentListFromCache fell back "
                f"(etcd {topo.etcd_version} lacks the progress-notification fixes; run with "
                "ETCD_BIN=.cache/etcd/3.5.16/usr/bin/etcd).")
    for name, why in topo.unavailable.items():
        notes.append(f"{name}: not measured — {why}.")
    results = {
        "meta": {
            "machine": cfg.machine or machine_label(),
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "etcd_version": topo.etcd_version, "etcd_binary": topo.etcd_binary,
            "etcd_members": topo.etcd_members, "pods": sizes[-1], "nodes": cfg.nodes,
            "namespaces": cfg.namespaces, "runs": cfg.runs, "warmup": cfg.warmup,
            "python": platform.python_version(), "elapsed_s": time.monotonic() - t0,
            "commit": source_revision(),
            **({"event_loop": topo.servers["server"].event_loop} if "server" in topo.servers
               else {}),
            "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "pod_bytes_in_etcd": pod_bytes, "notes": notes,
        },
        "sweep": bool(cfg.sweep),
        "runs": runs,
    }  # fmt: skip
    write_outputs(results, cfg.out)
    wide = Console(highlight=False, width=max(console.width, 150), quiet=cfg.quiet)
    for run in runs:
        wide.print(report.table(run))
        for t in run["targets"]:
            m = "-" if t["measured"] is None else f"{t['measured']:.1f}x"
            console.print(f"  {t['verdict']:<8} {t['claim']}: {m}")
    for note in notes:
        console.print(f"[yellow]note:[/yellow] {note}")
    console.print(f"wrote {cfg.out}/results.json, report.md and charts")
    return results


def write_outputs(results: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_bytes(
        orjson.dumps(results, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    report.charts(results, out)
    (out / "report.md").write_text(report.markdown(results))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="watchcache bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=None, help="pods (default 10000; quick 300)")
    p.add_argument("--nodes", type=int, default=None, help="nodes (default 100; quick 10)")
    p.add_argument("--namespaces", type=int, default=10)
    p.add_argument("--runs", type=int, default=None, help="runs per scenario (default 10)")
    p.add_argument("--out", type=Path, default=Path("bench-results"),
                   help="directory for results.json, report.md and the charts "
                   "(default bench-results)")  # fmt: skip
    p.add_argument("--server", default=None, help="measure this server instead of starting one")
    p.add_argument("--etcd-servers", default="", help="its etcd (for the raw range floor)")
    p.add_argument("--sweep", default="", help="comma-separated pod counts, e.g. 1000,10000")
    p.add_argument("--quick", action="store_true", help="small and fast, for CI")
    p.add_argument("--scenarios", default="", help="comma-separated scenario names (all)")
    p.add_argument("--custom-resources", action=argparse.BooleanOptionalAction, default=True,
                   help="also run the LISTs on as many custom resources (default: on)")
    p.add_argument("--lists", type=int, default=None,
                   help="concurrent_lists: LISTs of every pod at once (default 20; quick 4)")
    p.add_argument("--pod-size", choices=seed.POD_SIZES, default="default",
                   help="the seeded pods: default (~4 KB stored) or small (~2 KB)")
    p.add_argument("--seed-via", choices=("api", "etcd"), default="api",
                   help="pods through the API (default) or written straight into etcd "
                   "as the server stores them (fast: for --pods 100000)")  # fmt: skip
    p.add_argument("--restart", action=argparse.BooleanOptionalAction, default=True,
                   help="restart the main server at the end: its time to ready and its "
                   "memory per pod primed by a LIST (default: on)")  # fmt: skip
    p.add_argument("--storm", default=None, metavar="K[,K...]",
                   help="relist_storm: node agents relisting at once, one round set per K "
                   "(default 1000,5000; quick 20); with --scenarios relist_storm and no "
                   "--nodes, max(K) nodes are seeded so each agent has a node of its own")
    p.add_argument("--machine", default="", help="label for the report (default: detected)")
    p.add_argument("--quiet", action="store_true")
    ref = p.add_argument_group("side by side with a kube-apiserver (lab.bench_reference)")
    ref.add_argument("--reference", default=None, metavar="URL",
                     help="compare with this kube-apiserver ('' with --kubeconfig: its server)")
    ref.add_argument("--kubeconfig", type=Path, default=None,
                     help="credentials and TLS for --reference (current context)")
    ref.add_argument("--reference-pid", type=int, default=None,
                     help="the reference's process, for its CPU and RSS (default: found "
                     "by its port when local)")
    ref.add_argument("--reference-binary", type=Path, default=None, metavar="PATH",
                     help="start this kube-apiserver binary (on an etcd of its own, HTTPS, "
                     "the bench's token) as the reference instead of reaching --reference")
    ref.add_argument("--workers", default="1", metavar="N[,N...]",
                     help="one watchcache per value, each `serve --workers N`; the native "
                     "load measures each (default 1)")
    ref.add_argument("--event-loop", choices=("asyncio", "uvloop"), default=None,
                     help="the watchcaches' --event-loop (default: uvloop, as the image "
                     "serves, when it is installed; else asyncio)")
    ref.add_argument("--wrk", default=None, metavar="PATH",
                     help="the native load generator (default: wrk on PATH, or Debian's "
                     "fetched into the cache)")
    ref.add_argument("--load-generator", choices=("wrk", "python"), default="wrk",
                     help="small requests through wrk (default) or the Python client")
    ref.add_argument("--connections", type=int, default=16, help="load: connections (16)")
    ref.add_argument("--load-seconds", type=float, default=5.0,
                     help="load: seconds per run (5)")
    ref.add_argument("--load-rounds", type=int, default=3,
                     help="native load: interleaved rounds (3)")
    ref.add_argument("--watchers", type=int, default=20, help="fan-out: watchers (20)")
    ref.add_argument("--writes", type=int, default=20, help="fan-out: writes (20)")
    return p


def _run_reference(a: argparse.Namespace, quick: bool) -> int:
    from lab.bench_reference import ReferenceConfig, run_reference, shipped_event_loop

    run_reference(ReferenceConfig(
        reference=a.reference or "", kubeconfig=a.kubeconfig, reference_pid=a.reference_pid,
        reference_binary=a.reference_binary,
        workers=tuple(int(n) for n in a.workers.split(",") if n.strip()) or (1,),
        wrk=a.wrk, native_load=a.load_generator == "wrk",
        event_loop=a.event_loop or shipped_event_loop(),
        load_rounds=1 if quick else a.load_rounds,
        pods=a.pods or (100 if quick else 2000), nodes=a.nodes or (5 if quick else 20),
        seed_via=a.seed_via, runs=a.runs or (2 if quick else 5), connections=a.connections,
        load_seconds=1.0 if quick else a.load_seconds, watchers=a.watchers, writes=a.writes,
        out=a.out, quiet=a.quiet,
    ))  # fmt: skip
    return 0


def main(argv: list[str]) -> int:
    p = build_parser()
    a = p.parse_args(argv)
    quick = a.quick
    if a.reference is not None or a.reference_binary is not None:
        return _run_reference(a, quick)
    storm = [int(k) for k in (a.storm or ("20" if quick else "1000,5000")).split(",") if k]
    nodes = a.nodes or (10 if quick else 100)
    if a.nodes is None and "relist_storm" in a.scenarios.split(","):
        nodes = max(nodes, *storm)  # a node of its own for each agent (bench_storm)
    cfg = BenchConfig(
        pods=a.pods or (300 if quick else 10_000), nodes=nodes, storm=storm,
        namespaces=a.namespaces, runs=a.runs or (3 if quick else 10), out=a.out,
        server=a.server, machine=a.machine, quiet=a.quiet, managed_fields=not quick,
        custom_resources=a.custom_resources,
        etcd_servers=[u for u in a.etcd_servers.split(",") if u],
        sweep=[int(x) for x in a.sweep.split(",") if x.strip()],
        lists=a.lists or (4 if quick else 20), pod_size=a.pod_size, seed_via=a.seed_via,
        restart=a.restart,
        scenarios=[x.strip() for x in a.scenarios.split(",") if x.strip()],
    )  # fmt: skip
    if cfg.pods < 1 or cfg.nodes < 1 or cfg.runs < 1:
        p.error("--pods, --nodes and --runs must be >= 1")
    if cfg.server and cfg.sweep:
        p.error("--sweep needs the bench's own server (no --server)")
    run_bench(cfg)
    return 0
