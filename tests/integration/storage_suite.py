"""The storage test suite, run against every implementation of storage.interfaces.Interface
(the etcd3 store here, the cacher in its own module), after kube-apiserver's
``storage/testing/store_tests.go`` (RunTestCreate, RunTestGet, RunTestList,
RunTestGuaranteedUpdate, RunTestDelete, RunTestCount, RunTestWatch...).

Import the test functions into a test module that provides these fixtures:

- ``store``: the Interface under test, over a real etcd;
- ``key_prefix``: a resource prefix no other test uses, ending in ``/`` (e.g.
  ``/t-1a2b/registry/pods/``); objects are pod-shaped and stored at
  ``<key_prefix><namespace>/<name>``;
- ``store_kind``: ``"etcd3"`` or ``"cacher"`` — the few expectations that differ by
  design (a cacher's RV=0 list ignores the limit; etcd3's cost accounting) branch on it;
- ``compact``: ``async (revision) -> None`` compacting the etcd under ``store`` (only
  the ``test_compacted_*`` tests use it; provide it from a private etcd).

Every test isolates itself under ``key_prefix``; nothing sleeps: reads that must see a
write pass its resourceVersion.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest

from storage.continue_token import encode_continue
from storage.errors import (
    AlreadyExists,
    Expired,
    InvalidContinue,
    InvalidResourceVersion,
    NotFound,
    PreconditionFailed,
    TooLargeResourceVersion,
)
from storage.fields import attrs_func
from storage.interfaces import (
    GetOptions,
    Interface,
    JSONObject,
    ListOptions,
    ListResult,
    Preconditions,
    SelectionPredicate,
    StoredObject,
    Watcher,
    WatchEvent,
)
from storage.selectors import parse_field_selector, parse_label_selector

Compact = Callable[[int], Awaitable[None]]
EVENT_TIMEOUT = 10.0  # a failing test gives up after this; a passing one never waits it

# ----------------------------------------------------------------------------- helpers


def pod(
    name: str,
    namespace: str = "ns",
    *,
    labels: dict[str, str] | None = None,
    node: str = "",
    uid: str = "",
    phase: str = "",
    **spec: Any,
) -> JSONObject:
    """A Pod in ``namespace`` on ``node`` (``spec`` fields added), with ``status.phase``
    when ``phase`` is given."""
    meta: JSONObject = {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    obj: JSONObject = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}], **spec},
    }
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def key_of(key_prefix: str, name: str, namespace: str = "ns") -> str:
    return f"{key_prefix}{namespace}/{name}"


async def create(store: Interface, key_prefix: str, obj: JSONObject) -> StoredObject:
    meta = obj["metadata"]
    return await store.create(key_of(key_prefix, meta["name"], meta["namespace"]), obj)


async def seed(store: Interface, key_prefix: str, names: list[str]) -> list[StoredObject]:
    return [await create(store, key_prefix, pod(n)) for n in names]


def rv_of(stored: StoredObject) -> str:
    value: str = orjson.loads(stored.data)["metadata"]["resourceVersion"]
    return value


def names(result: ListResult) -> list[str]:
    return [s.obj["metadata"]["name"] for s in result.items]


def list_opts(
    rv: str = "",
    match: Any = "",
    *,
    limit: int = 0,
    token: str = "",
    label: str = "",
    field: str = "",
    bookmarks: bool = False,
    send_initial_events: bool | None = None,
    recursive: bool = True,
    timeout: float | None = None,
) -> ListOptions:
    """Options of a LIST or WATCH of pods, selectors given as their query strings."""
    pred = SelectionPredicate(
        label=parse_label_selector(label) if label else None,
        field=parse_field_selector(field) if field else None,
        get_attrs=attrs_func("pods"),
        limit=limit,
        continue_token=token,
    )
    return ListOptions(
        resource_version=rv,
        resource_version_match=match,
        predicate=pred,
        recursive=recursive,
        send_initial_events=send_initial_events,
        allow_watch_bookmarks=bookmarks,
        timeout_seconds=timeout,
    )


async def set_node(store: Interface, key: str, node: str) -> StoredObject:
    async def update(obj: JSONObject) -> JSONObject:
        obj["spec"]["nodeName"] = node
        return obj

    return await store.guaranteed_update(key, None, update)


async def list_all(store: Interface, key_prefix: str, opts: ListOptions) -> list[ListResult]:
    pages = [await store.get_list(key_prefix, opts)]
    while pages[-1].continue_token:
        pred = SelectionPredicate(
            label=opts.predicate.label,
            field=opts.predicate.field,
            get_attrs=opts.predicate.get_attrs,
            limit=opts.predicate.limit,
            continue_token=pages[-1].continue_token,
        )
        pages.append(await store.get_list(key_prefix, ListOptions(predicate=pred)))
        assert len(pages) < 100
    return pages


@contextlib.asynccontextmanager
async def watching(store: Interface, key_prefix: str, opts: ListOptions) -> AsyncIterator[Watcher]:
    watcher = await store.watch(key_prefix, opts)
    try:
        yield watcher
    finally:
        await watcher.stop()


async def next_events(watcher: Watcher, n: int, seconds: float = EVENT_TIMEOUT) -> list[WatchEvent]:
    """The next ``n`` events; TimeoutError if they do not all come within ``seconds``."""
    out: list[WatchEvent] = []
    it = aiter(watcher)
    async with asyncio.timeout(seconds):
        while len(out) < n:
            out.append(await anext(it))
    return out


def event_view(event: WatchEvent) -> tuple[str, str, int]:
    obj = orjson.loads(event.data)
    assert obj["metadata"]["resourceVersion"] == str(event.resource_version)
    return event.type, obj["metadata"]["name"], event.resource_version


# ----------------------------------------------------------------------------- create


async def test_create(store: Interface, key_prefix: str) -> None:
    stored = await create(store, key_prefix, pod("a"))
    assert stored.resource_version > 0
    assert rv_of(stored) == str(stored.resource_version)
    assert stored.key == key_of(key_prefix, "a")
    assert stored.obj["spec"]["containers"][0]["image"] == "busybox"
    got = await store.get(key_of(key_prefix, "a"), GetOptions())
    assert got.resource_version == stored.resource_version
    assert orjson.loads(got.data) == orjson.loads(stored.data)


async def test_create_existing_is_already_exists(store: Interface, key_prefix: str) -> None:
    await create(store, key_prefix, pod("a"))
    with pytest.raises(AlreadyExists):
        await create(store, key_prefix, pod("a"))


async def test_create_drops_selflink(store: Interface, key_prefix: str) -> None:
    obj = pod("a")
    obj["metadata"]["selfLink"] = "/api/v1/namespaces/ns/pods/a"
    stored = await create(store, key_prefix, obj)
    assert "selfLink" not in orjson.loads(stored.data)["metadata"]


# ----------------------------------------------------------------------------- get


async def test_get_at_every_resource_version(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    first = await create(store, key_prefix, pod("a"))
    second = await set_node(store, key, "n1")
    assert second.resource_version > first.resource_version
    # Not older than the update: must reflect it.
    got = await store.get(key, GetOptions(resource_version=str(second.resource_version)))
    assert got.resource_version == second.resource_version
    # Not older than the create: the update may or may not be visible (cache), never older.
    got = await store.get(key, GetOptions(resource_version=str(first.resource_version)))
    assert got.resource_version >= first.resource_version
    # Any: after the wait above, the newest state.
    got = await store.get(key, GetOptions(resource_version="0"))
    assert got.resource_version == second.resource_version
    assert got.obj["spec"]["nodeName"] == "n1"
    # Quorum read.
    got = await store.get(key, GetOptions())
    assert got.resource_version == second.resource_version


async def test_get_missing_is_not_found(store: Interface, key_prefix: str) -> None:
    with pytest.raises(NotFound):
        await store.get(key_of(key_prefix, "missing"), GetOptions())


async def test_get_too_large_resource_version(store: Interface, key_prefix: str) -> None:
    stored = await create(store, key_prefix, pod("a"))
    future = stored.resource_version + 1_000_000
    with pytest.raises(TooLargeResourceVersion) as err:
        await store.get(key_of(key_prefix, "a"), GetOptions(resource_version=str(future)))
    assert err.value.resource_version == future
    assert err.value.current >= stored.resource_version
    assert err.value.message.startswith(f"Too large resource version: {future}, current: ")


async def test_get_invalid_resource_version(store: Interface, key_prefix: str) -> None:
    await create(store, key_prefix, pod("a"))
    with pytest.raises(InvalidResourceVersion) as err:
        await store.get(key_of(key_prefix, "a"), GetOptions(resource_version="abc"))
    assert err.value.message == (
        'invalid resource version: resourceVersion: Invalid value: "abc": '
        'strconv.ParseUint: parsing "abc": invalid syntax'
    )


# ----------------------------------------------------------------------------- list


async def test_list_resource_version_modes(
    store: Interface, key_prefix: str, store_kind: str
) -> None:
    created = await seed(store, key_prefix, ["a", "b", "c"])
    updated = await set_node(store, key_of(key_prefix, "b"), "n1")
    latest = await store.get_list(key_prefix, list_opts())
    assert names(latest) == ["a", "b", "c"]
    assert latest.resource_version >= updated.resource_version
    assert [s.resource_version for s in latest.items] == [
        created[0].resource_version,
        updated.resource_version,
        created[2].resource_version,
    ]
    assert latest.continue_token == "" and latest.remaining_item_count is None

    not_older = await store.get_list(
        key_prefix, list_opts(str(updated.resource_version), "NotOlderThan")
    )
    assert names(not_older) == ["a", "b", "c"]
    assert not_older.resource_version >= updated.resource_version
    assert not_older.items[1].obj["spec"]["nodeName"] == "n1"

    legacy = await store.get_list(key_prefix, list_opts(str(updated.resource_version)))
    assert names(legacy) == ["a", "b", "c"]

    any_rv = await store.get_list(key_prefix, list_opts("0", limit=1))
    if store_kind == "cacher":
        assert names(any_rv) == ["a", "b", "c"]  # the cache ignores the limit for RV=0
        assert any_rv.continue_token == ""
    else:
        assert names(any_rv) == ["a"]
        assert any_rv.continue_token != ""
        assert any_rv.remaining_item_count == 2


async def test_list_exact_reads_history(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    first = await create(store, key_prefix, pod("a"))
    second = await set_node(store, key, "n1")
    deleted = await store.delete(key)
    at_first = await store.get_list(key_prefix, list_opts(str(first.resource_version), "Exact"))
    assert at_first.resource_version == first.resource_version
    assert [s.obj["spec"]["nodeName"] for s in at_first.items] == [""]
    assert at_first.items[0].resource_version == first.resource_version
    at_second = await store.get_list(key_prefix, list_opts(str(second.resource_version), "Exact"))
    assert [s.obj["spec"]["nodeName"] for s in at_second.items] == ["n1"]
    after = await store.get_list(key_prefix, list_opts(str(deleted.resource_version), "Exact"))
    assert list(after.items) == []
    # Legacy exact: RV=N with a limit reads at N too.
    legacy = await store.get_list(key_prefix, list_opts(str(first.resource_version), limit=5))
    assert legacy.resource_version == first.resource_version
    assert [s.obj["spec"]["nodeName"] for s in legacy.items] == [""]


async def test_list_too_large_resource_version(store: Interface, key_prefix: str) -> None:
    stored = await create(store, key_prefix, pod("a"))
    future = str(stored.resource_version + 1_000_000)
    with pytest.raises(TooLargeResourceVersion):
        await store.get_list(key_prefix, list_opts(future, "NotOlderThan"))


async def test_list_invalid_resource_version(store: Interface, key_prefix: str) -> None:
    with pytest.raises(InvalidResourceVersion, match=r"^invalid resource version: "):
        await store.get_list(key_prefix, list_opts("x1", limit=1))


async def test_list_pages_are_consistent_while_writes_go_on(
    store: Interface, key_prefix: str
) -> None:
    await seed(store, key_prefix, ["a", "b", "c", "d", "e"])
    first = await store.get_list(key_prefix, list_opts(limit=2))
    assert names(first) == ["a", "b"]
    assert first.remaining_item_count == 3
    assert first.continue_token
    # Writes after the first page must not show up in later pages.
    await create(store, key_prefix, pod("bb"))
    await set_node(store, key_of(key_prefix, "d"), "n9")
    await store.delete(key_of(key_prefix, "e"))
    pred = SelectionPredicate(limit=2, continue_token=first.continue_token)
    second = await store.get_list(key_prefix, ListOptions(predicate=pred))
    assert names(second) == ["c", "d"]
    assert second.resource_version == first.resource_version
    assert second.items[1].obj["spec"]["nodeName"] == ""
    assert second.remaining_item_count == 1
    pred = SelectionPredicate(limit=2, continue_token=second.continue_token)
    third = await store.get_list(key_prefix, ListOptions(predicate=pred))
    assert names(third) == ["e"]
    assert third.resource_version == first.resource_version
    assert third.continue_token == "" and third.remaining_item_count is None


async def test_list_limit_exactly_reached(store: Interface, key_prefix: str) -> None:
    await seed(store, key_prefix, ["a", "b"])
    pages = await list_all(store, key_prefix, list_opts(limit=2))
    assert [names(p) for p in pages] == [["a", "b"]]


async def test_list_continue_with_resource_version_is_rejected(
    store: Interface, key_prefix: str
) -> None:
    await seed(store, key_prefix, ["a", "b"])
    first = await store.get_list(key_prefix, list_opts(limit=1))
    with pytest.raises(InvalidContinue) as err:
        await store.get_list(key_prefix, list_opts("5", limit=1, token=first.continue_token))
    assert err.value.message == "specifying resource version is not allowed when using continue"
    # RV "0" with a continue token is ignored.
    second = await store.get_list(key_prefix, list_opts("0", limit=1, token=first.continue_token))
    assert names(second) == ["b"]


async def test_list_bad_continue_token(store: Interface, key_prefix: str) -> None:
    with pytest.raises(
        InvalidContinue, match=r"^invalid continue token: continue key is not valid"
    ):
        await store.get_list(key_prefix, list_opts(limit=1, token="not-a-token"))


async def test_list_label_selector_with_rare_matches_and_small_limit(
    store: Interface, key_prefix: str
) -> None:
    for i in range(30):
        labels = {"app": "rare"} if i in (7, 23) else {"app": "common"}
        await create(store, key_prefix, pod(f"p{i:02d}", labels=labels))
    pages = await list_all(store, key_prefix, list_opts(limit=1, label="app=rare"))
    assert [n for p in pages for n in names(p)] == ["p07", "p23"]
    assert all(len(p.items) <= 1 for p in pages)
    assert all(p.remaining_item_count is None for p in pages)
    assert len({p.resource_version for p in pages}) == 1
    every = await store.get_list(key_prefix, list_opts(label="app in (rare,common),app!=common"))
    assert names(every) == ["p07", "p23"]


async def test_list_field_selector(store: Interface, key_prefix: str, store_kind: str) -> None:
    for i in range(6):
        await create(store, key_prefix, pod(f"p{i}", node="n1" if i % 3 == 0 else "n2"))
    result = await store.get_list(key_prefix, list_opts(field="spec.nodeName=n1"))
    assert names(result) == ["p0", "p3"]
    negated = await store.get_list(key_prefix, list_opts(field="spec.nodeName!=n1"))
    assert names(negated) == ["p1", "p2", "p4", "p5"]
    if store_kind == "etcd3":
        assert result.served_from == "etcd"
        assert result.fetched == 6 and result.evaluated == 6


async def test_list_namespace_prefix(store: Interface, key_prefix: str) -> None:
    await create(store, key_prefix, pod("a", "ns1"))
    await create(store, key_prefix, pod("b", "ns2"))
    await create(store, key_prefix, pod("c", "ns1"))
    result = await store.get_list(f"{key_prefix}ns1/", list_opts())
    assert names(result) == ["a", "c"]


async def test_count(store: Interface, key_prefix: str) -> None:
    assert await store.count(key_prefix) == 0
    await seed(store, key_prefix, ["a", "b", "c"])
    assert await store.count(key_prefix) == 3


# ----------------------------------------------------------------------------- update


async def test_guaranteed_update(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    created = await create(store, key_prefix, pod("a"))
    seen: list[JSONObject] = []

    async def update(obj: JSONObject) -> JSONObject:
        seen.append(obj)
        obj["metadata"].setdefault("labels", {})["x"] = "1"
        return obj

    updated = await store.guaranteed_update(key, None, update)
    assert seen[0]["metadata"]["resourceVersion"] == str(created.resource_version)
    assert updated.resource_version > created.resource_version
    assert updated.obj["metadata"]["labels"] == {"x": "1"}
    got = await store.get(key, GetOptions())
    assert got.resource_version == updated.resource_version
    assert got.obj["metadata"]["labels"] == {"x": "1"}


async def test_guaranteed_update_without_change_writes_nothing(
    store: Interface, key_prefix: str
) -> None:
    key = key_of(key_prefix, "a")
    created = await create(store, key_prefix, pod("a"))

    async def same(obj: JSONObject) -> JSONObject:
        return obj

    result = await store.guaranteed_update(key, None, same)
    assert result.resource_version == created.resource_version
    assert orjson.loads(result.data) == orjson.loads(created.data)
    got = await store.get(key, GetOptions())
    assert got.resource_version == created.resource_version


async def test_guaranteed_update_retries_on_races(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "counter")
    await create(store, key_prefix, pod("counter"))

    async def increment(obj: JSONObject) -> JSONObject:
        await asyncio.sleep(0)  # let the other updaters read the same revision
        annotations = obj["metadata"].setdefault("annotations", {})
        annotations["n"] = str(int(annotations.get("n", "0")) + 1)
        return obj

    await asyncio.gather(*(store.guaranteed_update(key, None, increment) for _ in range(8)))
    got = await store.get(key, GetOptions())
    assert got.obj["metadata"]["annotations"]["n"] == "8"


async def test_guaranteed_update_preconditions(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    created = await create(store, key_prefix, pod("a", uid="A"))

    async def touch(obj: JSONObject) -> JSONObject:
        obj["spec"]["nodeName"] = "n1"
        return obj

    with pytest.raises(PreconditionFailed) as err:
        await store.guaranteed_update(key, Preconditions(uid="B"), touch)
    assert err.value.message == "Precondition failed: UID in precondition: B, UID in object meta: A"
    with pytest.raises(PreconditionFailed) as err:
        await store.guaranteed_update(key, Preconditions(resource_version="1"), touch)
    assert err.value.message == (
        "Precondition failed: ResourceVersion in precondition: 1, "
        f"ResourceVersion in object meta: {created.resource_version}"
    )
    ok = await store.guaranteed_update(
        key, Preconditions(uid="A", resource_version=str(created.resource_version)), touch
    )
    assert ok.obj["spec"]["nodeName"] == "n1"


async def test_guaranteed_update_not_found(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "new")

    async def make(obj: JSONObject) -> JSONObject:
        assert obj == {}
        return pod("new")

    with pytest.raises(NotFound):
        await store.guaranteed_update(key, None, make)
    created = await store.guaranteed_update(key, None, make, ignore_not_found=True)
    assert created.resource_version > 0
    got = await store.get(key, GetOptions(resource_version=str(created.resource_version)))
    assert got.obj["metadata"]["name"] == "new"


async def test_guaranteed_update_error_propagates(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    created = await create(store, key_prefix, pod("a"))

    async def refuse(obj: JSONObject) -> JSONObject:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        await store.guaranteed_update(key, None, refuse)
    got = await store.get(key, GetOptions())
    assert got.resource_version == created.resource_version


# ----------------------------------------------------------------------------- delete


async def test_delete_returns_last_state_at_deletion_revision(
    store: Interface, key_prefix: str
) -> None:
    key = key_of(key_prefix, "a")
    created = await create(store, key_prefix, pod("a", node="n1"))
    deleted = await store.delete(key)
    assert deleted.resource_version > created.resource_version
    assert rv_of(deleted) == str(deleted.resource_version)
    assert deleted.obj["spec"]["nodeName"] == "n1"
    with pytest.raises(NotFound):
        await store.get(key, GetOptions())
    with pytest.raises(NotFound):
        await store.delete(key)


async def test_delete_preconditions(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    created = await create(store, key_prefix, pod("a", uid="A"))
    with pytest.raises(PreconditionFailed) as err:
        await store.delete(key, Preconditions(uid="B"))
    assert err.value.message == "Precondition failed: UID in precondition: B, UID in object meta: A"
    with pytest.raises(PreconditionFailed):
        await store.delete(key, Preconditions(resource_version=str(created.resource_version + 99)))
    deleted = await store.delete(
        key, Preconditions(uid="A", resource_version=str(created.resource_version))
    )
    assert deleted.obj["metadata"]["uid"] == "A"


async def test_delete_validation_hook(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    await create(store, key_prefix, pod("a"))
    seen: list[JSONObject] = []

    async def refuse(obj: JSONObject) -> None:
        seen.append(obj)
        raise PermissionError("not allowed")

    with pytest.raises(PermissionError):
        await store.delete(key, None, refuse)
    assert seen[0]["metadata"]["name"] == "a"
    await store.get(key, GetOptions())  # still there

    async def allow(obj: JSONObject) -> None:
        return None

    await store.delete(key, None, allow)
    with pytest.raises(NotFound):
        await store.get(key, GetOptions())


# ----------------------------------------------------------------------------- watch


async def test_watch_from_resource_version(store: Interface, key_prefix: str) -> None:
    before = await create(store, key_prefix, pod("a"))
    async with watching(store, key_prefix, list_opts(str(before.resource_version))) as w:
        b = await create(store, key_prefix, pod("b"))
        a2 = await set_node(store, key_of(key_prefix, "a"), "n1")
        gone = await store.delete(key_of(key_prefix, "b"))
        events = await next_events(w, 3)
    assert [event_view(e) for e in events] == [
        ("ADDED", "b", b.resource_version),
        ("MODIFIED", "a", a2.resource_version),
        ("DELETED", "b", gone.resource_version),
    ]
    assert events[1].data == a2.data or orjson.loads(events[1].data) == orjson.loads(a2.data)


async def test_watch_from_zero_sends_current_state(store: Interface, key_prefix: str) -> None:
    created = await seed(store, key_prefix, ["a", "b"])
    # Make sure a cache has seen both before asking for "any" state.
    await store.get(
        key_of(key_prefix, "b"), GetOptions(resource_version=str(created[1].resource_version))
    )
    async with watching(store, key_prefix, list_opts("0")) as w:
        initial = await next_events(w, 2)
        c = await create(store, key_prefix, pod("c"))
        live = await next_events(w, 1)
    assert sorted(event_view(e) for e in initial) == [
        ("ADDED", "a", created[0].resource_version),
        ("ADDED", "b", created[1].resource_version),
    ]
    assert [event_view(e) for e in live] == [("ADDED", "c", c.resource_version)]


async def test_watch_with_selector_sends_enter_and_leave(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    start = await create(store, key_prefix, pod("a", node="n2"))
    opts = list_opts(str(start.resource_version), field="spec.nodeName=n1")
    async with watching(store, key_prefix, opts) as w:
        enter = await set_node(store, key, "n1")  # enters: ADDED

        async def relabel(obj: JSONObject) -> JSONObject:
            obj["metadata"]["labels"] = {"x": "y"}
            return obj

        stay = await store.guaranteed_update(key, None, relabel)  # stays: MODIFIED
        leave = await set_node(store, key, "n3")  # leaves: DELETED (old object, new RV)
        await set_node(store, key, "n4")  # outside: nothing
        await create(store, key_prefix, pod("other", node="n2"))  # outside: nothing
        marker = await create(store, key_prefix, pod("z", node="n1"))
        final = await store.delete(key_of(key_prefix, "z"))
        events = await next_events(w, 5)
    assert [event_view(e) for e in events] == [
        ("ADDED", "a", enter.resource_version),
        ("MODIFIED", "a", stay.resource_version),
        ("DELETED", "a", leave.resource_version),
        ("ADDED", "z", marker.resource_version),
        ("DELETED", "z", final.resource_version),
    ]
    left = orjson.loads(events[2].data)
    assert left["spec"]["nodeName"] == "n1"  # the last state that matched


async def test_watch_stop_ends_iteration(store: Interface, key_prefix: str) -> None:
    start = await create(store, key_prefix, pod("a"))
    watcher = await store.watch(key_prefix, list_opts(str(start.resource_version)))
    await watcher.stop()
    await watcher.stop()  # idempotent
    async with asyncio.timeout(EVENT_TIMEOUT):
        assert [e async for e in watcher] == []


# ----------------------------------------------------------------------------- compaction


async def test_compacted_exact_list_is_expired(
    store: Interface, key_prefix: str, compact: Compact
) -> None:
    first = await create(store, key_prefix, pod("a"))
    latest = await set_node(store, key_of(key_prefix, "a"), "n1")
    await compact(latest.resource_version)
    with pytest.raises(Expired) as err:
        await store.get_list(key_prefix, list_opts(str(first.resource_version), "Exact"))
    assert err.value.message == "The resourceVersion for the provided list is too old."
    assert err.value.continue_token == ""


async def test_compacted_continue_is_expired_with_fresh_token(
    store: Interface, key_prefix: str, compact: Compact
) -> None:
    await seed(store, key_prefix, ["a", "b", "c"])
    first = await store.get_list(key_prefix, list_opts(limit=1))
    await create(store, key_prefix, pod("bb"))
    latest = await set_node(store, key_of(key_prefix, "c"), "n1")
    await compact(latest.resource_version)
    pred = SelectionPredicate(limit=1, continue_token=first.continue_token)
    with pytest.raises(Expired) as err:
        await store.get_list(key_prefix, ListOptions(predicate=pred))
    assert err.value.message.startswith(
        "The provided continue parameter is too old to display a consistent list result."
    )
    assert err.value.continue_token
    # The fresh token continues after "a" at the latest revision (inconsistent by design).
    pages = await list_all(store, key_prefix, list_opts(limit=1, token=err.value.continue_token))
    assert [n for p in pages for n in names(p)] == ["b", "bb", "c"]
    assert pages[0].resource_version >= latest.resource_version


# ----------------------------------------------------------------------------- ported tables
# Ported from store_tests.go (RunTestList's RV x match x limit table, RunTestGetListNonRecursive,
# the "/pods/a" vs "/pods/ab" prefix case) and watcher_tests.go (RunTestWatchFromZero,
# RunTestWatchDeleteEventObjectHaveLatestRV, RunTestNamespaceScopedWatch, RunWatchSemantics).


async def test_list_table_rv_match_limit(
    store: Interface, key_prefix: str, store_kind: str
) -> None:
    """Every RV x match x limit combination: the items, the list RV, the error. (The
    cacher ignores the limit at RV=0 only, as kube-apiserver 1.34+; it serves Exact and
    the pages after the first from its snapshots.)"""
    _, b, c = await seed(store, key_prefix, ["a", "b", "c"])
    gone = await store.delete(key_of(key_prefix, "b"))
    a2 = await set_node(store, key_of(key_prefix, "a"), "n1")
    latest = a2.resource_version
    await store.get(key_of(key_prefix, "a"), GetOptions(resource_version=str(latest)))
    future = str(latest + 1_000_000)
    now = ["a", "c"]
    # (rv, match) -> (names, rv check) ; rv check: "eq" = list RV == rv, "ge" = >= rv
    table: list[tuple[str, str, list[str], str, type[Exception] | None]] = [
        ("", "", now, "ge-latest", None),
        ("0", "", now, "ge-0", None),
        ("0", "NotOlderThan", now, "ge-0", None),
        (str(b.resource_version), "NotOlderThan", now, "ge", None),
        (str(b.resource_version), "Exact", ["a", "b"], "eq", None),
        (str(gone.resource_version), "Exact", ["a", "c"], "eq", None),
        (str(c.resource_version), "Exact", ["a", "b", "c"], "eq", None),
        (str(latest), "NotOlderThan", now, "ge", None),
        (str(latest), "Exact", now, "eq", None),
        (future, "NotOlderThan", [], "", TooLargeResourceVersion),
        (future, "Exact", [], "", TooLargeResourceVersion),
    ]
    for rv, match, want, check, error in table:
        for limit in (0, 1, 2, 5):
            case = f"rv={rv!r} match={match!r} limit={limit}"
            opts = list_opts(rv, match, limit=limit)
            if error is not None:
                if limit and match != "Exact":
                    continue  # a cacher waits its 3 s freshness bound per try: once is enough
                with pytest.raises(error):
                    await store.get_list(key_prefix, opts)
                continue
            pages = await list_all(store, key_prefix, opts)
            assert [n for p in pages for n in names(p)] == want, case
            if store_kind == "cacher" and rv == "0":
                assert len(pages) == 1, case
            else:
                assert all(limit == 0 or len(p.items) <= limit for p in pages), case
            assert len({p.resource_version for p in pages}) == 1, case
            got = pages[0].resource_version
            if check == "eq":
                assert got == int(rv), case
            elif check == "ge":
                assert got >= int(rv), case
            elif check == "ge-latest":
                assert got >= latest, case
            for p in pages:
                for item in p.items:
                    assert rv_of(item) == str(item.resource_version), case
                    assert check != "eq" or item.resource_version <= int(rv), case
    # Legacy exact: RV=N (no match) with a limit reads at N.
    pages = await list_all(store, key_prefix, list_opts(str(b.resource_version), limit=1))
    assert [n for p in pages for n in names(p)] == ["a", "b"]
    assert {p.resource_version for p in pages} == {b.resource_version}
    # RV=N (no match) without a limit: not older than N.
    legacy = await store.get_list(key_prefix, list_opts(str(b.resource_version)))
    assert names(legacy) == now and legacy.resource_version >= latest


async def test_list_non_recursive_single_key(store: Interface, key_prefix: str) -> None:
    a = await create(store, key_prefix, pod("a"))
    await create(store, key_prefix, pod("ab"))
    nested = await create(store, key_prefix, pod("a", "a"))  # "<prefix>a/a": under "a/"
    await store.get(nested.key, GetOptions(resource_version=str(nested.resource_version)))
    key = key_of(key_prefix, "a")
    for rv in ("", "0", str(a.resource_version)):
        opts = dataclasses.replace(list_opts(rv), recursive=False)
        got = await store.get_list(key, opts)
        assert names(got) == ["a"], rv
        assert got.items[0].key == key
        missing = await store.get_list(key_of(key_prefix, "zz"), opts)
        assert list(missing.items) == [], rv
        assert missing.resource_version >= a.resource_version


async def test_list_prefix_excludes_sibling_with_longer_name(
    store: Interface, key_prefix: str
) -> None:
    await create(store, key_prefix, pod("x", "a"))
    await create(store, key_prefix, pod("y", "ab"))
    last = await create(store, key_prefix, pod("z", "a"))
    await store.get(last.key, GetOptions(resource_version=str(last.resource_version)))
    for rv in ("", "0", str(last.resource_version)):
        for prefix in (f"{key_prefix}a", f"{key_prefix}a/"):
            got = await store.get_list(prefix, list_opts(rv))
            assert names(got) == ["x", "z"], (rv, prefix)
    paged = await list_all(store, f"{key_prefix}a", list_opts(limit=1))
    assert [n for p in paged for n in names(p)] == ["x", "z"]
    async with watching(store, f"{key_prefix}a", list_opts(str(last.resource_version))) as w:
        await create(store, key_prefix, pod("w", "ab"))
        mine = await create(store, key_prefix, pod("w", "a"))
        (event,) = await next_events(w, 1)
    assert event_view(event) == ("ADDED", "w", mine.resource_version)
    assert orjson.loads(event.data)["metadata"]["namespace"] == "a"


async def test_watch_from_zero_after_deletions(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    await create(store, key_prefix, pod("a"))
    await create(store, key_prefix, pod("b"))
    await store.delete(key_of(key_prefix, "b"))
    updated = await set_node(store, key, "n1")
    await store.get(key, GetOptions(resource_version=str(updated.resource_version)))
    async with watching(store, key_prefix, list_opts("0")) as w:
        (initial,) = await next_events(w, 1)
        again = await set_node(store, key, "n2")
        gone = await store.delete(key)
        live = await next_events(w, 2)
    assert event_view(initial) == ("ADDED", "a", updated.resource_version)
    assert [event_view(e) for e in live] == [
        ("MODIFIED", "a", again.resource_version),
        ("DELETED", "a", gone.resource_version),
    ]


async def test_watch_delete_event_object_has_latest_rv(store: Interface, key_prefix: str) -> None:
    key = key_of(key_prefix, "a")
    created = await create(store, key_prefix, pod("a", node="n1"))
    for recursive, watched in ((True, key_prefix), (False, key)):
        opts = dataclasses.replace(list_opts(str(created.resource_version)), recursive=recursive)
        async with watching(store, watched, opts) as w:
            gone = await store.delete(key)
            (event,) = await next_events(w, 1)
        assert event.type == "DELETED"
        obj = orjson.loads(event.data)
        assert obj["metadata"]["resourceVersion"] == str(gone.resource_version)
        assert event.resource_version == gone.resource_version > created.resource_version
        assert obj["spec"]["nodeName"] == "n1"
        created = await create(store, key_prefix, pod("a", node="n1"))


async def test_namespace_scoped_watch(store: Interface, key_prefix: str) -> None:
    start = await create(store, key_prefix, pod("seed", "ns0"))
    rv = str(start.resource_version)
    by_prefix = watching(store, f"{key_prefix}ns1/", list_opts(rv))
    by_field = watching(store, key_prefix, list_opts(rv, field="metadata.namespace=ns1"))
    async with by_prefix as w1, by_field as w2:
        await create(store, key_prefix, pod("a", "ns2"))
        a1 = await create(store, key_prefix, pod("a", "ns1"))
        await set_node(store, key_of(key_prefix, "a", "ns2"), "n1")
        b1 = await set_node(store, key_of(key_prefix, "a", "ns1"), "n1")
        await store.delete(key_of(key_prefix, "a", "ns2"))
        c1 = await store.delete(key_of(key_prefix, "a", "ns1"))
        for w in (w1, w2):
            events = await next_events(w, 3)
            assert [event_view(e) for e in events] == [
                ("ADDED", "a", a1.resource_version),
                ("MODIFIED", "a", b1.resource_version),
                ("DELETED", "a", c1.resource_version),
            ]
            assert {orjson.loads(e.data)["metadata"]["namespace"] for e in events} == {"ns1"}


# RunWatchSemantics: sendInitialEvents x allowWatchBookmarks x resourceVersion.
_WATCH_SEMANTICS = [
    (sie, bookmarks, rv)
    for sie in (None, True, False)
    for bookmarks in (False, True)
    for rv in ("unset", "0", "before", "current")
]


async def test_watch_semantics_table(store: Interface, key_prefix: str) -> None:
    """Per case, three objects exist (created after "before", at or before "current");
    the watch must deliver: the initial ADDED (any order) when sendInitialEvents=true
    or (unset and RV unset/0); the history ADDED in order for RV=before without
    sendInitialEvents=true; one initial-events-end BOOKMARK (at the list's RV, no
    earlier than the last object) iff sendInitialEvents=true and bookmarks allowed;
    then the live event, and nothing else."""
    for i, (sie, bookmarks, rv_kind) in enumerate(_WATCH_SEMANTICS):
        case = f"sendInitialEvents={sie} allowWatchBookmarks={bookmarks} rv={rv_kind}"
        ns = f"c{i}"
        before = await store.current_resource_version()
        made = [await create(store, key_prefix, pod(n, ns)) for n in ("p1", "p2", "p3")]
        last = made[-1].resource_version
        await store.get(key_of(key_prefix, "p3", ns), GetOptions(resource_version=str(last)))
        rv = {"unset": "", "0": "0", "before": str(before), "current": str(last)}[rv_kind]
        opts = dataclasses.replace(
            list_opts(rv, "NotOlderThan" if sie is not None and rv else ""),
            send_initial_events=sie,
            allow_watch_bookmarks=bookmarks,
        )
        added = [("ADDED", s.obj["metadata"]["name"], s.resource_version) for s in made]
        initial = sie is True or (sie is None and rv_kind in ("unset", "0"))
        replayed = not initial and rv_kind == "before"
        async with watching(store, f"{key_prefix}{ns}/", opts) as w:
            got: list[WatchEvent] = []
            if initial or replayed:
                got += await next_events(w, 3)
            if sie is True and bookmarks:
                got += await next_events(w, 1)
            live = await create(store, key_prefix, pod("p4", ns))
            got += await next_events(w, 1)
        views = [event_view(e) if e.type != "BOOKMARK" else None for e in got]
        if initial:
            assert sorted(v for v in views[:3] if v) == added, case
        elif replayed:
            assert views[:3] == added, case
        if sie is True and bookmarks:
            mark = got[-2]
            assert mark.type == "BOOKMARK", case
            meta = orjson.loads(mark.data)["metadata"]
            assert meta["annotations"] == {"k8s.io/initial-events-end": "true"}, case
            assert meta["resourceVersion"] == str(mark.resource_version), case
            assert last <= mark.resource_version < live.resource_version, case
        assert views[-1] == ("ADDED", "p4", live.resource_version), case
        expected_count = (3 if initial or replayed else 0) + (sie is True and bookmarks) + 1
        assert len(got) == expected_count, case


async def test_list_continue_table(store: Interface, key_prefix: str) -> None:
    """RunTestList's limit/continue cases: exact tokens, remainingItemCount, rv -1 tokens
    (consistent read at the latest revision), and invalid tokens."""
    a, b, c, d = await seed(store, key_prefix, ["a", "b", "c", "d"])
    u = await set_node(store, key_of(key_prefix, "a"), "n1")

    def token(after: str, rv: int) -> str:
        return encode_continue(key_of(key_prefix, after) + "\x00", key_prefix, rv)

    # (rv, match, limit, token) -> (names, list RV (None: >= latest), token, remaining)
    table: list[tuple[str, str, int, str, list[str], int | None, str, int | None]] = [
        (
            str(b.resource_version),
            "Exact",
            1,
            "",
            ["a"],
            b.resource_version,
            token("a", b.resource_version),
            1,
        ),
        (
            str(d.resource_version),
            "Exact",
            2,
            "",
            ["a", "b"],
            d.resource_version,
            token("b", d.resource_version),
            2,
        ),
        (
            str(d.resource_version),
            "Exact",
            4,
            "",
            ["a", "b", "c", "d"],
            d.resource_version,
            "",
            None,
        ),
        (
            str(u.resource_version),
            "Exact",
            1,
            "",
            ["a"],
            u.resource_version,
            token("a", u.resource_version),
            3,
        ),
        ("", "", 1, token("a", b.resource_version), ["b"], b.resource_version, "", None),
        (
            "",
            "",
            1,
            token("a", d.resource_version),
            ["b"],
            d.resource_version,
            token("b", d.resource_version),
            2,
        ),
        ("", "", 4, token("b", c.resource_version), ["c"], c.resource_version, "", None),
        ("", "", 0, token("a", -1), ["b", "c", "d"], None, "", None),
        ("", "", 2, token("a", -1), ["b", "c"], None, "latest", 1),
    ]
    for rv, match, limit, tok, want, want_rv, want_token, remaining in table:
        case = f"rv={rv!r} match={match!r} limit={limit} token={tok!r}"
        got = await store.get_list(key_prefix, list_opts(rv, match, limit=limit, token=tok))
        assert names(got) == want, case
        if want_rv is None:
            assert got.resource_version >= u.resource_version, case
        else:
            assert got.resource_version == want_rv, case
        if want_token == "latest":
            want_token = token(want[-1], got.resource_version)
        assert got.continue_token == want_token, case
        assert got.remaining_item_count == remaining, case
    # The exact version of the updated object is served at its own revision.
    at_c = await store.get_list(key_prefix, list_opts(str(c.resource_version), "Exact"))
    assert at_c.items[0].resource_version == a.resource_version

    bad = [
        encode_continue(key_prefix, key_prefix, d.resource_version),  # empty start key
        token("a", 0),  # no resource version
    ]
    for tok in bad:
        with pytest.raises(InvalidContinue):
            await store.get_list(key_prefix, list_opts(limit=1, token=tok))
    with pytest.raises(InvalidResourceVersion):
        await store.get_list(key_prefix, list_opts("-1"))


async def test_list_filter_pages(store: Interface, key_prefix: str) -> None:
    """RunTestList's filter cases: a page is full when it reaches the limit (a token
    follows even if nothing else matches); a page that reaches the end has no token."""
    await seed(store, key_prefix, ["a", "b", "c", "d", "e"])
    table = [
        ("metadata.name=a", 1, ["a"], True),
        ("metadata.name=a", 2, ["a"], False),
        ("metadata.name=a", 5, ["a"], False),
        ("metadata.name=e", 1, ["e"], False),
        ("metadata.name!=c", 2, ["a", "b"], True),
        ("metadata.name!=c", 4, ["a", "b", "d", "e"], False),
        ("metadata.name=zz", 2, [], False),
    ]
    for field, limit, want, more in table:
        got = await store.get_list(key_prefix, list_opts(limit=limit, field=field))
        assert names(got) == want, (field, limit)
        assert bool(got.continue_token) == more, (field, limit)
        assert got.remaining_item_count is None, (field, limit)


async def test_get_table(store: Interface, key_prefix: str) -> None:
    """RunTestGet: RV 0 may be any past state; RV N (not older than N) never older than
    N; MaxInt64 is TooLargeResourceVersion; a missing key is NotFound, or an empty object
    with ignore_not_found."""
    key = key_of(key_prefix, "a")
    created = await create(store, key_prefix, pod("a"))
    updated = await set_node(store, key, "n1")
    other = await create(store, key_prefix, pod("b"))
    for rv in (str(updated.resource_version), str(other.resource_version), ""):
        got = await store.get(key, GetOptions(resource_version=rv))
        assert got.resource_version == updated.resource_version, rv
    got = await store.get(key, GetOptions(resource_version=str(created.resource_version)))
    assert got.resource_version in (created.resource_version, updated.resource_version)
    got = await store.get(key, GetOptions(resource_version="0", ignore_not_found=True))
    assert got.resource_version in (0, created.resource_version, updated.resource_version)
    with pytest.raises(TooLargeResourceVersion):
        await store.get(key, GetOptions(resource_version=str(2**63 - 1)))
    missing = key_of(key_prefix, "missing")
    for rv in ("", "0", str(other.resource_version)):
        with pytest.raises(NotFound):
            await store.get(missing, GetOptions(resource_version=rv))
        empty = await store.get(missing, GetOptions(resource_version=rv, ignore_not_found=True))
        assert empty.obj == {}, rv


async def test_delete_with_conflicting_update_retries(store: Interface, key_prefix: str) -> None:
    """RunTestDeleteWithConflict: an update lands between the delete's read and its
    write; the delete re-reads, validates again, and returns the updated object."""
    key = key_of(key_prefix, "a")
    await create(store, key_prefix, pod("a"))
    seen: list[JSONObject] = []
    updated: list[StoredObject] = []

    async def validate(obj: JSONObject) -> None:
        seen.append(obj)
        if len(seen) == 1:
            updated.append(await set_node(store, key, "n1"))

    deleted = await store.delete(key, None, validate)
    assert len(seen) == 2 and len(updated) == 1
    assert seen[1]["spec"]["nodeName"] == "n1"
    assert deleted.obj["spec"]["nodeName"] == "n1"
    assert deleted.resource_version > updated[0].resource_version
    with pytest.raises(NotFound):
        await store.get(key, GetOptions())


async def test_delete_precondition_checked_on_the_latest_state(
    store: Interface, key_prefix: str
) -> None:
    """RunTestPreconditionalDeleteWithOnlySuggestionPass: preconditions and validation
    are checked against the stored object, not an older copy."""
    key = key_of(key_prefix, "a")
    await create(store, key_prefix, pod("a", uid="myUID"))

    async def new_uid(obj: JSONObject) -> JSONObject:
        obj["metadata"]["uid"] = "otherUID"
        return obj

    updated = await store.guaranteed_update(key, None, new_uid)
    with pytest.raises(PreconditionFailed):
        await store.delete(key, Preconditions(uid="myUID"))
    got = await store.get(key, GetOptions())
    assert got.resource_version == updated.resource_version
    deleted = await store.delete(key, Preconditions(uid="otherUID"))
    assert deleted.obj["metadata"]["uid"] == "otherUID"


async def test_get_list_recursive_prefix_table(store: Interface, key_prefix: str) -> None:
    """RunTestGetListRecursivePrefix: keys that are prefixes of each other ("foo" and
    "foobar"), recursive or not, for Exact, consistent and RV=0 lists."""
    foo = await create(store, key_prefix, pod("foo", "test-ns"))
    foobar = await create(store, key_prefix, pod("foobar", "test-ns"))
    other = await create(store, key_prefix, pod("baz", "test-ns2"))
    last = other.resource_version
    await store.get(other.key, GetOptions(resource_version=str(last)))
    cases = [
        (key_prefix, False, []),
        (key_prefix, True, ["foo", "foobar", "baz"]),
        (f"{key_prefix}test-ns/", False, []),
        (f"{key_prefix}test-ns/", True, ["foo", "foobar"]),
        (foo.key, False, ["foo"]),
        (foo.key, True, []),
        (foobar.key, False, ["foobar"]),
        (foobar.key, True, []),
    ]
    for rv, match in ((str(last), "Exact"), ("", ""), ("0", "NotOlderThan")):
        for key, recursive, want in cases:
            opts = dataclasses.replace(list_opts(rv, match), recursive=recursive)
            got = await store.get_list(key, opts)
            assert names(got) == want, (rv, match, key, recursive)
            assert got.resource_version > 0


async def test_get_list_non_recursive_table(store: Interface, key_prefix: str) -> None:
    """RunTestGetListNonRecursive: one key at every RV x match, with a selector."""
    key = key_of(key_prefix, "foo")
    prev = await create(store, key_prefix, pod("foo"))

    async def annotate(obj: JSONObject) -> JSONObject:
        obj["metadata"]["annotations"] = {"version": "second"}
        return obj

    cur = await store.guaranteed_update(key, None, annotate)
    await create(store, key_prefix, pod("other"))  # the prefix moves past the object

    def opts(rv: str, match: Any = "", field: str = "") -> ListOptions:
        return dataclasses.replace(list_opts(rv, match, field=field), recursive=False)

    any_of = {0, prev.resource_version, cur.resource_version}
    for rv, match in (("0", ""), ("0", "NotOlderThan")):
        got = await store.get_list(key, opts(rv, match))
        assert {i.resource_version for i in got.items} <= any_of
    exact = {
        ("", ""): cur,
        (str(cur.resource_version), ""): cur,
        (str(cur.resource_version), "NotOlderThan"): cur,
        (str(cur.resource_version), "Exact"): cur,
        (str(prev.resource_version), "Exact"): prev,
    }
    for (rv, match), want in exact.items():
        got = await store.get_list(key, opts(rv, match))
        assert [i.resource_version for i in got.items] == [want.resource_version], (rv, match)
        assert got.resource_version > 0
    got = await store.get_list(key, opts(str(prev.resource_version), "NotOlderThan"))
    assert got.items[0].resource_version in (prev.resource_version, cur.resource_version)
    with pytest.raises(TooLargeResourceVersion):
        await store.get_list(key, opts(str(2**63 - 1)))
    for k, rv in ((key_of(key_prefix, "missing"), ""), (key, str(cur.resource_version))):
        got = await store.get_list(k, opts(rv, field="metadata.name!=foo"))
        assert list(got.items) == []


async def test_count_excludes_sibling_prefix(store: Interface, key_prefix: str) -> None:
    """RunTestCount: counting "<p>abc" must not include "<p>abcdef/..."."""
    for i in range(3):
        await create(store, key_prefix, pod(f"foo-{i}", "abc"))
    for i in range(2):
        await create(store, key_prefix, pod(f"foo-{i}", "abcdef"))
    assert await store.count(f"{key_prefix}abc") == 3
    assert await store.count(f"{key_prefix}abc/") == 3
    assert await store.count(key_prefix) == 5


async def test_list_continuation_with_filter(store: Interface, key_prefix: str) -> None:
    """RunTestListContinuationWithFilter / RunTestListContinuation: each page of a
    filtered paged list is full, at the first page's RV."""
    made = [await create(store, key_prefix, pod("foo", ns)) for ns in ("1", "3", "4")]
    await create(store, key_prefix, pod("bar", "2"))
    last = await create(store, key_prefix, pod("foo", "5"))
    opts = list_opts(limit=2, field="metadata.name!=bar")
    pages = await list_all(store, key_prefix, opts)
    got = [[(s.obj["metadata"]["namespace"], s.resource_version) for s in p.items] for p in pages]
    assert got == [
        [("1", made[0].resource_version), ("3", made[1].resource_version)],
        [("4", made[2].resource_version), ("5", last.resource_version)],
    ]
    assert {p.resource_version for p in pages} == {pages[0].resource_version}
    assert pages[0].resource_version >= last.resource_version
    assert pages[-1].continue_token == ""


