"""The benchmark's custom-resource group: the same LISTs as on pods, on a CR.

``watchcache bench`` (unless ``--no-custom-resources``) installs the bench CRD
(:mod:`lab.crd_seed`: ``widgets.bench.watchcache.dev``, a selectable ``spec.color``),
seeds as many widgets as pods (~3.5 KB each, as large as the bench's pods) and measures,
next to the pod figures: LIST from etcd (RV unset) and from the watch cache (RV=0), a
field selector on the selectable field (etcd; cache with a ``spec.color`` index, which
the bench's main server gets from a ``--config`` file's ``watch-cache-indexes``; cache
without, on the server started with ``--watch-cache-index=false``), and kubectl's Table
(the CRD's printer columns) from cache and etcd. Scenario names start with ``cr_``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import orjson

from lab import crd_seed

__all__ = ["SCENARIOS", "TABLE", "prepare", "scenarios", "server_args", "unavailable"]

GROUP = "custom resource (widgets)"
FIELD = "spec.color%3Dred"
RESOURCE = "widgets"  # the resource label of the storage and cache metrics

# name -> (group, description), in report order (appended to the pods' scenarios)
SCENARIOS: dict[str, tuple[str, str]] = {
    "cr_list_etcd": (GROUP, "LIST all widgets, RV unset: quorum read from etcd"),
    "cr_list_cache": (GROUP, "LIST all widgets, RV=0: from the watch cache"),
    "cr_field_etcd": (GROUP, "spec.color=red (selectableFields), RV unset: etcd full scan"),
    "cr_field_cache_indexed": (GROUP, "spec.color=red, RV=0: cache, spec.color index (config)"),
    "cr_field_cache_noindex": (GROUP, "spec.color=red, RV=0: cache, no index"),
    "cr_table_cache": (GROUP, "kubectl get's Table of all widgets (printer columns), RV=0"),
    "cr_table_etcd": (GROUP, "kubectl get's Table of all widgets, RV unset: etcd"),
}
TABLE = ("cr_table_cache", "cr_table_etcd")  # asked with kubectl's Table Accept


def server_args(workdir: Path) -> tuple[str, ...]:
    """Flags for the bench's main server: a config file indexing widgets' ``spec.color``
    in their watch cache (the pods' ``spec.nodeName`` index is built in)."""
    path = workdir / "server-config.yaml"
    path.write_text("watch-cache-indexes:\n  widgets: [spec.color]\n")
    return ("--config", str(path))


def unavailable(pods_unavailable: dict[str, str], external: bool) -> dict[str, str]:
    """The CR scenarios that cannot run on this topology, and why."""
    out: dict[str, str] = {}
    if external:
        out["cr_field_cache_indexed"] = "--server given: no spec.color index set by the bench"
    if "field_cache_noindex" in pods_unavailable:
        out["cr_field_cache_noindex"] = pods_unavailable["field_cache_noindex"]
    return out


def scenarios(main: str, noindex: str | None) -> list[tuple[str, str, str, str]]:
    """(name, kind, URL, accounted process) of each CR scenario."""
    c = crd_seed.COLLECTION
    return [
        ("cr_list_etcd", "http", f"{main}{c}", "server"),
        ("cr_list_cache", "http", f"{main}{c}?resourceVersion=0", "server"),
        ("cr_field_etcd", "http", f"{main}{c}?fieldSelector={FIELD}", "server"),
        ("cr_field_cache_indexed", "http", f"{main}{c}?fieldSelector={FIELD}&resourceVersion=0",
         "server"),
        ("cr_field_cache_noindex", "http",
         f"{noindex}{c}?fieldSelector={FIELD}&resourceVersion=0", "server-noindex"),
        ("cr_table_cache", "http", f"{main}{c}?resourceVersion=0", "server"),
        ("cr_table_etcd", "http", f"{main}{c}", "server"),
    ]  # fmt: skip


async def prepare(main: str, caches: list[str], count: int, start: int, namespaces: int) -> None:
    """Install the CRD (once), seed widgets [``start``, ``count``) through ``main``, then
    wait until every server in ``caches`` serves the resource from a cache holding the
    newest widget."""
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(timeout=timeout) as s:
        await crd_seed.install_bench_crd(s, main)
        await crd_seed.seed_widgets(s, main, count, namespaces, start=start)
        async with s.get(main + crd_seed.COLLECTION) as r:
            if r.status != 200:
                raise RuntimeError(f"listing widgets: {r.status} {await r.text()}")
            items = orjson.loads(await r.read())["items"]
        rv = max(int(i["metadata"]["resourceVersion"]) for i in items)
        for url in caches:
            await _caught_up(s, url, rv)


async def _caught_up(s: aiohttp.ClientSession, url: str, rv: int, within: float = 120) -> None:
    """Until ``url`` serves widgets (its CRD established) with an RV=``rv`` LIST (which
    waits up to 3 s server-side for its cache, then 504)."""
    path = f"{url}/apis/{crd_seed.GROUP}/v1/namespaces/bench-cr-0/widgets?resourceVersion={rv}"
    deadline = time.monotonic() + within
    while True:
        async with s.get(path) as r:
            if r.status == 200:
                return
            if r.status not in (404, 429, 504) or time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not serve widgets at rv {rv}: {r.status}")
        await asyncio.sleep(0.2)
