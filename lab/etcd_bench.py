"""etcd client benchmark (``python -m lab.etcd_bench``).

Side by side in one run, against the same etcd:

1. a prefix range of ``--objects`` values of ``--size`` bytes through
   ``EtcdClient.list_prefix`` and through the raw generated stub (the same RangeRequest
   on a bare channel), interleaved, ``--runs`` times each; reports p50 and the overhead;
2. watch throughput: events/s through one watch replaying ``--watch-events`` events,
   and across ``--watches`` watches on one stream each replaying ``--fanout-events``.

Starts a private etcd (lab.etcd) unless ``--endpoints`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import operator
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import grpc

from etcdclient import EtcdClient, Watch, prefix_end
from etcdclient._endpoints import CHANNEL_OPTIONS, parse_endpoint
from etcdclient._pb import rpc_pb2, rpc_pb2_grpc
from lab.etcd import EtcdCluster

_stubs: Any = rpc_pb2_grpc


async def _seed(client: EtcdClient, prefix: bytes, count: int, size: int) -> None:
    value = b"x" * size
    sem = asyncio.Semaphore(64)

    async def put(i: int) -> None:
        async with sem:
            await client.put(prefix + b"%08d" % i, value)

    await asyncio.gather(*(put(i) for i in range(count)))


_FIELDS = operator.attrgetter("key", "value", "create_revision", "mod_revision", "version", "lease")


async def bench_range(
    client: EtcdClient, endpoint: str, prefix: bytes, runs: int
) -> dict[str, Any]:
    """p50 of ``runs`` interleaved rounds (the order alternates each round) of:
    EtcdClient.list_prefix; the raw stub's Range; the raw stub's Range plus reading every
    field of every kv (what a caller of the raw stub must do to use the result)."""
    target, secure = parse_endpoint(endpoint, tls_default=False)
    if secure:
        raise SystemExit("the raw-stub comparison supports plaintext endpoints only")
    async with grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS) as channel:
        kv = _stubs.KVStub(channel)
        request = rpc_pb2.RangeRequest(key=prefix, range_end=prefix_end(prefix))

        async def ours() -> int:
            return len((await client.list_prefix(prefix)).kvs)

        async def raw() -> int:
            return len((await kv.Range(request, timeout=60)).kvs)

        async def raw_read() -> int:
            return len(list(map(_FIELDS, (await kv.Range(request, timeout=60)).kvs)))

        paths = [ours, raw, raw_read]
        times: dict[str, list[float]] = {f.__name__: [] for f in paths}
        counts = set()
        for i in range(runs + 1):  # round 0 warms every path up and is not counted
            for f in paths if i % 2 else paths[::-1]:
                t0 = time.perf_counter()
                counts.add(await f())
                if i:
                    times[f.__name__].append(time.perf_counter() - t0)
    assert len(counts) == 1, counts
    p50 = {name: statistics.median(ts) for name, ts in times.items()}
    return {
        "objects": counts.pop(),
        "p50_client_s": p50["ours"],
        "p50_raw_s": p50["raw"],
        "p50_raw_read_s": p50["raw_read"],
        "overhead_pct": 100 * (p50["ours"] - p50["raw"]) / p50["raw"],
        "overhead_read_pct": 100 * (p50["ours"] - p50["raw_read"]) / p50["raw_read"],
    }


async def _drain(watch: Watch, expected: int) -> None:
    seen = 0
    async for batch in watch:
        seen += len(batch.events)
        if seen >= expected:
            await watch.cancel()
            return


async def _write_events(kv: Any, prefix: bytes, count: int, per_txn: int = 100) -> None:
    """``count`` puts of 100 B, ``per_txn`` per Txn (etcd's default --max-txn-ops is 128)."""
    value = b"v" * 100
    for base in range(0, count, per_txn):
        ops = [
            rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=prefix + b"%08d" % i, value=value))
            for i in range(base, min(count, base + per_txn))
        ]
        await kv.Txn(rpc_pb2.TxnRequest(success=ops), timeout=60)