async def test_namespace_scoped_list_table(store: Interface, key_prefix: str) -> None:
    """RunTestNamespaceScopedList: namespace prefix x field selectors (metadata.name,
    metadata.namespace, spec.nodeName incl. the cacher's index), for RV unset and 0."""
    placed = [("foo1", "ns1", "bar1"), ("foo2", "ns1", ""), ("foo1", "ns2", "bar2"),
              ("foo2", "ns2", "bar1"), ("foo1", "ns3", "bar2"), ("foo2", "ns3", "")]  # fmt: skip
    last = None
    for name, ns, node in placed:
        last = await create(store, key_prefix, pod(name, ns, node=node))
    assert last is not None
    await store.get(last.key, GetOptions(resource_version=str(last.resource_version)))
    cases: list[tuple[str, str, list[str]]] = [
        ("", "", ["ns1/foo1", "ns1/foo2", "ns2/foo1", "ns2/foo2", "ns3/foo1", "ns3/foo2"]),
        ("", "metadata.namespace=ns1", ["ns1/foo1", "ns1/foo2"]),
        ("", "spec.nodeName=bar1", ["ns1/foo1", "ns2/foo2"]),
        ("", "spec.nodeName!=bar1", ["ns1/foo2", "ns2/foo1", "ns3/foo1", "ns3/foo2"]),
        ("", "metadata.name=foo1", ["ns1/foo1", "ns2/foo1", "ns3/foo1"]),
        ("", "metadata.name=foo1,metadata.namespace=ns2", ["ns2/foo1"]),
        ("", "metadata.name=foo1,spec.nodeName=bar1", ["ns1/foo1"]),
        ("", "spec.nodeName!=bar1,metadata.name=foo1", ["ns2/foo1", "ns3/foo1"]),
        ("ns1", "", ["ns1/foo1", "ns1/foo2"]),
        ("ns1", "metadata.namespace=ns1", ["ns1/foo1", "ns1/foo2"]),
        ("ns1", "metadata.namespace=ns2", []),
        ("ns2", "spec.nodeName=bar2", ["ns2/foo1"]),
        ("ns2", "spec.nodeName!=bar2", ["ns2/foo2"]),
        ("ns1", "metadata.name=foo1", ["ns1/foo1"]),
        ("ns2", "metadata.name=foo2,metadata.namespace=ns2,spec.nodeName=bar1", ["ns2/foo2"]),
        ("ns3", "spec.nodeName!=bar2,metadata.name=foo1", []),
    ]
    for rv in ("", "0", str(last.resource_version)):
        for ns, field, want in cases:
            prefix = f"{key_prefix}{ns}/" if ns else key_prefix
            got = await store.get_list(prefix, list_opts(rv, field=field))
            seen = [
                f"{s.obj['metadata']['namespace']}/{s.obj['metadata']['name']}" for s in got.items
            ]
            assert seen == want, (rv, ns, field)


