"""The relist storm at the lab's scale (``watchcache lab demo relist-storm``): every node's
kubelet relists its pods at once (``fieldSelector=spec.nodeName=<node>``), three
times. With resourceVersion unset each relist is a quorum read from etcd, which knows
no fields: the server ranges over every pod and keeps the node's few, K times over.
With ``resourceVersion=0`` (what client-go's reflectors send) and with a consistent
read from the cache (``ConsistentListFromCache``, on a second server this demo starts)
the watch cache answers from memory through its ``spec.nodeName`` index: etcd sends
nothing but a revision. ``watchcache bench --scenarios relist_storm`` measures it at
1,000 and 5,000 nodes (docs/bench/report.md).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from lab.apiserver import APIServer
from lab.bench_storm import (
    CACHE_FETCHED,
    CONSISTENT_FLAG,
    ETCD_SENT,
    STORAGE_FETCHED,
    relist_all,
)
from lab.demo_context import warm
from lab.metrics import Scrape, scrape
from storage.etcd3.feature import progress_requests_supported

if TYPE_CHECKING:
    from lab.demo_context import DemoContext

__all__ = ["relist_storm"]

MOST_AGENTS = 200  # a lab-sized storm: one agent per node, at most this many


async def _etcd_sent(session: aiohttp.ClientSession, endpoints: list[str]) -> float | None:
    try:
        return (await scrape(session, endpoints[0])).value(ETCD_SENT)
    except (aiohttp.ClientError, ValueError, IndexError):
        return None


async def _storm(ctx: DemoContext, base: str, names: list[str], query: str) -> dict[str, Any]:
    """One round: every relist at once, each on a connection of its own."""
    endpoints = ctx.state.etcd_endpoints
    before: Scrape = await scrape(ctx.session, base)
    sent0 = await _etcd_sent(ctx.session, endpoints)
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=120)) as s:  # fmt: skip
        elapsed, answers = await relist_all(s, base, names, query)
    after = await scrape(ctx.session, base)
    sent1 = await _etcd_sent(ctx.session, endpoints)
    ok = [a for a in answers if a[0] == 200]
    return {
        "elapsed": elapsed, "codes": Counter(a[0] for a in answers),
        "from": Counter(a[2] for a in ok), "fetched": [a[3] for a in ok],
        "returned": [a[4] for a in ok],
        "etcd_mib": None if sent0 is None or sent1 is None else (sent1 - sent0) / 2**20,
        "storage_fetched": after.since(before, STORAGE_FETCHED, resource="pods"),
        "cache_fetched": after.since(before, CACHE_FETCHED, resource="pods",
                                     index="spec.nodeName"),
    }  # fmt: skip


def _show(ctx: DemoContext, label: str, r: dict[str, Any]) -> None:
    etcd = "?" if r["etcd_mib"] is None else f"{r['etcd_mib']:.1f} MiB"
    ctx.t.say(f"  {label}: {len(r['fetched'])} answers {dict(r['codes'])} in "
              f"{r['elapsed'] * 1000:.0f} ms, served from {dict(r['from'])}; objects fetched "
              f"{sum(r['fetched'])} for {sum(r['returned'])} returned; etcd sent {etcd}")


async def _consistent_server(ctx: DemoContext) -> APIServer:
    st = ctx.state
    log = Path(st.kubeconfig).parent / "relist-storm-server.log"
    gated = APIServer(st.etcd_endpoints, st.prefix,
                      extra_args=(CONSISTENT_FLAG, "--endpoint-reconciler-type=none"),
                      log_path=log)  # fmt: skip
    await asyncio.to_thread(gated.start)
    return gated


async def relist_storm(ctx: DemoContext) -> None:
    t = ctx.t
    nodes = await ctx.get("/api/v1/nodes?resourceVersion=0", show=False)
    names = sorted(n["metadata"]["name"] for n in nodes.items)[:MOST_AGENTS]
    total = len((await ctx.get("/api/v1/pods?resourceVersion=0", show=False)).items)
    k = len(names)
    t.title(f"the relist storm: {k} kubelets list their node's pods at once ({total} pods)")
    t.check("there are nodes to relist", k > 0, f"{k} nodes")
    if not k:
        return
    t.say(f"  GET /api/v1/pods?fieldSelector=spec.nodeName%3D<node>   x {k}, all at once")
    unset = await _storm(ctx, ctx.base, names, "")
    _show(ctx, "RV unset  ", unset)
    t.check(f"RV unset: all {k} from etcd", unset["from"] == {"etcd": k}, str(dict(unset["from"])))
    # the lab's simulated cluster writes meanwhile: a relist sees the pods of its moment
    scanned = all(abs(f - total) <= 10 for f in unset["fetched"])
    t.check(f"each relist ranged over every pod (~{total}) for its node's few", scanned,
            f"fetched {min(unset['fetched'])}..{max(unset['fetched'])} each, "
            f"{sum(unset['fetched'])} in all")  # fmt: skip
    t.check(f"apiserver_storage_list_fetched_objects_total moved by ~{k} x {total}",
            unset["storage_fetched"] >= sum(unset["fetched"]),
            f"+{unset['storage_fetched']:.0f}")  # fmt: skip
    rv0 = await _storm(ctx, ctx.base, names, "&resourceVersion=0")
    _show(ctx, "RV=0      ", rv0)
    t.check(f"RV=0: all {k} from the watch cache", rv0["from"] == {"cache": k},
            str(dict(rv0["from"])))  # fmt: skip
    t.check("the spec.nodeName index: each relist touched only its node's pods",
            rv0["fetched"] == rv0["returned"] and rv0["cache_fetched"] >= sum(rv0["fetched"]),
            f"{sum(rv0['fetched'])} fetched for {sum(rv0['returned'])} returned")  # fmt: skip
    if unset["etcd_mib"] is not None and rv0["etcd_mib"] is not None:
        t.check("etcd sent the unset round's pods, next to nothing for RV=0",
                rv0["etcd_mib"] < 0.01 * unset["etcd_mib"] + 0.1,
                f"{unset['etcd_mib']:.1f} MiB vs {rv0['etcd_mib']:.2f} MiB")  # fmt: skip
    await _consistent_round(ctx, names)
    t.explain("a kubelet that restarts relists its node's pods. Unset RV, that is a quorum "
              "read: etcd has no index by node, so every relist ranges over all pods and the "
              "server filters, K times at once: that is how a fleet restart blows up the "
              "control plane. RV=0 (client-go's reflectors) and consistent reads from the "
              "cache answer from memory through the spec.nodeName index.")


def _version(v: str) -> tuple[int, int, int]:
    try:
        major, minor, patch = (int(x) for x in v.split("-")[0].split(".")[:3])
    except ValueError:
        return (0, 0, 0)
    return major, minor, patch


async def _consistent_round(ctx: DemoContext, names: list[str]) -> None:
    from etcdclient import EtcdClient
    t = ctx.t
    async with EtcdClient(ctx.state.etcd_endpoints) as etcd:
        version = (await etcd.status()).version
    gated = await _consistent_server(ctx)
    try:
        await warm(ctx, gated.url, "/api/v1/pods")
        t.say(f"  (a second server with ConsistentListFromCache on, etcd {version})")
        cons = await _storm(ctx, gated.url, names, "")
        _show(ctx, "consistent", cons)
        k = len(names)
        if progress_requests_supported(_version(version)):
            t.check(f"consistent, RV unset: all {k} from the cache, through the index",
                    cons["from"] == {"cache": k} and cons["fetched"] == cons["returned"],
                    str(dict(cons["from"])))  # fmt: skip
        else:
            # without progress requests the server cannot make its cache catch up: a
            # consistent read goes to etcd, unless the cache had already seen etcd's
            # current revision by itself (a pod written meanwhile), then it is fresh
            t.check(f"consistent, etcd {version} (no progress-notify fixes): etcd, or the "
                    "cache only where it had already seen etcd's revision",
                    set(cons["from"]) <= {"etcd", "cache"} and sum(cons["from"].values()) == k,
                    str(dict(cons["from"])))  # fmt: skip
    finally:
        await asyncio.to_thread(gated.stop)