async def _live(client: EtcdClient, kv: Any, prefix: bytes, events: int, watches: int) -> float:
    """Events/s delivered to ``watches`` watches (created first) while the events are
    written: from the first write to the last event received by every watch."""
    ws = [client.watch(prefix, prefix_end(prefix), buffer_size=4096) for _ in range(watches)]
    await asyncio.gather(*(w.created() for w in ws))
    t0 = time.perf_counter()
    writer = asyncio.create_task(_write_events(kv, prefix, events))
    await asyncio.gather(*(_drain(w, events) for w in ws))
    elapsed = time.perf_counter() - t0
    await writer
    return watches * events / elapsed


async def bench_watch(
    client: EtcdClient, endpoint: str, prefix: bytes, events: int, watches: int,
    fanout_events: int,
) -> dict[str, Any]:  # fmt: skip
    target, _ = parse_endpoint(endpoint, tls_default=False)
    async with grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS) as channel:
        kv = _stubs.KVStub(channel)
        single = await _live(client, kv, prefix + b"one/", events, 1)
        # Replay from history: etcd paces catching-up watches (1,000 revisions per 100 ms
        # sync round), so this is etcd's figure more than ours.
        replay_prefix = prefix + b"one/"
        first = (await client.get(replay_prefix + b"%08d" % 0)).kv
        assert first is not None
        t0 = time.perf_counter()
        w = client.watch(replay_prefix, prefix_end(replay_prefix),
                         start_revision=first.mod_revision, buffer_size=4096)  # fmt: skip
        await _drain(w, events)
        replay = events / (time.perf_counter() - t0)
        fanout = await _live(client, kv, prefix + b"many/", fanout_events, watches)
    return {
        "single_watch_events_per_s": single,
        "replay_events_per_s": replay,
        "fanout_watches": watches,
        "fanout_total_events": watches * fanout_events,
        "fanout_events_per_s": fanout,
    }


async def run(args: argparse.Namespace, endpoints: list[str]) -> int:
    prefix = b"/bench/%d/" % time.time_ns()
    async with EtcdClient(endpoints, request_timeout=120) as client:
        t0 = time.perf_counter()
        await _seed(client, prefix + b"range/", args.objects, args.size)
        print(f"seeded {args.objects} x {args.size} B in {time.perf_counter() - t0:.1f}s")
        r = await bench_range(client, endpoints[0], prefix + b"range/", args.runs)
        print(f"range of {r['objects']} x {args.size} B, p50 of {args.runs} interleaved runs:")
        print(f"  EtcdClient.list_prefix        {r['p50_client_s'] * 1000:7.1f} ms")
        print(f"  raw stub Range                {r['p50_raw_s'] * 1000:7.1f} ms"
              f"   client overhead {r['overhead_pct']:+.1f} %")  # fmt: skip
        print(f"  raw stub Range + read fields  {r['p50_raw_read_s'] * 1000:7.1f} ms"
              f"   client overhead {r['overhead_read_pct']:+.1f} %")  # fmt: skip
        w = await bench_watch(client, endpoints[0], prefix + b"watch/", args.watch_events,
                              args.watches, args.fanout_events)  # fmt: skip
        print(f"one watch, live:   {w['single_watch_events_per_s']:10,.0f} events/s "
              f"({args.watch_events} events written in Txns of 100)")  # fmt: skip
        print(
            f"one watch, replay: {w['replay_events_per_s']:10,.0f} events/s "
            "(paced by etcd's 100 ms sync of catching-up watches)"
        )
        print(
            f"{w['fanout_watches']} watches, one stream, live: "
            f"{w['fanout_events_per_s']:10,.0f} events/s "
            f"({w['fanout_total_events']:,} deliveries)"
        )
        await client.delete(prefix, prefix_end(prefix))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.etcd_bench", description=__doc__)
    parser.add_argument("--endpoints", help="comma-separated etcd URLs (default: start one)")
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=2_500)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--watch-events", type=int, default=20_000)
    parser.add_argument("--watches", type=int, default=1_000)
    parser.add_argument("--fanout-events", type=int, default=1_000)
    args = parser.parse_args(argv)
    if args.endpoints:
        return asyncio.run(run(args, args.endpoints.split(",")))
    with EtcdCluster(size=1) as cluster:
        print(f"etcd {cluster.version_string} at {cluster.endpoints[0]}")
        return asyncio.run(run(args, cluster.endpoints))


if __name__ == "__main__":
    sys.exit(main())
