"""Measure a LIST of N pods (~2.5 KB each) served from etcd end to end, against the raw
etcd range of the same prefix, in one run on one real etcd.

    .venv/bin/python -m tests.e2e.measure_list [--pods 10000] [--runs 7]

Seeds N pods straight into etcd (the storage codec's bytes, 10 namespaces), starts
``watchcache serve --watch-cache=false`` as a subprocess, then times:
  - the raw etcd range of ``<prefix>/pods/`` (our etcd client, in this process),
  - ``GET /api/v1/pods`` through the server, body read to the end,
and reports p50/min/max latencies, the server's peak RSS (VmHWM) before and after the
LISTs, and the response and etcd payload sizes. Not a test: figures, not assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import aiohttp

from etcdclient import EtcdClient
from lab.etcd import EtcdCluster
from storage import codec, keys
from storage.interfaces import JSONObject
from tests.integration.conftest import PYTHON, start_server

PAD = "x" * 1600


def pod(i: int) -> JSONObject:
    ns = f"ns-{i % 10}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{i:05d}",
            "namespace": ns,
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "creationTimestamp": "2026-11-29T10:00:00Z",
            "labels": {"app": f"app-{i % 50}", "tier": "web", "pod-template-hash": "5d8f7c9b6"},
            "annotations": {"bench/pad": PAD},
        },
        "spec": {
            "nodeName": f"node-{i % 100}",
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "default",
            "containers": [
                {
                    "name": "app",
                    "image": "registry.example.com/team/app:1.2.3",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "env": [{"name": f"VAR_{k}", "value": f"value-{k}"} for k in range(8)],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
        "status": {"phase": "Running", "podIP": f"10.0.{i // 250}.{i % 250}"},
    }


async def seed(client: EtcdClient, prefix: str, count: int) -> int:
    sizes = 0
    sem = asyncio.Semaphore(64)

    async def put(i: int) -> None:
        nonlocal sizes
        obj = pod(i)
        value = codec.encode(obj)
        sizes += len(value)
        key = keys.object_key("", "pods", obj["metadata"]["name"], f"ns-{i % 10}", prefix)
        async with sem:
            await client.put(key.encode(), value)

    await asyncio.gather(*(put(i) for i in range(count)))
    return sizes // count


RAW_RANGE_CHILD = """
import asyncio, sys
from pathlib import Path
from etcdclient import EtcdClient

def hwm():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

async def main():
    async with EtcdClient(sys.argv[1].split(","), request_timeout=60.0) as c:
        idle = hwm()
        result = await c.list_prefix(sys.argv[2].encode())
        print(f"{idle:.0f} {hwm():.0f} {len(result.kvs)}")

asyncio.run(main())
"""


async def raw_range_rss(endpoints: list[str], prefix: str) -> tuple[float, float]:
    """Peak RSS (MiB) of a fresh process before and after one raw range of ``prefix``."""
    proc = await asyncio.create_subprocess_exec(
        PYTHON,
        "-c",
        RAW_RANGE_CHILD,
        ",".join(endpoints),
        prefix,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    idle, peak, _ = out.decode().split()
    return float(idle), float(peak)


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def summary(name: str, samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return (
        f"{name:<28} p50 {statistics.median(ms):8.1f} ms   "
        f"min {min(ms):8.1f} ms   max {max(ms):8.1f} ms   (n={len(ms)})"
    )


async def measure(count: int, runs: int) -> None:
    cluster = EtcdCluster(size=1).start()
    prefix = "/bench/registry"
    try:
        async with EtcdClient(cluster.endpoints, request_timeout=60.0) as client:
            started = time.monotonic()
            avg = await seed(client, prefix, count)
            print(
                f"seeded {count} pods, {avg} bytes each on average, "
                f"in {time.monotonic() - started:.1f} s"
            )
            pods_prefix = keys.resource_prefix("", "pods", prefix).encode()
            raw: list[float] = []
            payload = 0
            for _ in range(runs):
                t0 = time.perf_counter()
                result = await client.list_prefix(pods_prefix)
                raw.append(time.perf_counter() - t0)
                payload = sum(len(kv.value) for kv in result.kvs)
                del result
        raw_idle, raw_peak = await raw_range_rss(cluster.endpoints, pods_prefix.decode())
        server = start_server(cluster.endpoints, prefix, "--watch-cache=false")
        try:
            rss_idle = peak_rss_mib(server.pid)
            timeout = aiohttp.ClientTimeout(total=300)
            through: list[float] = []
            size = 0
            async with aiohttp.ClientSession(base_url=server.url, timeout=timeout) as http:
                for _ in range(runs):
                    t0 = time.perf_counter()
                    async with http.get("/api/v1/pods") as resp:
                        body = await resp.read()
                        assert resp.status == 200
                        fetched = resp.headers["X-Watchcache-Objects-Fetched"]
                    through.append(time.perf_counter() - t0)
                    size = len(body)
                    del body
            rss_peak = peak_rss_mib(server.pid)
        finally:
            server.stop()
        print(summary("raw etcd range (client)", raw))
        print(summary("GET /api/v1/pods (server)", through))
        print(
            f"etcd values {payload / 2**20:.1f} MiB; LIST response {size / 2**20:.1f} MiB; "
            f"objects fetched {fetched}"
        )
        print(
            f"server peak RSS: {rss_idle:.0f} MiB idle (after start), "
            f"{rss_peak:.0f} MiB after {runs} LISTs"
        )
        print(
            f"raw range in a fresh process: peak RSS {raw_idle:.0f} MiB idle, "
            f"{raw_peak:.0f} MiB after one range"
        )
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(measure(args.pods, args.runs))


if __name__ == "__main__":
    main()
