"""PodMetrics and NodeMetrics of ``metrics.k8s.io/v1beta1`` (metrics-server's API, what
``kubectl top`` reads), computed from pods.

The lab's pods run nothing, so "usage" is simulated, deterministically: each running
container uses a share of its requests (else of a small default) that depends on the
pod's uid and the current 30-second window, so two reads in one window agree and the
numbers move over time, as metrics-server's samples do. A node's usage is the sum over
its running pods. Pure functions, no I/O.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from typing import Any

__all__ = [
    "GROUP",
    "NODE_KIND",
    "POD_KIND",
    "RESOURCES",
    "VERSION",
    "node_metrics",
    "pod_metrics",
    "table",
]

JSON = dict[str, Any]
GROUP = "metrics.k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
POD_KIND, NODE_KIND = "PodMetrics", "NodeMetrics"
WINDOW_SECONDS = 30
# plural -> (kind, namespaced, short names): metrics-server's resources are named as the
# objects they measure (``/apis/metrics.k8s.io/v1beta1/namespaces/NS/pods``); kubectl
# also finds them as ``podmetrics`` and ``nodemetrics`` (the kinds, lowercased)
RESOURCES: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "pods": (POD_KIND, True, ()),
    "nodes": (NODE_KIND, False, ()),
}


def _timestamp(now: dt.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cpu_millis(value: object) -> int:
    text = str(value or "")
    if not text:
        return 100
    if text.endswith("m"):
        return int(float(text[:-1]))
    return int(float(text) * 1000)


_MEMORY_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "K": 10**3, "M": 10**6, "G": 10**9}


def _memory_bytes(value: object) -> int:
    text = str(value or "")
    if not text:
        return 64 * 2**20
    for suffix, scale in _MEMORY_UNITS.items():
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * scale)
    return int(float(text))


def _share(uid: str, container: str, now: dt.datetime) -> float:
    """A fraction in [0.2, 1.0) fixed for one uid, container and 30-second window."""
    window = int(now.timestamp()) // WINDOW_SECONDS
    digest = hashlib.sha256(f"{uid}/{container}/{window}".encode()).digest()
    return 0.2 + 0.8 * (digest[0] / 256)


def _usage(pod: JSON, container: JSON, now: dt.datetime) -> tuple[int, int]:
    """(cpu millicores, memory bytes) of one container now."""
    requests = (container.get("resources") or {}).get("requests") or {}
    share = _share(str(pod["metadata"].get("uid") or ""), str(container.get("name")), now)
    return (
        max(1, int(_cpu_millis(requests.get("cpu")) * share)),
        int(_memory_bytes(requests.get("memory")) * share),
    )


def _quantities(cpu_millis: int, memory: int) -> JSON:
    return {"cpu": f"{cpu_millis}m", "memory": f"{memory // 1024}Ki"}


def is_running(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def pod_metrics(pod: JSON, now: dt.datetime) -> JSON:
    """The PodMetrics of ``pod`` (named and labelled as the pod)."""
    meta = pod.get("metadata") or {}
    containers = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        cpu, memory = _usage(pod, c, now)
        containers.append({"name": c.get("name"), "usage": _quantities(cpu, memory)})
    out_meta: JSON = {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "creationTimestamp": _timestamp(now),
    }
    if meta.get("labels"):
        out_meta["labels"] = meta["labels"]
    return {
        "kind": POD_KIND,
        "apiVersion": API_VERSION,
        "metadata": out_meta,
        "timestamp": _timestamp(now),
        "window": f"{WINDOW_SECONDS}s",
        "containers": containers,
    }


def node_metrics(node: str, pods: Iterable[JSON], now: dt.datetime) -> JSON:
    """The NodeMetrics of ``node``: its running pods' usage summed."""
    cpu = memory = 0
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") != node or not is_running(pod):
            continue
        for c in (pod.get("spec") or {}).get("containers") or []:
            c_cpu, c_mem = _usage(pod, c, now)
            cpu, memory = cpu + c_cpu, memory + c_mem
    return {
        "kind": NODE_KIND,
        "apiVersion": API_VERSION,
        "metadata": {"name": node, "creationTimestamp": _timestamp(now)},
        "timestamp": _timestamp(now),
        "window": f"{WINDOW_SECONDS}s",
        "usage": _quantities(cpu, memory),
    }


def _totals(obj: JSON) -> tuple[int, int]:
    containers = obj.get("containers") or []
    usages = [obj["usage"]] if "usage" in obj else [c["usage"] for c in containers]
    cpu = sum(int(u["cpu"].rstrip("m")) for u in usages)
    memory = sum(int(u["memory"].rstrip("Ki")) for u in usages)
    return cpu, memory


def table(items: list[JSON], resource_version: str = "") -> JSON:
    """The ``meta.k8s.io/v1`` Table kubectl prints: NAME, CPU(cores), MEMORY(bytes), WINDOW."""
    rows = []
    for obj in items:
        cpu, memory = _totals(obj)
        partial = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": obj["metadata"]}  # fmt: skip
        rows.append({"cells": [obj["metadata"]["name"], f"{cpu}m", f"{memory // 1024}Mi",
                               obj["window"]], "object": partial})  # fmt: skip
    columns = [
        ("Name", "name", "Name of the object."),
        ("CPU(cores)", "", "CPU usage, in millicores."),
        ("MEMORY(bytes)", "", "Memory usage, in mebibytes."),
        ("Window", "", "The window the usage was measured over."),
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": [
            {"name": n, "type": "string", "format": f, "description": d, "priority": 0}
            for n, f, d in columns
        ],
        "rows": rows,
    }
