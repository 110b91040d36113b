"""The delegator's routing table (upstream ``cacher/delegator.go``, classic +
ConsistentListFromCache), with a
fake etcd3 store and a cacher driven by hand (no I/O, fake clock)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cacher import CacheDelegator, CacherConfig, Outcome
from cacher.cacher import Cacher
from cacher.clock import FakeClock
from etcdclient.types import Status
from storage.errors import InvalidResourceVersion, NotFound, NotReady, TooLargeResourceVersion
from storage.etcd3.feature import progress_requests_supported
from storage.interfaces import GetOptions, ListOptions, ListResult, SelectionPredicate, StoredObject
from tests.unit.cacher.helpers import POD_ATTRS, PREFIX, pod


class FakeStore:
    """Records which calls reached "etcd"; the etcd revision and version it reports are
    set by the test."""

    def __init__(self, revision: int, version: str) -> None:
        self.calls: list[str] = []
        self.revision = revision
        self.version = version
        self.progress_requests = 0

    async def current_resource_version(self) -> int:
        return self.revision

    async def supports_request_watch_progress(self) -> bool:
        status = Status("e", self.version, 1, 1, 1, 1, 0, 0)
        return progress_requests_supported(status.version_tuple)

    async def request_watch_progress(self) -> None:
        self.progress_requests += 1

    async def get(self, key: str, opts: GetOptions) -> StoredObject:
        self.calls.append(f"get:{opts.resource_version}")
        return pod("from-etcd", 1)

    async def get_list(self, key: str, opts: ListOptions) -> ListResult:
        self.calls.append(f"list:{opts.resource_version}")
        return ListResult(items=[], resource_version=99, served_from="etcd")

    async def close(self) -> None:
        self.calls.append("close")

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"unexpected call {name}")


def make(clock: FakeClock, *, version: str = "3.5.1", gate: bool = False) -> tuple[
    CacheDelegator, FakeStore, FakeStore
]:  # fmt: skip
    """The delegator over a fake store, which also plays etcd's revision and version."""
    store = FakeStore(20, version)
    cfg = CacherConfig(clock=clock, consistent_list_from_cache=gate)
    cacher = Cacher(
        store, resource="pods", resource_prefix=PREFIX, attrs=POD_ATTRS, kind="Pod",
        api_version="v1", indexes=("spec.nodeName",), config=cfg,
    )  # fmt: skip
    return CacheDelegator(store, cacher), store, store


def lo(rv: str = "", match: Any = "", limit: int = 0, token: str = "") -> ListOptions:
    pred = SelectionPredicate(get_attrs=POD_ATTRS, limit=limit, continue_token=token)
    return ListOptions(resource_version=rv, resource_version_match=match, predicate=pred)


def ready(d: CacheDelegator, rv: int = 10) -> None:
    d.cacher.cache.replace([pod("a", 5), pod("b", 6)], rv)
    d.cacher.ready.set_ready()


@pytest.mark.parametrize(
    ("opts", "where"),
    [
        (lo(), "list:"),  # RV unset: etcd
        (lo("0"), "cache"),
        (lo("0", limit=1), "cache"),  # limit ignored
        (lo("0", "NotOlderThan"), "cache"),
        (lo("8"), "cache"),  # RV=N without limit
        (lo("8", "NotOlderThan", limit=1), "cache"),
        (lo("8", limit=1), "list:8"),  # legacy exact
        (lo("8", "Exact"), "list:8"),
        (lo("", limit=1, token="abc"), "list:"),  # continue
    ],
)
async def test_list_routing(opts: ListOptions, where: str) -> None:
    d, store, _ = make(FakeClock())
    ready(d)
    result = await d.get_list(PREFIX, opts)
    if where == "cache":
        assert store.calls == [] and result.served_from == "cache"
        assert (
            len(result.items) == 2 and result.resource_version == 10 and not result.continue_token
        )
    else:
        assert store.calls == [where]


