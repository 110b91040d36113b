"""Issue 23 §8: others are still served while many large LISTs run. A LIST expected to
read more than 1 MiB waits for one of two slots (``proxy.endpoints.large_lists``);
every one is answered whole, and a small LIST of the same resource in another
namespace is never made to wait for them."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import orjson
import pytest

from tests.integration.conftest import ServerFactory, create

pytestmark = pytest.mark.etcd

BIG = "big"
OBJECTS = 200
VALUE = "x" * 8_000  # 200 ConfigMaps of ~8 kB: a LIST of 1.6 MB
CONCURRENT = 10


def _gauge(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + " "))  # fmt: skip


async def _seed(http: aiohttp.ClientSession) -> None:
    for ns in (BIG, "small"):
        await create(http, "/api/v1/namespaces", {"metadata": {"name": ns}})
    limit = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with limit:
            body = {"metadata": {"name": f"cm-{i:04d}"}, "data": {"v": VALUE}}
            await create(http, f"/api/v1/namespaces/{BIG}/configmaps", body)

    await asyncio.gather(*(one(i) for i in range(OBJECTS)))
    await create(http, "/api/v1/namespaces/small/configmaps", {"metadata": {"name": "one"}})


async def test_large_lists_take_turns_and_small_ones_do_not_wait(
    server_factory: ServerFactory,
) -> None:
    """Before, every large LIST read and wrote at once: the server held all their
    results, and its loop interleaved all their steps with everyone else's."""
    srv = server_factory()
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await _seed(http)
        path = f"/api/v1/namespaces/{BIG}/configmaps"
        async with http.get(f"{path}?limit=1") as resp:
            rv = (await resp.json())["metadata"]["resourceVersion"]
        fresh = f"{path}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan&limit=1"
        async with http.get(fresh) as resp:
            assert resp.status == 200  # the cache has them all (its sizes drive the estimate)
        async with http.get("/metrics") as resp:
            waited_before = _gauge(await resp.text(), "watchcache_large_lists_waited_total")
        waiting_seen: list[float] = []
        small_took: list[float] = []
        done = asyncio.Event()

        async def large(rv: str) -> int:
            async with (
                aiohttp.ClientSession(base_url=srv.url) as own,
                own.get(path + rv) as resp,
            ):
                assert resp.status == 200
                return len(orjson.loads(await resp.read())["items"])

        async def watch_gauge() -> None:
            while not done.is_set():
                async with http.get("/metrics") as resp:
                    text = await resp.text()
                waiting_seen.append(_gauge(text, "watchcache_large_lists_waiting"))

        async def small() -> None:
            while not done.is_set():
                t0 = time.monotonic()
                async with http.get("/api/v1/namespaces/small/configmaps") as resp:
                    assert resp.status == 200
                    assert len((await resp.json())["items"]) == 1
                small_took.append(time.monotonic() - t0)

        side = [asyncio.ensure_future(watch_gauge()), asyncio.ensure_future(small())]
        sizes = await asyncio.gather(
            *(large("" if i % 2 else "?resourceVersion=0") for i in range(CONCURRENT))
        )
        done.set()
        await asyncio.gather(*side)
        async with http.get("/metrics") as resp:
            waited = _gauge(await resp.text(), "watchcache_large_lists_waited_total")
    assert sizes == [OBJECTS] * CONCURRENT
    # they took turns: counted when it happens (the gauge, sampled, could miss a short
    # wait when the lists are fast)
    assert waited - waited_before >= 1, (waited, waiting_seen)
    assert small_took and max(small_took) < 5.0, small_took  # never queued behind them