async def test_guaranteed_update_with_suggestion_and_conflict(
    store: Interface, key_prefix: str
) -> None:
    """RunTestGuaranteedUpdateWithSuggestionAndConflict: a stale suggestion whose
    try_update fails is tried again on etcd's current object; a current one's failure
    stands (try_update called at most twice: a store may ignore the suggestion)."""
    key = key_of(key_prefix, "foo")
    original = await create(store, key_prefix, pod("foo"))

    async def generation(n: int, obj: JSONObject) -> JSONObject:
        obj["metadata"]["generation"] = n
        return obj

    second = await store.guaranteed_update(key, None, lambda o: generation(2, o))
    conflicts: list[int] = []

    async def third(obj: JSONObject) -> JSONObject:
        if obj["metadata"].get("generation") != 2:
            conflicts.append(1)
            assert len(conflicts) == 1, "a second conflict: etcd's object was never read"
            raise ValueError("conflict: a stale object")
        return await generation(3, obj)

    updated = await store.guaranteed_update(key, None, third, cached_existing_object=original)
    assert updated.obj["metadata"]["generation"] == 3
    assert updated.resource_version > second.resource_version
    attempts: list[int] = []

    async def refuse(obj: JSONObject) -> JSONObject:
        attempts.append(obj["metadata"]["generation"])
        raise ValueError("validation or admission error")

    with pytest.raises(ValueError, match="admission"):
        await store.guaranteed_update(key, None, refuse, cached_existing_object=updated)
    assert 1 <= len(attempts) <= 2 and attempts[-1] == 3


