"""Figures for the watch cache at the storage level (not timed tests).

    .venv/bin/python -m tests.integration.test_cacher_measure [--pods 10000] [--nodes 100]
        [--watchers 1000] [--rate 200] [--seconds 5] [--buffer 100] [--budget 0.25]

On N realistic pods (lab.seed) written straight into a private etcd, with a cacher
(``new_cached_storage``) over it, it reports:
  - RV=0 LIST vs unset-RV LIST p50 (cache vs etcd, through the delegator),
  - RV=0 ``spec.nodeName=X`` LIST (node index) vs the same unset (etcd full scan),
  - cache memory per object vs its JSON size (tracemalloc around priming the cache),
  - fan-out: W watchers while writes arrive at R/s — events delivered and the p50/p99
    latency from a write's acknowledgement to each watcher receiving it.
The pytest test below runs the same code at a small scale and asserts only correctness
(every event reached every watcher, the index was used), never timings.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import tracemalloc
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from cacher import CacheDelegator, CacherConfig, new_cached_storage
from etcdclient import EtcdClient
from lab import seed
from lab.etcd import EtcdCluster
from storage import codec
from storage.etcd3 import Etcd3Store
from storage.fields import attrs_func
from storage.interfaces import ListOptions, SelectionPredicate
from storage.selectors import parse_field_selector

pytestmark = pytest.mark.etcd

ATTRS = attrs_func("pods")


def list_opts(rv: str, field: str = "") -> ListOptions:
    pred = SelectionPredicate(field=parse_field_selector(field) if field else None, get_attrs=ATTRS)
    return ListOptions(resource_version=rv, predicate=pred)


async def seed_pods(client: EtcdClient, prefix: str, pods: int, nodes: int) -> int:
    """Write ``pods`` pods under ``<prefix>/pods/``; returns their total JSON bytes."""
    total = 0
    sem = asyncio.Semaphore(64)

    async def put(i: int) -> None:
        nonlocal total
        obj = seed.pod(i, nodes, 10)
        meta = obj["metadata"]
        data = codec.encode(obj)
        total += len(data)
        async with sem:
            await client.put(f"{prefix}/pods/{meta['namespace']}/{meta['name']}".encode(), data)

    await asyncio.gather(*(put(i) for i in range(pods)))
    return total


async def p50(op: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        await op()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def cached(store: Etcd3Store, client: EtcdClient, prefix: str, **config: Any) -> CacheDelegator:
    return new_cached_storage(
        store, resource="pods", resource_prefix=f"{prefix}/pods/", attrs=ATTRS,
        kind="Pod", api_version="v1",
        config=CacherConfig(**config),
    )  # fmt: skip


@dataclass
class Figures:
    pods: int
    json_bytes: int
    rv0_list: float = 0.0
    unset_list: float = 0.0
    rv0_node: float = 0.0
    unset_node: float = 0.0
    node_fetched: int = 0
    node_returned: int = 0
    cache_bytes: int = 0
    watchers: int = 0
    events: int = 0
    delivered: int = 0
    expected: int = 0
    closed_slow: int = 0
    lat_p50: float = 0.0
    lat_p99: float = 0.0

    def report(self) -> str:
        per_obj = self.cache_bytes / max(self.pods, 1)
        json_obj = self.json_bytes / max(self.pods, 1)
        return "\n".join([
            f"pods: {self.pods}, JSON {json_obj:.0f} B/object",
            f"LIST RV=0 (cache) p50 {self.rv0_list * 1e3:.1f} ms | unset RV (etcd) p50 "
            f"{self.unset_list * 1e3:.1f} ms | ratio {self.unset_list / self.rv0_list:.1f}x",
            f"LIST spec.nodeName=X RV=0 (index: fetched {self.node_fetched}, returned "
            f"{self.node_returned}) p50 {self.rv0_node * 1e3:.2f} ms | unset RV (etcd scan) "
            f"p50 {self.unset_node * 1e3:.1f} ms | ratio {self.unset_node / self.rv0_node:.0f}x",
            f"cache memory {per_obj:.0f} B/object vs JSON {json_obj:.0f} B "
            f"({per_obj / json_obj:.2f}x)",
            f"fan-out: {self.watchers} watchers, {self.events} events, delivered "
            f"{self.delivered}/{self.expected}, closed as slow {self.closed_slow}, latency "
            f"p50 {self.lat_p50 * 1e3:.1f} ms p99 {self.lat_p99 * 1e3:.1f} ms",
        ])  # fmt: skip


async def measure(
    cluster: EtcdCluster, *, pods: int, nodes: int, watchers: int, rate: float, seconds: float,
    runs: int = 7, buffer: int = 100, budget: float = 0.25,
) -> Figures:  # fmt: skip
    prefix = f"/m-{uuid.uuid4().hex[:8]}/registry"
    client = EtcdClient(cluster.endpoints, request_timeout=60.0)
    await client.connect()
    try:
        store = Etcd3Store(client, request_timeout=60.0)
        fig = Figures(pods, await seed_pods(client, prefix, pods, nodes))

        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        c = cached(store, client, prefix, watcher_buffer_size=buffer, watcher_time_budget=budget)
        assert await c.cacher.wait_ready(120)
        gc.collect()
        fig.cache_bytes = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        try:
            key = f"{prefix}/pods/"
            fig.rv0_list = await p50(lambda: c.get_list(key, list_opts("0")), runs)
            fig.unset_list = await p50(lambda: c.get_list(key, list_opts("")), runs)
            node = seed.node_name(7)
            sel = f"spec.nodeName={node}"
            res = await c.get_list(key, list_opts("0", sel))
            fig.node_fetched, fig.node_returned = res.fetched, len(res.items)
            fig.rv0_node = await p50(lambda: c.get_list(key, list_opts("0", sel)), runs * 3)
            fig.unset_node = await p50(lambda: c.get_list(key, list_opts("", sel)), runs)
            await fan_out(c, store, prefix, fig, watchers, rate, seconds)
        finally:
            await c.close()
    finally:
        await client.close()
    return fig


async def fan_out(
    c: CacheDelegator, store: Etcd3Store, prefix: str, fig: Figures,
    watchers: int, rate: float, seconds: float,
) -> None:  # fmt: skip
    key = f"{prefix}/pods/fan/"
    acked: dict[int, float] = {}
    latencies: list[float] = []
    count = int(rate * seconds)
    received = [0] * watchers
    start_rv = await store.current_resource_version()
    await c.cacher.wait_until_fresh(0)
    ws = [await c.watch(key, list_opts(str(c.cacher.resource_version))) for _ in range(watchers)]

    async def consume(i: int) -> None:
        async for ev in ws[i]:
            now = time.perf_counter()
            t = acked.get(ev.resource_version)
            if t is not None:
                latencies.append(now - t)
            received[i] += 1
            if received[i] == count:
                return

    tasks = [asyncio.ensure_future(consume(i)) for i in range(watchers)]
    began = time.perf_counter()
    for n in range(count):
        target = began + n / rate
        delay = target - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)  # pacing the writer at `rate` writes/s
        obj = seed.pod(n, 10, 10)
        obj["metadata"].update(name=f"fan-{n}", namespace="fan")
        written = await store.create(f"{key}fan-{n}", obj)
        acked[written.resource_version] = time.perf_counter()
    try:
        async with asyncio.timeout(60):
            await asyncio.gather(*tasks, return_exceptions=True)
    except TimeoutError:
        pass
    for t in tasks:
        t.cancel()
    for w in ws:
        await w.stop()
    fig.watchers, fig.events = watchers, count
    fig.expected, fig.delivered = watchers * count, sum(received)
    fig.closed_slow = c.cacher.dispatcher.terminated_slow
    latencies.sort()
    if latencies:
        fig.lat_p50 = latencies[len(latencies) // 2]
        fig.lat_p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    assert start_rv > 0


async def test_measurement_smoke(etcd_own: EtcdCluster) -> None:
    """The measurement at a small scale: correctness only (all delivered, index used)."""
    fig = await measure(etcd_own, pods=300, nodes=10, watchers=20, rate=100, seconds=0.5, runs=2)
    assert fig.delivered == fig.expected == 20 * 50
    assert fig.closed_slow == 0
    assert fig.node_fetched == fig.node_returned == 30
    assert fig.cache_bytes > 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--watchers", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--buffer", type=int, default=100, help="per-watcher buffer (events)")
    ap.add_argument("--budget", type=float, default=0.25, help="per-watcher time budget (s)")
    args = ap.parse_args()
    with EtcdCluster(size=1) as cluster:
        fig = asyncio.run(
            measure(cluster, pods=args.pods, nodes=args.nodes, watchers=args.watchers,
                    rate=args.rate, seconds=args.seconds, buffer=args.buffer,
                    budget=args.budget)
        )  # fmt: skip
    print(f"etcd {cluster.version_string}")
    print(fig.report())


if __name__ == "__main__":
    main()
