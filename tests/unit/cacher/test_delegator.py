"""The delegator's routing table (upstream ``cacher/delegator.go``, classic +
ConsistentListFromCache), with a
fake etcd3 store and a cacher driven by hand (no I/O, fake clock)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from cacher import CacheDelegator, CacherConfig, Outcome
from cacher.cacher import Cacher
from cacher.clock import FakeClock
from etcdclient.types import Status
from storage.continue_token import encode_continue
from storage.errors import (
    InvalidContinue,
    InvalidResourceVersion,
    NotFound,
    NotReady,
    TooLargeResourceVersion,
)
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


def make(
    clock: FakeClock,
    *,
    version: str = "3.5.1",
    gate: bool = False,
    snapshots: bool = True,
    compact_revision: Callable[[], int] | None = None,
) -> tuple[CacheDelegator, FakeStore, FakeStore]:
    """The delegator over a fake store, which also plays etcd's revision and version."""
    store = FakeStore(20, version)
    cfg = CacherConfig(
        clock=clock,
        consistent_list_from_cache=gate,
        list_from_cache_snapshot=snapshots,
        compact_revision=compact_revision,
    )
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


def token(rv: int, after: str = "a") -> str:
    return encode_continue(f"{PREFIX}default/{after}\x00", PREFIX, rv)


# (options, where): "list:<rv>" = etcd was asked; (n, paged) = the cache answered n
# items at RV 10, with a continue token when paged. The cache holds a and b, primed at
# RV 10 (its one snapshot). Upstream's ShouldDelegateList, 1.34+, gate off.
ROUTES: list[tuple[ListOptions, str | tuple[int, bool]]] = [
    (lo(), "list:"),  # RV unset: etcd (ConsistentListFromCache off)
    (lo("0"), (2, False)),
    (lo("0", limit=1), (2, False)),  # limit ignored at RV 0
    (lo("0", "NotOlderThan"), (2, False)),
    (lo("8"), (2, False)),  # RV=N without limit
    (lo("8", "NotOlderThan", limit=1), (1, True)),  # limit honoured
    (lo("8", limit=1), "list:8"),  # legacy exact, before the oldest snapshot
    (lo("10", limit=1), (1, True)),  # legacy exact, held
    (lo("8", "Exact"), "list:8"),
    (lo("10", "Exact"), (2, False)),
    (lo("12", "Exact"), "list:12"),  # not reached, no consistent reads: etcd
    (lo("", limit=1, token=token(10)), (1, False)),  # page 2 from the snapshot
    (lo("0", limit=1, token=token(10)), (1, False)),  # RV 0 with continue: ignored
    (lo("", limit=1, token=token(8)), "list:"),  # token older than the snapshots
    (lo("", limit=1, token=token(-1)), "list:"),  # "latest": a consistent read
]


@pytest.mark.parametrize(("opts", "where"), ROUTES)
async def test_list_routing(opts: ListOptions, where: str | tuple[int, bool]) -> None:
    d, store, _ = make(FakeClock())
    ready(d)
    result = await d.get_list(PREFIX, opts)
    if isinstance(where, str):
        assert store.calls == [where]
        return
    count, paged = where
    assert store.calls == [] and result.served_from == "cache"
    assert len(result.items) == count and result.resource_version == 10
    assert bool(result.continue_token) == paged
    if paged:
        assert result.continue_token == token(10)
        assert result.remaining_item_count == 1


async def test_without_snapshots_exact_and_continue_go_to_etcd() -> None:
    d, store, _ = make(FakeClock(), snapshots=False)
    ready(d)
    for opts in (lo("10", "Exact"), lo("10", limit=1), lo("", limit=1, token=token(10))):
        await d.get_list(PREFIX, opts)
    assert store.calls == ["list:10", "list:10", "list:"]


async def test_continue_with_an_rv_is_a_400() -> None:
    d, store, _ = make(FakeClock())
    ready(d)
    with pytest.raises(InvalidContinue) as err:
        await d.get_list(PREFIX, lo("10", limit=1, token=token(10)))
    assert err.value.message == "specifying resource version is not allowed when using continue"
    assert store.calls == []


async def test_pages_read_the_state_at_the_tokens_revision() -> None:
    """Changes after page 1 are not seen by page 2; once the snapshot is gone (etcd
    compacted its revision) the page comes from etcd."""
    compacted = 0
    d, store, _ = make(FakeClock(), compact_revision=lambda: compacted)
    ready(d)
    first = await d.get_list(PREFIX, lo("", "", limit=1, token=token(10, after="")))
    assert [o.key for o in first.items] == [f"{PREFIX}default/a"]
    cache = d.cacher.cache
    cache.process(f"{PREFIX}default/b", None, 11)  # b deleted, c added after page 1
    cache.process(f"{PREFIX}default/c", pod("c", 12), 12)
    second = await d.get_list(PREFIX, lo(limit=5, token=first.continue_token))
    assert [o.key for o in second.items] == [f"{PREFIX}default/b"]
    assert second.resource_version == 10 and not second.continue_token
    latest = await d.get_list(PREFIX, lo("12", "Exact"))
    assert [o.key.rsplit("/", 1)[1] for o in latest.items] == ["a", "c"]
    compacted = 11
    await d.get_list(PREFIX, lo(limit=5, token=first.continue_token))
    assert store.calls == ["list:"]
    assert (await d.get_list(PREFIX, lo("11", "Exact"))).served_from == "cache"


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


async def test_consistent_list_with_progress_then_timeout_fallback(
    caplog: pytest.LogCaptureFixture,
) -> None:
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
        # the slow path is not silent: one warning naming the revisions
        warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
        assert any("waited for revision 30 but the cache is at 20" in m for m in warned)
    finally:
        await d.cacher.close()