async def test_guaranteed_update_stale_suggestion_preconditions(
    store: Interface, key_prefix: str
) -> None:
    """Preconditions are judged on the current object, never on a stale suggestion:
    the pod was deleted and made again with another uid after the suggested copy."""
    key = key_of(key_prefix, "a")
    stale = await create(store, key_prefix, pod("a", uid="A"))
    await store.delete(key)
    current = await create(store, key_prefix, pod("a", uid="B"))
    rv = str(current.resource_version)

    async def touch(obj: JSONObject) -> JSONObject:
        obj["spec"]["nodeName"] = "n1"
        return obj

    with pytest.raises(PreconditionFailed) as err:
        await store.guaranteed_update(
            key, Preconditions(uid="A"), touch, cached_existing_object=stale
        )
    assert err.value.message == "Precondition failed: UID in precondition: A, UID in object meta: B"
    with pytest.raises(PreconditionFailed) as err:
        await store.guaranteed_update(
            key, Preconditions(resource_version=rv_of(stale)), touch, cached_existing_object=stale
        )
    assert err.value.message.endswith(f"ResourceVersion in object meta: {rv}")
    ok = await store.guaranteed_update(
        key, Preconditions(uid="B", resource_version=rv), touch, cached_existing_object=stale
    )
    assert ok.obj["metadata"]["uid"] == "B"
    assert ok.obj["spec"]["nodeName"] == "n1"
    assert ok.resource_version > current.resource_version


