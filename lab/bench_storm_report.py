"""The relist storm in report.md and as a plot (:mod:`lab.bench_storm` measures it):
pure functions over ``results.json``'s ``relist_storm``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["chart", "markdown"]

MIB = 2**20
COLUMNS = (
    "| K | round | all answered s | last 200 s | 200 | 429 | 504 | failed | served from "
    "| objects fetched | etcd sent MiB | server CPU s | peak cores | RSS MiB before → peak "
    "| etcd CPU s "
    "| light p50 / p99 / max ms |"
)
SEPARATOR = "|---:|---|" + "---:|" * 6 + "---|" + "---:|" * 4 + "---|---:|---|"
# (title, unit, the value of a round); the plot's panels
PANELS: tuple[tuple[str, str, str], ...] = (
    ("until all K are answered", "s", "elapsed"),
    ("answered 200 (the rest 429/504)", "agents", "ok"),
    ("bytes etcd sent", "MiB", "etcd_mib"),
    ("server CPU over the round", "CPU s", "server_cpu"),
    ("a light client's p99 meanwhile", "ms", "light_p99_ms"),
)


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.0f}"


def _num(x: float | None, fmt: str = ".1f") -> str:
    return "-" if x is None else format(x, fmt)


def _row(r: dict[str, Any]) -> str:
    codes = r["codes"]
    failed = sum(v for k, v in codes.items() if k not in ("200", "429", "504"))
    sent = None if r["etcd_sent_bytes"] is None else r["etcd_sent_bytes"] / MIB
    froms = ", ".join(f"{k} {v}" for k, v in sorted(r["served_from"].items())) or "-"
    return (f"| {r['agents']} | {r['round']} | {r['elapsed']:.1f} | {_num(r['last_ok'])} | "
            f"{codes.get('200', 0)} | "
            f"{codes.get('429', 0)} | {codes.get('504', 0)} | {failed} | {froms} | "
            f"{r['fetched']} | {_num(sent)} | {r['server_cpu']:.1f} | "
            f"{r['server_cores_peak']:.1f} | {r['rss_before'] / MIB:.0f} → "
            f"{r['rss_peak'] / MIB:.0f} | {r['etcd_cpu']:.1f} | "
            f"{_ms(r['light_p50'])} / {_ms(r['light_p99'])} / {_ms(r['light_max'])} |")  # fmt: skip


def markdown(storm: dict[str, Any], tag: int) -> list[str]:
    """The storm's section of one run (``tag``: its pod count, the plot's name)."""
    lines = ["", "### Relist storm (issue 25 §6)", "",
             f"K node agents relist their node's pods at once ({storm['connections']}, "
             f"impersonating system:node:<name>; {storm['nodes']} nodes seeded); "
             "`unset`: RV unset, etcd; `rv0`: RV=0, the cache's spec.nodeName index; "
             "`consistent`: RV unset with ConsistentListFromCache. etcd sent: etcd's "
             "etcd_network_client_grpc_sent_bytes_total over the round.", "",
             COLUMNS, SEPARATOR]  # fmt: skip
    for r in storm["rounds"]:
        lines.append(_row(r))
    return [*lines, "", f"![relist storm](storm-{tag}.png)", ""]


def _value(r: dict[str, Any], key: str) -> float:
    if key == "etcd_mib":
        return (r["etcd_sent_bytes"] or 0) / MIB
    if key == "ok":
        return float(r["codes"].get("200", 0))
    if key == "light_p99_ms":
        return (r["light_p99"] or 0) * 1000
    return float(r[key])


def chart(storm: dict[str, Any], out: Path, tag: int) -> Path:
    """``storm-<tag>.png``: per panel, the rounds side by side for every K."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rounds = storm["rounds"]
    names = list(dict.fromkeys(r["round"] for r in rounds))
    ks = list(dict.fromkeys(r["agents"] for r in rounds))
    colors = ("#b2182b", "#2166ac", "#1b7837")
    fig, axes = plt.subplots(1, len(PANELS), figsize=(20, 4))
    width = 0.8 / max(len(names), 1)
    for ax, (title, unit, key) in zip(axes, PANELS, strict=True):
        for j, name in enumerate(names):
            by_k = {r["agents"]: _value(r, key) for r in rounds if r["round"] == name}
            xs = [i + (j - (len(names) - 1) / 2) * width for i in range(len(ks))]
            bars = ax.bar(xs, [by_k.get(k, 0.0) for k in ks], width, label=name,
                          color=colors[j % len(colors)])  # fmt: skip
            ax.bar_label(bars, fmt="%.4g", fontsize=7, padding=1)
        ax.set_xticks(range(len(ks)), [f"K={k}" for k in ks])
        ax.set_ylabel(unit)
        ax.set_title(title, fontsize=10)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"relist storm: K kubelets list their node's pods at once ({tag} pods)")
    fig.tight_layout()
    path = out / f"storm-{tag}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
