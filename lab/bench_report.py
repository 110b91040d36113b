"""The benchmark's numbers and how they are reported: pure functions over the samples.

:func:`summarize` turns the client's raw samples into per-scenario statistics;
:func:`targets` compares them with the project's targets; :func:`markdown`,
:func:`charts` and :func:`table` render them (report.md, PNGs, the terminal table).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lab import bench_crd, bench_storm_report

__all__ = [
    "SCENARIOS", "ScenarioStats", "Target", "bucket_max", "bucket_quantile", "charts",
    "markdown", "merge_buckets", "percentile", "summarize", "table", "targets",
]  # fmt: skip

# name -> (group, description). The report keeps this order.
SCENARIOS: dict[str, tuple[str, str]] = {
    "list_etcd": ("LIST all", "RV unset: quorum read from etcd"),
    "list_cache": ("LIST all", "RV=0: from the watch cache"),
    "list_consistent": ("LIST all", "RV unset, ConsistentListFromCache on, etcd revision moved"),
    "list_paginated": ("LIST all", "limit=500 pages, every one from etcd (a cache without "
                       "snapshots, ListFromCacheSnapshot=false)"),
    "paged_list_cache": ("LIST all", "limit=500 pages: the first from etcd (RV unset), "
                         "pages 2..N from the cache's snapshot (the cache had seen etcd's "
                         "revision: a pod changed first, untimed)"),
    "paged_list_consistent": ("LIST all", "limit=500 pages with ConsistentListFromCache: "
                              "every page from the cache (the same untimed change first)"),
    "field_etcd": ("fieldSelector", "spec.nodeName=X, RV unset: etcd full scan"),
    "field_cache_indexed": ("fieldSelector", "spec.nodeName=X, RV=0: cache, nodeName index"),
    "field_cache_noindex": ("fieldSelector", "spec.nodeName=X, RV=0: cache, no index"),
    "label_etcd": ("labelSelector", "app=web, RV unset: etcd"),
    "label_cache": ("labelSelector", "app=web, RV=0: cache"),
    "get_etcd": ("GET one", "RV unset: etcd"),
    "get_cache": ("GET one", "RV=0: cache"),
    "table_cache": ("as=Table", "kubectl get's Table of all pods, RV=0: cache"),
    "table_etcd": ("as=Table", "kubectl get's Table of all pods, RV unset: etcd"),
    "metadata_cache": ("metadata only", "PartialObjectMetadataList of all pods, RV=0: cache"),
    "yaml_cache": ("YAML", "Accept: application/yaml, all pods, RV=0: cache"),
    "floor_etcd_range": ("floors", "raw etcd Range of the prefix (etcdclient)"),
    "floor_bytes": ("floors", "same bytes as the cached LIST from a trivial handler"),
    "list_etcd_protobuf": ("protobuf", "LIST all, RV unset, as protobuf"),
    "list_cache_protobuf": ("protobuf", "LIST all, RV=0, as protobuf (pre-encoded items)"),
    "field_cache_indexed_protobuf": ("protobuf", "spec.nodeName=X, RV=0, as protobuf"),
    "floor_bytes_protobuf": ("protobuf", "same bytes as the protobuf cached LIST, trivially"),
    "list_cache_gzip": ("gzip", "LIST all, RV=0, Accept-Encoding: gzip (kept deflate segments)"),
    "list_etcd_gzip": ("gzip", "LIST all, RV unset, Accept-Encoding: gzip"),
    "table_cache_gzip": ("gzip", "kubectl get's Table with gzip (as kubectl asks), RV=0"),
    **bench_crd.SCENARIOS,  # the same LISTs on as many custom resources (cr_*)
}


def percentile(xs: list[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]; NaN for no data."""
    if not xs:
        return math.nan
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@dataclass
class ScenarioStats:
    name: str
    group: str
    description: str
    runs: int
    p50: float
    p90: float
    p99: float
    mean: float
    throughput: float  # sequential requests (or walks) per second
    nbytes: int
    requests: int
    status: int
    served_from: str | None
    fetched: int | None
    returned: int | None
    items: int | None
    server_cpu: float  # CPU seconds of the serving process per sample (mean)
    etcd_cpu: float  # CPU seconds of etcd per sample (mean)
    peak_rss: int  # peak RSS of the serving process over the whole run
    metrics: dict[str, float] | None = None  # counters moved by one request (/metrics)
    available: bool = True
    note: str = ""
    # the server's 10 ms ticker while this scenario ran (watchcache_event_loop_lag_seconds)
    lag_ticks: int = 0
    lag_p99: float = math.nan  # seconds, interpolated within the histogram's buckets
    lag_max: float = math.nan  # seconds: upper bound of the highest bucket reached
    readyz_p50: float = math.nan  # concurrent /readyz latency, for "readyz" scenarios
    readyz_max: float = math.nan