async def test_guaranteed_update_stale_suggestion_unchanged(
    store: Interface, key_prefix: str
) -> None:
    """An update that changes nothing of a stale suggestion may change etcd's object:
    it is written (on top of the current object), not answered from the stale copy."""
    key = key_of(key_prefix, "a")
    stale = await create(store, key_prefix, pod("a", labels={"v": "1"}))

    async def label(value: str, obj: JSONObject) -> JSONObject:
        obj["metadata"]["labels"] = {"v": value}
        return obj

    current = await store.guaranteed_update(key, None, lambda o: label("2", o))
    back = await store.guaranteed_update(
        key, None, lambda o: label("1", o), cached_existing_object=stale
    )
    assert back.resource_version > current.resource_version
    got = await store.get(key, GetOptions())
    assert got.resource_version == back.resource_version
    assert got.obj["metadata"]["labels"] == {"v": "1"}
    same = await store.guaranteed_update(
        key, None, lambda o: label("1", o), cached_existing_object=back
    )
    assert same.resource_version == back.resource_version  # current and unchanged: no write


async def test_guaranteed_update_stale_suggestion_loses_the_race(
    store: Interface, key_prefix: str
) -> None:
    """A write computed from a stale suggestion fails its compare-and-swap and is made
    again from etcd's object: no update is lost."""
    key = key_of(key_prefix, "counter")
    stale = await create(store, key_prefix, pod("counter"))
    seen: list[str] = []

    async def increment(obj: JSONObject) -> JSONObject:
        annotations = obj["metadata"].setdefault("annotations", {})
        seen.append(annotations.get("n", "0"))
        annotations["n"] = str(int(annotations.get("n", "0")) + 1)
        return obj

    for _ in range(3):
        await store.guaranteed_update(key, None, increment)
    seen.clear()
    final = await store.guaranteed_update(key, None, increment, cached_existing_object=stale)
    assert final.obj["metadata"]["annotations"]["n"] == "4"
    assert seen[-1] == "3"