async def test_get_routing_and_not_found() -> None:
    d, store, _ = make(FakeClock())
    ready(d)
    assert (await d.get(f"{PREFIX}default/a", GetOptions())).key.endswith("from-etcd")
    assert store.calls == ["get:"]
    got = await d.get(f"{PREFIX}default/a", GetOptions(resource_version="0"))
    assert got.resource_version == 5
    with pytest.raises(NotFound):
        await d.get(f"{PREFIX}default/zz", GetOptions(resource_version="0"))
    empty = await d.get(f"{PREFIX}default/zz", GetOptions("0", ignore_not_found=True))
    assert empty.data == b"{}"
    with pytest.raises(InvalidResourceVersion):
        await d.get(f"{PREFIX}default/a", GetOptions(resource_version="x"))


async def test_not_ready_rv0_falls_to_etcd_others_wait_then_429() -> None:
    clock = FakeClock()
    d, store, _ = make(clock)
    await d.get_list(PREFIX, lo("0"))
    await d.get(f"{PREFIX}default/a", GetOptions(resource_version="0"))
    assert store.calls == ["list:0", "get:0"]
    waiting = asyncio.ensure_future(d.get_list(PREFIX, lo("5")))
    await asyncio.sleep(0)
    clock.advance(3.1)
    with pytest.raises(NotReady) as err:
        await waiting
    assert err.value.message == "storage is (re)initializing"
    watching = asyncio.ensure_future(d.watch(PREFIX, lo("0")))
    await asyncio.sleep(0)
    ready(d)  # the cache became ready within the wait: served
    w = await watching
    await w.stop()


async def test_rv_n_waits_then_504() -> None:
    clock = FakeClock()
    d, _, _ = make(clock)
    ready(d, rv=10)
    waiting = asyncio.ensure_future(d.get_list(PREFIX, lo("12")))
    await asyncio.sleep(0)
    clock.advance(3.1)
    with pytest.raises(TooLargeResourceVersion) as err:
        await waiting
    assert err.value.message == "Too large resource version: 12, current: 10"


async def test_consistent_list_unsupported_etcd_falls_back() -> None:
    d, store, client = make(FakeClock(), version="3.5.1", gate=True)
    ready(d, rv=10)
    await d.get_list(PREFIX, lo())
    assert store.calls == ["list:"]
    assert d.consistent_reads[Outcome.FALLBACK_UNSUPPORTED] == 1
    assert client.progress_requests == 0


async def test_consistent_list_fresh_cache_needs_no_progress() -> None:
    d, store, _ = make(FakeClock(), version="3.5.1", gate=True)
    ready(d, rv=20)  # already at etcd's revision
    result = await d.get_list(PREFIX, lo())
    assert result.served_from == "cache" and store.calls == []
    assert d.consistent_reads[Outcome.FRESH] == 1


async def test_consistent_list_with_progress_then_timeout_fallback() -> None:
    clock = FakeClock()
    d, store, client = make(clock, version="3.5.16", gate=True)
    ready(d, rv=10)
    d.cacher._spawn(d.cacher.progress.run(), "progress")  # only the progress requester
    try:
        served = asyncio.ensure_future(d.get_list(PREFIX, lo()))
        for _ in range(20):
            await asyncio.sleep(0)
        assert client.progress_requests >= 1
        d.cacher.cache.update_resource_version(20)  # the progress notification arrives
        assert (await served).served_from == "cache"
        assert d.consistent_reads[Outcome.PROGRESS] == 1
        client.revision = 30
        late = asyncio.ensure_future(d.get_list(PREFIX, lo()))
        for _ in range(20):
            await asyncio.sleep(0)
        clock.advance(3.1)
        assert (await late).served_from == "etcd"
        assert d.consistent_reads[Outcome.FALLBACK_TIMEOUT] == 1
        assert store.calls == ["list:"]
    finally:
        await d.cacher.close()