# /proc counts CPU time in 10 ms ticks: a scenario's per-request CPU is reported only
# when its runs together used enough ticks for the mean to mean something (±5%).
CPU_TICK_S = 0.01
CPU_MIN_TICKS = 20
OBJECTS_AXIS_FROM = 0.1


def cpu_measurable(s: dict[str, Any]) -> bool:
    """Whether a scenario's runs used at least CPU_MIN_TICKS ticks (server + etcd)."""
    total = (s["server_cpu"] + s["etcd_cpu"]) * s["runs"]
    return bool(total >= CPU_MIN_TICKS * CPU_TICK_S)


def _cpu_ms(s: dict[str, Any], key: str) -> str:
    """CPU ms per request, or ``< tick`` when the runs used too few ticks to say."""
    return f"{s[key] * 1000:.1f}" if cpu_measurable(s) else "< tick"


def summarize(
    raw: dict[str, Any], serving: dict[str, str], unavailable: dict[str, str] | None = None
) -> list[ScenarioStats]:
    """Per-scenario statistics from the client's output (warmup samples excluded);
    ``serving`` maps scenario -> accounted process; ``unavailable`` scenario -> why."""
    out: list[ScenarioStats] = []
    unavailable = unavailable or {}
    for name, (group, desc) in SCENARIOS.items():
        if name in unavailable:
            nan = math.nan
            out.append(ScenarioStats(name, group, desc, 0, nan, nan, nan, nan, 0.0, 0, 0, 0,
                                     None, None, None, None, 0.0, 0.0, 0, None, False,
                                     unavailable[name]))  # fmt: skip
            continue
        samples = raw["samples"].get(name)
        if not samples:
            continue
        timed = [s for s in samples if not s.get("warmup")] or samples
        secs = [s["seconds"] for s in timed]
        last = timed[-1]
        items = next((s["items"] for s in samples if s.get("items") is not None), None)
        proc = serving[name]
        mean = statistics.fmean(secs)
        out.append(ScenarioStats(
            name, group, desc, len(timed), percentile(secs, 50), percentile(secs, 90),
            percentile(secs, 99), mean, 1 / mean if mean > 0 else math.inf, last["nbytes"],
            last["requests"], last["status"], last["served_from"], last["fetched"],
            last["returned"], items,
            statistics.fmean(s["cpu"].get(proc, 0.0) for s in timed) if proc != "etcd" else 0.0,
            statistics.fmean(s["cpu"].get("etcd", 0.0) for s in timed),
            int(raw.get("peak_rss", {}).get(proc, 0)),
            next((s["metrics"] for s in samples if s.get("metrics")), None),
        ))  # fmt: skip
        _loop_stats(out[-1], timed)
    return out