async def test_delete_with_stale_suggestion(store: Interface, key_prefix: str) -> None:
    """A delete from a stale suggestion (upstream's conditionalDelete with
    cachedExistingObject) judges preconditions and validation on the current object
    and returns the object as it was deleted."""
    key = key_of(key_prefix, "a")
    stale = await create(store, key_prefix, pod("a", uid="A", labels={"v": "1"}))
    await store.delete(key)
    current = await create(store, key_prefix, pod("a", uid="B", labels={"v": "2"}))
    with pytest.raises(PreconditionFailed) as err:
        await store.delete(key, Preconditions(uid="A"), cached_existing_object=stale)
    assert err.value.message == "Precondition failed: UID in precondition: A, UID in object meta: B"
    validated: list[str] = []

    async def refuse_v1(obj: JSONObject) -> None:
        validated.append(obj["metadata"]["labels"]["v"])
        if obj["metadata"]["labels"]["v"] == "1":
            raise ValueError("v1 may not be deleted")

    deleted = await store.delete(
        key, Preconditions(uid="B"), refuse_v1, cached_existing_object=stale
    )
    assert validated[-1] == "2"
    assert deleted.obj["metadata"]["uid"] == "B"
    assert deleted.resource_version > current.resource_version
    with pytest.raises(NotFound):
        await store.get(key, GetOptions())


