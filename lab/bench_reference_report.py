"""The reference comparison's outputs: ``reference.json``, ``reference.md`` (side by
side, with ratios watchcache / reference) and ``reference-reads.png``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from lab.bench_reference_load import FLOOR

__all__ = ["markdown", "native_load", "write"]

MiB = 1024 * 1024


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.2f}" if x < 0.01 else f"{x * 1000:.1f}" if x < 1 else f"{x * 1000:.0f}"


def _size(n: float | None) -> str:
    if n is None:
        return "-"
    return f"{n / 1024:.1f} KB" if n < MiB else f"{n / MiB:.2f} MB"


def markdown(result: dict[str, Any]) -> str:
    meta = result["meta"]
    v = meta["reference_version"]
    lines = [
        f"Reference: `{v.get('gitVersion', '?')}` (major {v.get('major')}, minor "
        f"{v.get('minor')}, {v.get('goVersion', '?')}); {meta['pods']} pods on "
        f"{meta['nodes']} nodes in namespace `{meta['namespace']}` on each server; "
        f"{meta['runs']} interleaved runs after {meta['warmup']} warm-up; {meta['date']}; "
        f"{meta['cpus']} cores; {meta['elapsed_s']} s"
        + (f"; 1-minute load average {meta['loadavg_start'][0]:.1f} at the start, "
           f"{meta['loadavg_end'][0]:.1f} at the end" if "loadavg_start" in meta else "")
        + (f"; watchcache `--workers` {', '.join(map(str, meta['workers']))}"
           if "workers" in meta else "")
        + (f" on the {meta['event_loop']} event loop" if "event_loop" in meta else "")
        + (f"; each server on its own etcd {meta['etcd']}, feature gates at their defaults"
           if meta.get("etcd") else "") + ".",
        "",
        "| read | reference p50 ms | watchcache p50 ms | ratio | reference bytes "
        "| watchcache bytes | reference p99 | watchcache p99 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["reads"]:
        r, w = row["reference"], row["watchcache"]
        lines.append(f"| {row['name']} | {_ms(r['p50'])} | {_ms(w['p50'])} | "
                     f"{row['ratio']:.2f} | {_size(r['bytes'])} | {_size(w['bytes'])} | "
                     f"{_ms(r['p99'])} | {_ms(w['p99'])} |")  # fmt: skip
    if "native_load" in result:
        lines += native_load(result["native_load"])
    if result["load"]:
        lines += ["", "| concurrent GET RV=0 (Python client) | req/s | p50 ms | p99 ms "
                  "| server CPU (cores) |", "|---|---:|---:|---:|---:|"]  # fmt: skip
    for name, load in result["load"].items():
        cores = load["server_cpu_cores"]
        lines.append(f"| {name} ({load['connections']} connections, {load['seconds']} s) | "
                     f"{load['rps']:.0f} | {_ms(load['p50'])} | {_ms(load['p99'])} | "
                     f"{'-' if cores is None else f'{cores:.2f}'} |")  # fmt: skip
    lines += ["", "| watch fan-out, write ack to event | watchers x writes | events | p50 ms "
              "| p99 ms |", "|---|---:|---:|---:|---:|"]  # fmt: skip
    for name, f in result["fanout"].items():
        lines.append(f"| {name} | {f['watchers']} x {f['writes']} | {f['events']}/"
                     f"{f['expected']} | {_ms(f['p50'])} | {_ms(f['p99'])} |")  # fmt: skip
    m = result["memory"]
    lines += [
        "",
        f"Memory: the pods' JSON is {_size(m['json_bytes'])}; watchcache's RSS "
        f"{_size(m['watchcache_rss_after_writes'])} filled by the seeding writes, "
        f"{_size(m['watchcache_rss_after_restart'])} after a restart (primed by its "
        f"LIST); the reference's RSS {_size(m['reference_rss'])} (its whole process: "
        "every cache it holds, not only these pods).",
    ]
    for when in ("after_writes", "after_reads", "after_restart"):
        c = m.get(f"cache_{when}")
        if c:
            g = c["gc_pauses"]
            lines.append(
                f"- pods cache {when.replace('_', ' ')}: holds {_size(c['held_bytes'])} for "
                f"{_size(c['json_bytes'])} of JSON ({c['held_ratio']:.2f}x); GC pauses so "
                f"far: {g['count']:.0f}, {g['sum'] * 1000:.0f} ms in all, "
                f"{g['over_50ms']:.0f} over 50 ms.")  # fmt: skip
    return "\n".join(lines) + "\n"


def native_load(n: dict[str, Any]) -> list[str]:
    """The small requests through wrk: one row per scenario and server."""
    before, after = n["loadavg_before"][0], n["loadavg_after"][0]
    lines = ["", f"Small requests through a native client ({n['tool'].split(' [')[0]}, HTTPS, "
             f"bearer token; {n['rounds']} interleaved rounds of {n['seconds']:g} s per "
             f"server; medians over the rounds; 1-minute load average {before:.1f} before, "
             f"{after:.1f} after):", "",
             "| scenario | server | req/s | p50 ms | p99 ms | server CPU cores "
             "| server CPU ms/req | wrk CPU ms/req | errors | ratio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for row in n["scenarios"]:
        for name, x in row["servers"].items():
            ratio = row["ratios"].get(name)
            of = "p50" if row["ratio_of"] == "p50" else "req/s"
            cores, per = x["server_cpu_cores"], x["server_cpu_ms_per_request"]
            lines.append(
                f"| {row['name']} | {name} | {x['rps']:.0f} | {_ms(x['p50'])} | "
                f"{_ms(x['p99'])} | {'-' if cores is None else f'{cores:.2f}'} | "
                f"{'-' if per is None else f'{per:.3f}'} | "
                f"{x['client_cpu_ms_per_request']:.3f} | {x['errors']} | "
                f"{'-' if ratio is None else f'{ratio:.2f} ({of})'} |")  # fmt: skip
    if any(FLOOR in row["servers"] for row in n["scenarios"]):
        lines += ["", f"`{FLOOR}` is aiohttp answering the same pod's bytes to every GET over "
                  "the same TLS, on watchcache's event loop, with nothing of an API server "
                  "(no authentication, routing, cache or encoding): the least a request to a "
                  "Python aiohttp server costs here. Its ratio is the best any watchcache "
                  "could reach on this stack."]  # fmt: skip
    return lines


def write(result: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "reference.json").write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    (out / "reference.md").write_text(markdown(result))
    chart(result, out / "reference-reads.png")


def chart(result: dict[str, Any], path: Path) -> None:
    """p50 of each read on both servers, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["reads"]
    names = [r["name"] for r in rows]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["reference"]["p50"] * 1000 for r in rows], 0.4,
           label=_label(result["meta"]["reference_version"]))
    ax.bar([x + 0.2 for x in xs], [r["watchcache"]["p50"] * 1000 for r in rows], 0.4,
           label="watchcache")  # fmt: skip
    ax.set_yscale("log")
    ax.set_ylabel("p50 ms (log)")
    ax.set_xticks(list(xs), names, rotation=30, ha="right")
    ax.set_title(f"Reads of {result['meta']['pods']} pods, side by side")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _label(version: dict[str, Any]) -> str:
    """The reference's name for the legend ("$" would start matplotlib's math mode)."""
    text = f"kube-apiserver {version.get('major', '?')}.{version.get('minor', '?')}"
    return text.replace("$", r"\$")