def merge_buckets(samples: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """The samples' loop-lag buckets added up: ``[(le, cumulative count), ...]``."""
    total: dict[float, float] = {}
    for s in samples:
        for le, count in s.get("lag_buckets") or []:
            total[float(le)] = total.get(float(le), 0.0) + count
    return sorted(total.items())


def bucket_quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """Prometheus's ``histogram_quantile``: ``q`` in [0, 1] from cumulative buckets,
    linear within the bucket; the last finite bound if it falls in ``+Inf``."""
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return lower
            return lower + (le - lower) * ((rank - below) / (count - below) if count > below else 1)
        lower, below = le, count
    return lower


def bucket_max(buckets: list[tuple[float, float]]) -> float:
    """An upper bound of the largest observation: the first bound holding every count."""
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    return next(le for le, count in buckets if count >= buckets[-1][1])


def _loop_stats(stats: ScenarioStats, timed: list[dict[str, Any]]) -> None:
    buckets = merge_buckets(timed)
    if buckets:
        stats.lag_ticks = int(buckets[-1][1])
        stats.lag_p99 = bucket_quantile(buckets, 0.99)
        stats.lag_max = bucket_max(buckets)
    readyz = [x for s in timed for x in s.get("readyz") or []]
    if readyz:
        stats.readyz_p50, stats.readyz_max = percentile(readyz, 50), max(readyz)


@dataclass
class Target:
    name: str
    claim: str
    measured: float | None  # None: could not be measured in this run
    bound: float
    higher_is_better: bool

    @property
    def met(self) -> bool | None:
        if self.measured is None or math.isnan(self.measured):
            return None
        return self.measured >= self.bound if self.higher_is_better else self.measured <= self.bound

    def verdict(self) -> str:
        return {True: "met", False: "NOT met", None: "n/a"}[self.met]


def _p50(stats: list[ScenarioStats], name: str) -> float | None:
    for s in stats:
        if s.name == name and s.available and s.status == 200:
            return s.p50
    return None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None and b > 0 else None


def targets(stats: list[ScenarioStats]) -> list[Target]:
    """The project's targets (p50 ratios) against this run."""
    p = {s.name: _p50(stats, s.name) for s in stats}
    return [
        Target("rv0_speedup", "RV=0 LIST >= 20x faster than unset-RV LIST (p50)",
               _ratio(p.get("list_etcd"), p.get("list_cache")), 20, True),
        Target("index_speedup", "indexed RV=0 nodeName LIST >= 100x faster than the etcd scan",
               _ratio(p.get("field_etcd"), p.get("field_cache_indexed")), 100, True),
        Target("cache_vs_bytes_floor", "cached LIST within 2x of the bytes floor",
               _ratio(p.get("list_cache"), p.get("floor_bytes")), 2, False),
        Target("etcd_vs_range_floor", "unset-RV LIST within 3x of the raw etcd range",
               _ratio(p.get("list_etcd"), p.get("floor_etcd_range")), 3, False),
        Target("protobuf_vs_bytes_floor", "protobuf cached LIST within 1.5x of its bytes floor",
               _ratio(p.get("list_cache_protobuf"), p.get("floor_bytes_protobuf")), 1.5, False),
        Target("protobuf_bytes", "protobuf LIST bytes <= 0.75x JSON's",
               _ratio(_bytes(stats, "list_cache_protobuf"), _bytes(stats, "list_cache")), 0.75,
               False),
        # issue 18's: Table and gzip LISTs at the speed of the JSON LIST
        Target("table_cache", "Table LIST from the cache within 2x of the JSON LIST (p50)",
               _ratio(p.get("table_cache"), p.get("list_cache")), 2, False),
        Target("table_etcd", "Table LIST from etcd within 1.3x of the JSON LIST from etcd",
               _ratio(p.get("table_etcd"), p.get("list_etcd")), 1.3, False),
        Target("gzip_cache", "gzip LIST from the cache within 2x of the plain one (p50)",
               _ratio(p.get("list_cache_gzip"), p.get("list_cache")), 2, False),
        Target("gzip_bytes", "gzip LIST bytes <= 0.15x the plain LIST's",
               _ratio(_bytes(stats, "list_cache_gzip"), _bytes(stats, "list_cache")), 0.15,
               False),
    ]  # fmt: skip


def _bytes(stats: list[ScenarioStats], name: str) -> float | None:
    for s in stats:
        if s.name == name and s.available and s.status == 200:
            return float(s.nbytes)
    return None


def _ms(x: float) -> str:
    if math.isnan(x):
        return "-"
    return f"{x * 1000:.2f}" if x < 0.01 else f"{x * 1000:.1f}" if x < 1 else f"{x * 1000:.0f}"


def _kb(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MB"


def _opt(v: object) -> str:
    return "-" if v is None else str(v)


def markdown(results: dict[str, Any]) -> str:
    """report.md: the run's context, the targets, then every scenario."""
    meta = results["meta"]
    lines = [
        f"# watchcache benchmark — {meta['machine']}",
        "",
        f"- date: {meta['date']}",
        f"- etcd: {meta['etcd_version']} ({meta['etcd_members']} member(s), "
        f"binary: {meta['etcd_binary']})",
        f"- data: {meta['pods']} pods on {meta['nodes']} nodes, "
        f"{meta['pod_bytes_in_etcd']} bytes of pods in etcd",
        f"- runs per scenario: {meta['runs']} (+{meta['warmup']} warmup), interleaved, "
        "one client process, sequential requests over keep-alive HTTP",
        "- CPU per request: the serving process's and etcd's CPU time (/proc, 10 ms ticks) "
        "read around each request, averaged over the runs; `< tick` where all runs together "
        f"used fewer than {CPU_MIN_TICKS} ticks (too few requests to measure: raise --runs)",
        f"- watchcache {meta.get('commit', 'unknown')}"
        + (f" on the {meta['event_loop']} event loop" if "event_loop" in meta else "")
        + f", python {meta['python']}; "
        f"total time {meta['elapsed_s']:.0f} s",
        "- machine load (1-min load average) before / after: "
        + " / ".join(str(x) for x in meta.get("loadavg_1m", ["?"])),
        "",
    ]
    for note in meta.get("notes", []):
        lines.append(f"> {note}")
        lines.append("")
    for run in results["runs"]:
        lines += _run_markdown(run)
    if results.get("sweep"):
        lines += ["## Sweep", "", "p50 latency (ms) by pod count:", ""]
        ns = [r["pods"] for r in results["runs"]]
        lines.append("| scenario | " + " | ".join(str(n) for n in ns) + " |")
        lines.append("|---|" + "---:|" * len(ns))
        for name in SCENARIOS:
            row = []
            for r in results["runs"]:
                s = next((x for x in r["scenarios"] if x["name"] == name), None)
                row.append(_ms(s["p50"]) if s and s["available"] else "-")
            lines.append(f"| {name} | " + " | ".join(row) + " |")
        lines += ["", "![sweep](sweep.png)", ""]
    return "\n".join(lines) + "\n"


def _run_markdown(run: dict[str, Any]) -> list[str]:
    lines = [f"## {run['pods']} pods", "", "### Targets", "",
             "| target | measured | bound | verdict |", "|---|---:|---:|---|"]  # fmt: skip
    for t in run["targets"]:
        m = "-" if t["measured"] is None else f"{t['measured']:.2f}x"
        lines.append(f"| {t['claim']} | {m} | {t['bound']}x | {t['verdict']} |")
    ceiling = _ceiling(run)
    if ceiling is not None:
        lines += ["", f"A full LIST cannot beat the bytes floor: on this machine the RV=0 "
                      f"speed-up is bounded by p50(list_etcd) / p50(floor_bytes) = "
                      f"{ceiling:.1f}x (the client must still read every byte)."]
    lines += [
        "", "### Scenarios", "",
        "| scenario | what | p50 ms | p90 ms | p99 ms | req/s | bytes | requests | from | "
        "fetched | returned | server CPU ms/req | etcd CPU ms/req | server peak RSS |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    for s in run["scenarios"]:
        if not s["available"]:
            lines.append(f"| {s['name']} | {s['description']} | n/a: {s['note']} |"
                         + " |" * 11)  # fmt: skip
            continue
        lines.append(
            f"| {s['name']} | {s['description']} | {_ms(s['p50'])} | {_ms(s['p90'])} | "
            f"{_ms(s['p99'])} | {s['throughput']:.1f} | {_kb(s['nbytes'])} | {s['requests']} | "
            f"{_opt(s['served_from'])} | {_opt(s['fetched'])} | {_opt(s['returned'])} | "
            f"{_cpu_ms(s, 'server_cpu')} | {_cpu_ms(s, 'etcd_cpu')} | "
            f"{s['peak_rss'] / 2**20:.0f} MiB |"
        )
    lines += _metrics_markdown(run)
    lines += _lag_markdown(run)
    lines += _memory_markdown(run)
    raw = run.get("raw") or {}
    if raw.get("peak_rss"):
        lines += ["", "### Processes (whole measurement)", "",
                  "| process | CPU seconds | peak RSS |", "|---|---:|---:|"]  # fmt: skip
        for proc, rss in raw["peak_rss"].items():
            cpu = raw.get("cpu_total", {}).get(proc, math.nan)
            lines.append(f"| {proc} | {cpu:.2f} | {rss / 2**20:.0f} MiB |")
    tag = run["pods"]
    if run.get("relist_storm"):
        lines += bench_storm_report.markdown(run["relist_storm"], tag)
    lines += ["", f"![latency](latency-{tag}.png) ![fetched vs returned](objects-{tag}.png) "
              f"![cpu](cpu-{tag}.png)", ""]  # fmt: skip
    return lines


def _memory_markdown(run: dict[str, Any]) -> list[str]:
    """Memory per pod (issue 25 item 4) and the time to ready after a restart (item 5)."""
    mem = run.get("memory")
    if not mem:
        return []
    lines = ["", "### Memory per pod and restart", "",
             f"Pods of the `{mem.get('pod_size', 'default')}` size, seeded through "
             f"{mem.get('seed_via', 'api')}; the main server's RSS at its start (no pods): "
             f"{mem['empty_rss'] / 2**20:.0f} MiB.", "",
             "| when | RSS | growth | per pod | JSON per pod | growth / JSON | "
             "cache's count / JSON | history events | snapshots |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for when in ("after_writes", "after_restart"):
        g = mem.get(when)
        if g:
            lines.append(
                f"| {when.replace('_', ' ')} | {g['rss'] / 2**20:.0f} MiB | "
                f"{g['grown'] / 2**20:.0f} MiB | {g['per_pod']:.0f} B | "
                f"{g['json_per_pod']:.0f} B | {g['ratio']:.2f}x | {g['held_ratio']:.2f}x | "
                f"{g['history']} | {g['snapshots']} |")  # fmt: skip
    r = mem.get("restart")
    if r:
        primed = r.get("pods_primed_s")
        pods = "" if primed is None else f"the pods cache primed after {primed:.1f} s, "
        lines += ["", f"Restart on the same etcd: listening after {r['listening_s']:.1f} s, "
                      f"{pods}`/readyz` 200 (every watch cache primed) after "
                      f"{r['ready_s']:.1f} s."]  # fmt: skip
    return lines


def _ceiling(run: dict[str, Any]) -> float | None:
    p = {s["name"]: s["p50"] for s in run["scenarios"] if s["available"] and s["status"] == 200}
    if "list_etcd" in p and p.get("floor_bytes"):
        return float(p["list_etcd"] / p["floor_bytes"])
    return None


def _metrics_markdown(run: dict[str, Any]) -> list[str]:
    """What one request of each scenario moved in the server's /metrics."""
    rows = [s for s in run["scenarios"] if s.get("metrics")]
    if not rows:
        return []
    cols = ("storage_fetched", "storage_evaluated", "storage_returned", "cache_fetched",
            "cache_returned")  # fmt: skip
    lines = ["", "### Objects per request, from /metrics (kube-apiserver's counters)", "",
             "| scenario | " + " | ".join(f"apiserver_{c.split('_')[0]}_list_{c.split('_')[1]}"
                                         "_objects_total" for c in cols) + " |",
             "|---|" + "---:|" * len(cols)]  # fmt: skip
    for s in rows:
        lines.append(f"| {s['name']} | " + " | ".join(f"{s['metrics'].get(c, 0):.0f}"
                                                      for c in cols) + " |")  # fmt: skip
    return lines


def _lag_markdown(run: dict[str, Any]) -> list[str]:
    """Per scenario: how late the server's 10 ms ticker woke while it ran, and what a
    concurrent /readyz waited (a budget of ~20 ms per loop step)."""
    rows = [s for s in run["scenarios"] if s.get("lag_ticks")]
    if not rows:
        return []
    idle = merge_buckets([{"lag_buckets": (run.get("raw") or {}).get("idle_lag_buckets")}])
    lines = ["", "### Event loop lag (watchcache_event_loop_lag_seconds, a 10 ms ticker in "
             "the server; max is the upper bound of the highest histogram bucket reached)", "",
             "| scenario | ticks | lag p99 ms | lag max ms (<=) | concurrent /readyz p50 ms | "
             "/readyz max ms |", "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    if idle and idle[-1][1] > 0:
        lines.append(f"| (idle: no request) | {idle[-1][1]:.0f} | "
                     f"{_ms(bucket_quantile(idle, 0.99))} | {_ms(bucket_max(idle))} | - | - |")
    for s in rows:
        lines.append(f"| {s['name']} | {s['lag_ticks']} | {_ms(s['lag_p99'])} | "
                     f"{_ms(s['lag_max'])} | {_ms(s['readyz_p50'])} | {_ms(s['readyz_max'])} |")
    return lines


def charts(results: dict[str, Any], out: Path) -> list[Path]:
    """PNG charts (matplotlib, Agg): latency, fetched vs returned, CPU; a sweep plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    for run in results["runs"]:
        ok = [s for s in run["scenarios"] if s["available"] and s["status"] == 200]
        names = [s["name"] for s in ok]
        tag = run["pods"]

        fig, ax = plt.subplots(figsize=(10, 5))
        p50 = [s["p50"] * 1000 for s in ok]
        p99 = [s["p99"] * 1000 for s in ok]
        ax.barh(names, p99, color="#f4a582", label="p99")
        ax.barh(names, p50, color="#2166ac", label="p50")
        ax.set_xscale("log")
        ax.set_xlabel("latency (ms, log scale)")
        ax.set_title(f"watchcache: latency per scenario, {tag} pods")
        ax.invert_yaxis()
        ax.legend()
        fig.tight_layout()
        written.append(_save(fig, out / f"latency-{tag}.png"))

        sel = [s for s in ok if s["fetched"] is not None and s["returned"] is not None]
        fig, ax = plt.subplots(figsize=(10, 4))
        ys = range(len(sel))
        for dy, key, color in ((-0.2, "fetched", "#b2182b"), (0.2, "returned", "#4393c3")):
            values = [s[key] for s in sel]
            bars = ax.barh([y + dy for y in ys], [max(v, OBJECTS_AXIS_FROM) for v in values],
                           height=0.4, label=key, color=color)  # fmt: skip
            # a log axis makes 1 object a sliver next to 10,000: every bar says its count
            ax.bar_label(bars, labels=[str(v) for v in values], padding=2, fontsize=7)
        ax.set_yticks(list(ys), [s["name"] for s in sel])
        ax.set_xscale("log")
        ax.set_xlim(left=OBJECTS_AXIS_FROM)  # a decade below 1, so a bar of 1 is visible
        ax.set_xlabel("objects (log scale)")
        ax.set_title(f"objects fetched vs returned, {tag} pods")
        ax.invert_yaxis()
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))  # outside: it hid a bar
        fig.tight_layout()
        written.append(_save(fig, out / f"objects-{tag}.png"))

        fig, ax = plt.subplots(figsize=(10, 5))
        measured = [s for s in ok if cpu_measurable(s)]
        srv = [s["server_cpu"] * 1000 if cpu_measurable(s) else 0.0 for s in ok]
        etc = [s["etcd_cpu"] * 1000 if cpu_measurable(s) else 0.0 for s in ok]
        ax.barh(names, srv, color="#5e3c99", label="server")
        ax.barh(names, etc, left=srv, color="#e66101", label="etcd")
        for y, s in enumerate(ok):
            if not cpu_measurable(s):
                ax.text(0, y, f"  not measurable: < {CPU_MIN_TICKS} CPU ticks over "
                        f"{s['runs']} runs", va="center", fontsize=7, color="#555555")  # fmt: skip
        ax.set_xlabel("CPU ms per request")
        ax.set_title(f"CPU per request, {tag} pods"
                     + ("" if measured else " (too few requests to measure: raise --runs)"))
        ax.invert_yaxis()
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
        fig.tight_layout()
        written.append(_save(fig, out / f"cpu-{tag}.png"))
        if run.get("relist_storm"):
            written.append(bench_storm_report.chart(run["relist_storm"], out, tag))

    if results.get("sweep"):
        fig, ax = plt.subplots(figsize=(11, 6))
        ns = [r["pods"] for r in results["runs"]]
        cmap = plt.get_cmap("tab20")
        colors = [cmap(j) for j in range(20)]
        for i, name in enumerate(SCENARIOS):
            p50s: list[float] = []
            for r in results["runs"]:
                s = next((x for x in r["scenarios"] if x["name"] == name), None)
                p50s.append(s["p50"] * 1000 if s and s["available"] else math.nan)
            if not all(math.isnan(y) for y in p50s):
                style = "--" if name.startswith("floor") else "-"
                ax.plot(ns, p50s, style, marker="o", label=name, color=colors[i % len(colors)])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("pods")
        ax.set_ylabel("p50 latency (ms)")
        ax.set_title("how each scenario's cost grows with the object count")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
        fig.tight_layout()
        written.append(_save(fig, out / "sweep.png"))
    return written


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def table(run: dict[str, Any]) -> Any:
    """A rich Table of one run's scenarios."""
    from rich.table import Table

    t = Table(title=f"watchcache bench: {run['pods']} pods")
    for col in ("scenario", "p50 ms", "p99 ms", "req/s", "bytes", "from", "fetched",
                "returned", "srv CPU ms", "etcd CPU ms", "lag p99 ms", "lag max ms"):  # fmt: skip
        t.add_column(col, justify="left" if col in ("scenario", "from") else "right")
    for s in run["scenarios"]:
        if not s["available"]:
            t.add_row(s["name"], "n/a", "", "", "", s["note"][:30])
            continue
        t.add_row(s["name"], _ms(s["p50"]), _ms(s["p99"]), f"{s['throughput']:.1f}",
                  _kb(s["nbytes"]), _opt(s["served_from"]), _opt(s["fetched"]),
                  _opt(s["returned"]), f"{s['server_cpu'] * 1000:.1f}",
                  f"{s['etcd_cpu'] * 1000:.1f}", _ms(s.get("lag_p99", math.nan)),
                  _ms(s.get("lag_max", math.nan)))  # fmt: skip
    return t


def stats_dicts(stats: list[ScenarioStats]) -> list[dict[str, Any]]:
    return [asdict(s) for s in stats]


def target_dicts(ts: list[Target]) -> list[dict[str, Any]]:
    return [{**asdict(t), "met": t.met, "verdict": t.verdict()} for t in ts]