async def test_delete_with_stale_suggestion_returns_the_current_object(
    store: Interface, key_prefix: str
) -> None:
    """The stale copy's delete loses its compare-and-swap; what is deleted and returned
    is etcd's current object."""
    key = key_of(key_prefix, "a")
    stale = await create(store, key_prefix, pod("a"))

    async def label(obj: JSONObject) -> JSONObject:
        obj["metadata"]["labels"] = {"v": "2"}
        return obj

    await store.guaranteed_update(key, None, label)
    deleted = await store.delete(key, cached_existing_object=stale)
    assert deleted.obj["metadata"]["labels"] == {"v": "2"}


async def test_guaranteed_update_table(store: Interface, key_prefix: str) -> None:
    """RunTestGuaranteedUpdate: a change writes (new RV); the same data, or the same
    data with a selfLink, writes nothing (same RV, no selfLink); UID match/mismatch;
    a missing key is NotFound, or created with ignore_not_found."""
    key = key_of(key_prefix, "foo")
    created = await create(store, key_prefix, pod("foo", uid="A"))
    rv = created.resource_version

    def setting(annotations: dict[str, str] | None, self_link: bool = False) -> Any:
        async def update(obj: JSONObject) -> JSONObject:
            if annotations is None:
                obj["metadata"].pop("annotations", None)
            else:
                obj["metadata"]["annotations"] = annotations
            if self_link:
                obj["metadata"]["selfLink"] = "testlink"
            return obj

        return update

    same = await store.guaranteed_update(key, None, setting(None))
    assert same.resource_version == rv
    linked = await store.guaranteed_update(key, None, setting(None, self_link=True))
    assert linked.resource_version == rv
    assert "selfLink" not in linked.obj["metadata"]
    uid_ok = await store.guaranteed_update(key, Preconditions(uid="A"), setting(None))
    assert uid_ok.resource_version == rv
    with pytest.raises(PreconditionFailed):
        await store.guaranteed_update(key, Preconditions(uid="B"), setting({"v": "1"}))
    changed = await store.guaranteed_update(key, None, setting({"v": "2"}, self_link=True))
    assert changed.resource_version > rv
    assert changed.obj["metadata"]["annotations"] == {"v": "2"}
    assert "selfLink" not in orjson.loads(changed.data)["metadata"]
    got = await store.get(key, GetOptions(resource_version=str(changed.resource_version)))
    assert "selfLink" not in got.obj["metadata"]


