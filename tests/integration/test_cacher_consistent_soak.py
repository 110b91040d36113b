"""Issue 23 §9: consistent reads stay served from the cache under the faults that once
made every one of them wait 3 s and go to etcd (bursts of writes, compactions, and
watches catching up long backlogs: a lagging watch re-created under load, a CRD's new
cache when another replica created it).

The cause, measured on etcd 3.5.16: etcd answers a stream-wide progress request only
when *every* watch of the gRPC stream is synced (``progressIfSync``), and syncs a
watch catching up 1,000 revisions a round (100 ms). Every cache's watch shared one
stream, so while any of them caught up a backlog, no cache got progress; under
sustained load one always was. Each cache's watch now has a stream of its own
(``EtcdClient.watch(stream=...)``, the reflector's prefix).

Progress is requested only from a fixed etcd (3.4.31+ / 3.5.13+): the test runs on the
etcd of ``ETCD_BIN`` when fixed, else the 3.5.16 of ``make etcd-versions`` in
``$WATCHCACHE_CACHE_DIR``; without either it asserts the other branch (every
consistent read goes to etcd, counted as unsupported), as
``test_cacher_consistent_read`` does.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from cacher import Outcome
from etcdclient import EtcdClient
from lab.etcd import EtcdCluster, etcd_binary, etcd_version
from storage.etcd3 import Etcd3Store
from storage.etcd3.feature import progress_requests_supported
from storage.interfaces import ChangeStream
from tests.integration.test_cacher_support import cached_store, etcd_client, opts, pod

pytestmark = pytest.mark.etcd

SOAK_SECONDS = float(os.environ.get("SOAK_SECONDS", "12"))
BACKLOG = 15_000  # revisions a catching-up watch replays: ~1.5 s unsynced at etcd


def _fixed_etcd() -> str:
    """A fixed etcd's binary, or the default one (then progress is never requested)."""
    default = etcd_binary()
    if progress_requests_supported(etcd_version(default)):
        return default
    cache = Path(os.environ.get("WATCHCACHE_CACHE_DIR", ".cache"))
    cached = cache / "etcd" / "3.5.16" / "usr" / "bin" / "etcd"
    return str(cached) if cached.exists() else default


@pytest.fixture(scope="module")
def fixed_etcd() -> Iterator[EtcdCluster]:
    with EtcdCluster(size=1, binary=_fixed_etcd()) as cluster:
        yield cluster


async def _backlog(client: EtcdClient, key: bytes) -> int:
    """``BACKLOG`` revisions under ``key``; the first one's revision."""
    limit = asyncio.Semaphore(64)

    async def put(i: int) -> int:
        async with limit:
            return await client.put(key + b"%05d" % i, b"v")

    return min(await asyncio.gather(*(put(i) for i in range(BACKLOG))))


async def _catch_up_again_and_again(store: Etcd3Store, key: str, first: int,
                                    until: float) -> int:  # fmt: skip
    """Start a watch of ``key`` from ``first`` every second, as a reflector starts one
    (on its prefix's stream), and stop it 2.5 s later: one is always catching up at
    etcd. Its batches are left in its buffer (15 of them): nobody decodes them."""
    started = 0
    live: list[tuple[float, ChangeStream]] = []
    try:
        while time.monotonic() < until:
            live.append((time.monotonic() + 2.5, store.watch_changes(key, first)))
            started += 1
            await asyncio.sleep(1.0)
            while live and live[0][0] < time.monotonic():
                await live.pop(0)[1].stop()
    finally:
        for _, stream in live:
            await stream.stop()
    return started


async def _bursts(client: EtcdClient, key: bytes, until: float) -> int:
    """Bursts of 50 writes elsewhere: etcd's revision moves past every cache's, so each
    consistent read needs progress."""
    written = 0
    while time.monotonic() < until:
        revs = await asyncio.gather(*(client.put(key + b"%d" % i, b"x") for i in range(50)))
        written += len(revs)
        await asyncio.sleep(0.3)
    return written


async def test_consistent_reads_stay_in_the_cache_while_others_catch_up(
    fixed_etcd: EtcdCluster, etcd_prefix: str
) -> None:
    supported = progress_requests_supported(fixed_etcd.version)
    async with etcd_client(fixed_etcd) as client:
        junk = f"{etcd_prefix}/junk/".encode()
        for i in range(20):
            await client.put(junk + b"%d" % i, b"j")
        compact_to = await client.put(junk + b"last", b"j")
        backlog_key = f"{etcd_prefix}/backlog/"
        first = await _backlog(client, backlog_key.encode())
        await client.compact(compact_to)  # a compaction: the history before the backlog
        async with cached_store(client, etcd_prefix, consistent_list_from_cache=True) as c:
            prefix = c.cacher.resource_prefix
            await c.create(f"{prefix}ns/a", pod("a"))
            until = time.monotonic() + SOAK_SECONDS
            store = Etcd3Store(client, request_timeout=10.0)
            outcomes: Counter[str] = Counter()

            async def read_all_along() -> None:
                while time.monotonic() < until:
                    listed = await c.get_list(prefix, opts())
                    assert [s.obj["metadata"]["name"] for s in listed.items] == ["a"]
                    outcomes[listed.served_from] += 1
                    await asyncio.sleep(0.1)

            started, written, _ = await asyncio.gather(
                _catch_up_again_and_again(store, backlog_key, first, until),
                _bursts(client, f"{etcd_prefix}/burst/".encode(), until),
                read_all_along(),
            )
    assert started >= SOAK_SECONDS // 2 and written >= 100 and sum(outcomes.values()) >= 10
    if supported:
        served = sum(outcomes.values())
        assert outcomes == Counter({"cache": served}), (outcomes, c.consistent_reads)
        assert c.consistent_reads[Outcome.FALLBACK_TIMEOUT] == 0
    else:
        assert outcomes == Counter({"etcd": sum(outcomes.values())})
        assert c.consistent_reads[Outcome.FALLBACK_UNSUPPORTED] == sum(outcomes.values())
