"""What managedFields cost: write throughput with and without field tracking, and their
share of a LIST's bytes. Part of ``watchcache bench`` (one note per size) and runnable on
its own against any server: ``python -m lab.bench_managed_fields URL [--pods N]``.

- Writes: the same metadata-only update (a label, as controllers make) PUT to pods
  created by server-side apply (tracked: the field manager compares old and new and
  updates the entries) and to pods whose managedFields were reset with ``[]`` (an
  object without managedFields is not tracked by updates, as upstream's
  ``skipNonAppliedManager``), interleaved, ``concurrency`` in flight.
- LIST bytes: the cached pod LIST (RV=0) as served, and the same items without
  ``metadata.managedFields`` (computed client side from the same body).

The pods are created in a namespace of their own and deleted with it at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

import aiohttp
import orjson

from lab import seed

__all__ = ["list_bytes_share", "measure"]

APPLY = "application/apply-patch+yaml"


def list_bytes_share(body: bytes) -> dict[str, int]:
    """Bytes of a LIST body, and of the same items without managedFields."""
    doc = orjson.loads(body)
    for item in doc.get("items") or []:
        (item.get("metadata") or {}).pop("managedFields", None)
    return {"list_bytes": len(body), "list_bytes_without_managed_fields": len(orjson.dumps(doc))}


async def _pods(s: aiohttp.ClientSession, base: str, ns: str, n: int, tracked: bool) -> list[str]:
    names = []
    for i in range(n):
        body = seed.pod(i, 10, 1)
        meta = body["metadata"]
        meta.pop("managedFields", None)
        meta["namespace"] = ns
        meta["name"] = name = f"{'tracked' if tracked else 'untracked'}-{i}"
        url = f"{base}/api/v1/namespaces/{ns}/pods/{name}?fieldManager=kube-controller-manager"
        async with s.patch(url, data=orjson.dumps(body), headers={"Content-Type": APPLY}) as r:
            await r.read()
        if not tracked:
            reset = b'{"metadata":{"managedFields":[]}}'
            url = f"{base}/api/v1/namespaces/{ns}/pods/{name}"
            headers = {"Content-Type": "application/merge-patch+json"}
            async with s.patch(url, data=reset, headers=headers) as r:
                await r.read()
        names.append(name)
    return names


async def _updates(
    s: aiohttp.ClientSession, base: str, ns: str, names: list[str], rounds: int, concurrency: int
) -> float:
    """Seconds for ``rounds`` label updates (GET + PUT) of every pod of ``names``."""
    sem = asyncio.Semaphore(concurrency)

    async def one(name: str, r: int) -> None:
        url = f"{base}/api/v1/namespaces/{ns}/pods/{name}"
        async with sem:
            async with s.get(url) as resp:
                obj: dict[str, Any] = orjson.loads(await resp.read())
            obj["metadata"].setdefault("labels", {})["bench.watchcache.io/round"] = str(r)
            async with s.put(url, data=orjson.dumps(obj),
                             headers={"Content-Type": "application/json"}) as resp:  # fmt: skip
                await resp.read()

    t0 = time.perf_counter()
    for r in range(rounds):
        await asyncio.gather(*(one(n, r) for n in names))
    return time.perf_counter() - t0


async def _delete_namespace(s: aiohttp.ClientSession, base: str, ns: str) -> None:
    """Delete the namespace and wait (up to a minute) until it is gone: the DELETE only
    marks it Terminating and the namespace controller empties it in the background, so
    the next scenario would otherwise be measured beside that deletion."""
    async with s.delete(f"{base}/api/v1/namespaces/{ns}") as r:
        await r.read()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while loop.time() < deadline:
        async with s.get(f"{base}/api/v1/namespaces/{ns}") as r:
            await r.read()
            if r.status == 404:
                return
        await asyncio.sleep(0.2)


async def measure(
    base: str, pods: int = 100, rounds: int = 3, concurrency: int = 8
) -> dict[str, float | int]:
    """The figures (writes per second tracked/untracked, LIST bytes with/without)."""
    ns = f"bench-mf-{uuid.uuid4().hex[:6]}"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as s:
        async with s.post(f"{base}/api/v1/namespaces", json={"metadata": {"name": ns}}) as r:
            await r.read()
        try:
            tracked = await _pods(s, base, ns, pods, tracked=True)
            untracked = await _pods(s, base, ns, pods, tracked=False)
            t_tracked = t_untracked = 0.0
            for _ in range(2):  # interleaved: both see the same machine load
                t_tracked += await _updates(s, base, ns, tracked, rounds, concurrency)
                t_untracked += await _updates(s, base, ns, untracked, rounds, concurrency)
            async with s.get(f"{base}/api/v1/pods?resourceVersion=0") as r:
                body = await r.read()
        finally:
            await _delete_namespace(s, base, ns)
    writes = 2 * rounds * pods
    return {
        "pods": pods,
        "updates_per_s_tracked": writes / t_tracked,
        "updates_per_s_untracked": writes / t_untracked,
        **list_bytes_share(body),
    }


def describe(m: dict[str, float | int]) -> str:
    """One line for the report's notes."""
    with_mf, without = m["list_bytes"], m["list_bytes_without_managed_fields"]
    share = 100 * (with_mf - without) / with_mf if with_mf else 0.0
    return (
        f"managedFields: {share:.0f}% of the cached pod LIST's bytes "
        f"({with_mf / 1e6:.2f} MB served, {without / 1e6:.2f} MB without them); label "
        f"updates (GET+PUT) of tracked pods {m['updates_per_s_tracked']:.0f}/s vs "
        f"{m['updates_per_s_untracked']:.0f}/s for pods without managedFields."
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.bench_managed_fields")
    p.add_argument("server")
    p.add_argument("--pods", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args(argv)
    m = asyncio.run(measure(a.server.rstrip("/"), a.pods, a.rounds))
    print(orjson.dumps(m, option=orjson.OPT_INDENT_2).decode())
    print(describe(m))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