async def test_guaranteed_update_conflict_calls_update_again(
    store: Interface, key_prefix: str
) -> None:
    """RunTestGuaranteedUpdateWithConflict: the second updater read the old state, lost
    the race, and is called again with the winner's state."""
    key = key_of(key_prefix, "foo")
    await create(store, key_prefix, pod("foo"))
    second_entered = asyncio.Event()
    first_done = asyncio.Event()
    seen: list[str] = []

    async def first(obj: JSONObject) -> JSONObject:
        await second_entered.wait()
        obj["metadata"]["labels"] = {"by": "first"}
        return obj

    async def second(obj: JSONObject) -> JSONObject:
        seen.append(obj["metadata"].get("labels", {}).get("by", ""))
        if len(seen) == 1:
            second_entered.set()
            await first_done.wait()
        obj["metadata"]["labels"] = {"by": "second"}
        return obj

    async def run_first() -> StoredObject:
        try:
            return await store.guaranteed_update(key, None, first)
        finally:
            first_done.set()

    won, final = await asyncio.gather(run_first(), store.guaranteed_update(key, None, second))
    assert seen == ["", "first"]
    assert final.resource_version > won.resource_version
    assert final.obj["metadata"]["labels"] == {"by": "second"}


def _labelled(name: str, ns: str, *, select: bool, node: str = "") -> JSONObject:
    return pod(name, ns, labels={"select": "true"} if select else None, node=node)


async def test_watch_table_recursive_and_single_key(store: Interface, key_prefix: str) -> None:
    """watcher_tests.go testWatch, recursive and not: create -> ADDED; entering the
    selector -> ADDED; update -> MODIFIED; leaving it -> DELETED (old object, new RV);
    label filtering; a write under the sibling namespace "<ns>-bad" is never seen."""
    steps_by_case: list[tuple[str, str, list[tuple[JSONObject | None, str]]]] = [
        ("", "create", [(pod("foo"), "ADDED")]),
        ("spec.nodeName=bar", "enter", [(pod("foo"), ""), (pod("foo", node="bar"), "ADDED")]),
        ("", "update", [(pod("foo"), "ADDED"), (pod("foo", node="bar"), "MODIFIED")]),
        ("spec.nodeName!=bar", "leave",
         [(pod("foo"), "ADDED"), (pod("foo", node="bar"), "DELETED")]),
        ("label:select=true", "filter", [
            (_labelled("foo", "", select=True), "ADDED"),
            (_labelled("foo", "", select=False), "DELETED"),
            (_labelled("foo", "", select=True), "ADDED"),
            (_labelled("foo", "", select=True, node="bar"), "MODIFIED"),
            (None, "DELETED"),
        ]),
    ]  # fmt: skip
    for recursive in (True, False):
        for selector, name, steps in steps_by_case:
            ns = f"{name}-{recursive}"
            key = key_of(key_prefix, "foo", ns)
            watch_key = f"{key_prefix}{ns}" if recursive else key
            label = selector.removeprefix("label:") if selector.startswith("label:") else ""
            field = "" if label else selector
            start = await store.get_list(watch_key, list_opts(label=label, field=field))
            opts = dataclasses.replace(
                list_opts(str(start.resource_version), label=label, field=field),
                recursive=recursive,
            )
            async with watching(store, watch_key, opts) as w:
                await create(store, key_prefix, pod("foo", f"{ns}-bad"))
                prev: StoredObject | None = None
                expected: list[tuple[str, str, int, bytes]] = []
                for obj, kind in steps:
                    if obj is None:
                        out = await store.delete(key)
                    else:
                        obj["metadata"]["namespace"] = ns
                        body = obj

                        async def put(_: JSONObject, body: JSONObject = body) -> JSONObject:
                            return body

                        out = await store.guaranteed_update(key, None, put, ignore_not_found=True)
                    if kind:
                        shown = out if kind != "DELETED" or prev is None else prev
                        expected.append((kind, ns, out.resource_version, shown.data))
                    prev = out
                events = await next_events(w, len(expected))
            case = (recursive, name)
            for event, (kind, ns_, rv, data) in zip(events, expected, strict=True):
                obj = orjson.loads(event.data)
                assert (event.type, obj["metadata"]["namespace"], event.resource_version) == (
                    kind,
                    ns_,
                    rv,
                ), case
                want = orjson.loads(data)
                want["metadata"]["resourceVersion"] = str(rv)
                assert obj == want, case


async def test_watch_list_bookmark_has_the_global_rv(store: Interface, key_prefix: str) -> None:
    """RunWatchSemanticInitialEventsExtended / RunWatchListMatchSingle: the initial
    events are only those in scope (namespace, field selector), in key order, and the
    initial-events-end BOOKMARK carries the revision of the last write to the resource,
    even when that write is out of scope."""
    made = [await create(store, key_prefix, pod(f"pod-{i}", "ns-foo")) for i in range(1, 6)]
    other = await create(store, key_prefix, pod("pod-1", "other-ns-foo"))
    for watch_key, field, want in (
        (f"{key_prefix}ns-foo", "", made),
        (key_prefix, "metadata.name=pod-3", [made[2]]),
        (f"{key_prefix}ns-foo/", "metadata.name=pod-3", [made[2]]),
    ):
        opts = dataclasses.replace(
            list_opts(field=field), send_initial_events=True, allow_watch_bookmarks=True
        )
        async with watching(store, watch_key, opts) as w:
            events = await next_events(w, len(want) + 1)
        assert [(e.type, e.resource_version) for e in events[:-1]] == [
            ("ADDED", s.resource_version) for s in want
        ], (watch_key, field)
        mark = events[-1]
        assert mark.type == "BOOKMARK"
        assert mark.resource_version >= other.resource_version
        assert mark.resource_version <= await store.current_resource_version()
        meta = orjson.loads(mark.data)["metadata"]
        assert meta == {
            "resourceVersion": str(mark.resource_version),
            "annotations": {"k8s.io/initial-events-end": "true"},
        }


async def test_watch_from_future_rv_starts_after_it(store: Interface, key_prefix: str) -> None:
    """cacher_whitebox TestStartingResourceVersion: a watch of one key from an RV ahead
    of every write delivers exactly the changes after that RV, in order."""
    key = key_of(key_prefix, "foo")
    created = await create(store, key_prefix, pod("foo"))
    start = created.resource_version + 5
    opts = dataclasses.replace(list_opts(str(start)), recursive=False)
    async with watching(store, key, opts) as w:
        updates = [await set_node(store, key, f"n{i}") for i in range(11)]
        later = [u for u in updates if u.resource_version > start]
        events = await next_events(w, len(later))
    assert later, "revisions advanced past the start"
    assert [(e.type, e.resource_version) for e in events] == [
        ("MODIFIED", u.resource_version) for u in later
    ]
