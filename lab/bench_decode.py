"""``watchcache bench-decode``: what decoding one stored value costs, protobuf against
JSON (issue 25 item 4's "protobuf decode within 2x of JSON's").

    watchcache bench-decode [--repeat 2000] [--rounds 7] [--out FILE]

The values are what the server stores: a pod of the bench (``lab.seed.pod``: labels,
a status with conditions, a projected service-account volume) with the metadata the
server sets, wrapped as kube-apiserver writes protobuf to etcd (``k8s\\0`` + Unknown),
and the same object as JSON. Also a small one (a Lease). Each is decoded ``--repeat``
times per round, JSON (``orjson.loads``) and protobuf (:mod:`storage.protobuf`, to the
same JSON object) alternating for ``--rounds`` rounds in one process; reported: the best
and the median round's time per decode and the ratio of the best. Both sides are
checked to decode to the same object first.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from lab import seed

__all__ = ["main", "measure", "values"]


def _pod() -> dict[str, Any]:
    pod = seed.pod(7, 20, 1)
    pod.setdefault("apiVersion", "v1")
    pod.setdefault("kind", "Pod")
    pod["metadata"].update({
        "namespace": "default", "uid": "0f0e0d0c-0b0a-0908-0706-050403020100",
        "resourceVersion": "12345", "creationTimestamp": "2026-12-02T04:00:00Z",
    })  # fmt: skip
    return pod


def _lease() -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "node-7", "namespace": "kube-node-lease",
                         "uid": "0f0e0d0c-0b0a-0908-0706-050403020101",
                         "resourceVersion": "12346",
                         "creationTimestamp": "2026-12-02T04:00:00Z"},
            "spec": {"holderIdentity": "node-7", "leaseDurationSeconds": 40,
                     "renewTime": "2026-12-02T04:05:00.000000Z"}}  # fmt: skip


def values() -> dict[str, dict[str, Any]]:
    return {"pod": _pod(), "lease": _lease()}


def _rounds(fn: Callable[[], object], repeat: int) -> float:
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def measure(repeat: int, rounds: int) -> dict[str, Any]:
    from storage.protobuf.serializer import get_serializer

    serializer = get_serializer()
    out: dict[str, Any] = {}
    for name, obj in values().items():
        js, pb = orjson.dumps(obj), serializer.encode(obj)
        if serializer.decode(pb) != orjson.loads(js):
            raise RuntimeError(f"{name}: protobuf and JSON decode to different objects")
        times: dict[str, list[float]] = {"json": [], "protobuf": []}
        for _ in range(rounds):  # interleaved: the machine's other work hits both
            times["json"].append(_rounds(functools.partial(orjson.loads, js), repeat))
            times["protobuf"].append(_rounds(functools.partial(serializer.decode, pb), repeat))
        out[name] = {"json_bytes": len(js), "protobuf_bytes": len(pb),
                     **{f"{k}_best_us": 1e6 * min(v) for k, v in times.items()},
                     **{f"{k}_median_us": 1e6 * statistics.median(v) for k, v in times.items()},
                     "ratio_best": min(times["protobuf"]) / min(times["json"])}  # fmt: skip
    return out


def table(results: dict[str, Any]) -> str:
    lines = ["| value | JSON bytes | protobuf bytes | JSON µs (best / median) "
             "| protobuf µs (best / median) | ratio |", "|---|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['json_bytes']} | {r['protobuf_bytes']} | "
                     f"{r['json_best_us']:.1f} / {r['json_median_us']:.1f} | "
                     f"{r['protobuf_best_us']:.1f} / {r['protobuf_median_us']:.1f} | "
                     f"{r['ratio_best']:.1f}x |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="watchcache bench-decode",
                                description=__doc__.split("\n\n")[0])  # fmt: skip
    p.add_argument("--repeat", type=int, default=2000, help="decodes per round (2000)")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds (7)")
    p.add_argument("--out", type=Path, default=None, help="also write the results as JSON")
    a = p.parse_args(argv)
    results = measure(a.repeat, a.rounds)
    print(table(results))
    if a.out is not None:
        a.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0
