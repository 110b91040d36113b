"""Property: random bytes and almost-valid objects written straight into etcd while
watchers run never stop a valid object from reaching every cache and every watcher.

Each example writes a random sequence of values (valid pods, and values that cannot be
decoded or whose labels cannot be read) to a few keys of a fresh prefix, with two watch
caches over that prefix and, on one of them, a watch of everything and a watch with a
label selector. Then: every watcher saw exactly the valid writes it selects, in order,
and a DELETED event where a corrupt write replaced a version the cache held; each cache
holds, per key, the last write if it is valid (a corrupt write takes the key's last
valid version out: what a re-list would find); and both caches reached the last
revision.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from etcdclient import EtcdClient
from lab.etcd import EtcdCluster
from storage import codec
from storage.errors import CorruptObject
from storage.interfaces import Watcher, WatchEvent
from tests.integration.test_cacher_support import cached_store, opts, pod

pytestmark = pytest.mark.etcd

NAMES = ("a", "b", "c")
INTS = st.integers(-(2**63), 2**63 - 1)  # what JSON encoders (orjson) take
Write = tuple[str, bytes, bool, bool]  # (name, value, valid, selected by keep=yes)


def _decodes(value: bytes) -> bool:
    """Whether storage reads ``value`` as an object (JSON, a YAML mapping, protobuf)."""
    try:
        codec.decode_object("/k", value)
    except CorruptObject:
        return False
    return True


@st.composite
def writes(draw: st.DrawFn) -> Write:
    name = draw(st.sampled_from(NAMES))
    keep = draw(st.booleans())
    valid = orjson.dumps(pod(name, labels={"keep": "yes" if keep else "no"}))
    kind = draw(st.sampled_from(["valid", "valid", "bytes", "protobuf", "truncated",
                                 "labels", "metadata", "not-object"]))  # fmt: skip
    if kind == "valid":
        return name, valid, True, keep
    if kind == "bytes":
        junk = draw(st.binary(max_size=40).filter(lambda b: not _decodes(b)))
        return name, junk, False, False
    if kind == "protobuf":
        junk = draw(st.binary(max_size=40).filter(lambda b: not _decodes(b"k8s\x00" + b)))
        return name, b"k8s\x00" + junk, False, False
    if kind == "truncated":
        return name, valid[: draw(st.integers(1, len(valid) - 1))], False, False
    if kind == "labels":
        bad = draw(st.one_of(INTS, st.booleans(), st.none(), st.lists(INTS)))
        return name, orjson.dumps(pod(name, labels={"keep": bad})), False, False  # type: ignore[dict-item]
    if kind == "metadata":
        obj = pod(name)
        obj["metadata"] = draw(st.one_of(st.lists(INTS), st.text(), INTS))
        return name, orjson.dumps(obj), False, False
    return name, orjson.dumps(draw(st.one_of(st.lists(INTS), st.text()))), False, False


async def collect_until(watcher: Watcher, last_rv: int) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    async with asyncio.timeout(15):
        async for event in watcher:
            events.append(event)
            if event.resource_version >= last_rv:
                return events
    raise AssertionError(f"watch ended early: {events}")


def deleted(events: list[WatchEvent]) -> list[tuple[str, int]]:
    return [
        (orjson.loads(e.data)["metadata"]["name"], e.resource_version)
        for e in events
        if e.type == "DELETED"
    ]


def seen(events: list[WatchEvent]) -> list[tuple[str, int]]:
    return [
        (orjson.loads(e.data)["metadata"]["name"], e.resource_version)
        for e in events
        if e.type != "DELETED"
    ]


async def scenario(endpoints: list[str], ops: list[Write]) -> None:
    prefix = f"/t-{uuid.uuid4().hex[:12]}/registry"
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(EtcdClient(endpoints))
        one = await stack.enter_async_context(cached_store(client, prefix))
        two = await stack.enter_async_context(cached_store(client, prefix))
        keys = one.cacher.resource_prefix
        start = one.cacher.resource_version
        everything = await one.watch(keys, opts(str(start)))
        selected = await one.watch(keys, opts(str(start), label="keep=yes"))
        valid: list[tuple[str, int, bool]] = []
        last_valid: dict[str, int] = {}
        gone: list[tuple[str, int]] = []  # corrupt writes over a version the cache held
        for name, value, ok, keep in ops:
            rev = await client.put(f"{keys}ns/{name}".encode(), value)
            if ok:
                valid.append((name, rev, keep))
                last_valid[name] = rev
            elif last_valid.pop(name, None) is not None:
                gone.append((name, rev))
        # a last valid write everyone must see marks the end of the sequence
        end = await client.put(
            f"{keys}ns/end".encode(), orjson.dumps(pod("end", labels={"keep": "yes"}))
        )
        valid.append(("end", end, True))
        last_valid["end"] = end
        got_all = await collect_until(everything, end)
        got_selected = await collect_until(selected, end)
        assert seen(got_all) == [(n, r) for n, r, _ in valid]
        assert deleted(got_all) == gone
        assert seen(got_selected) == [(n, r) for n, r, keep in valid if keep]
        for cache in (one, two):
            await cache.cacher.wait_until_fresh(end)
            listed = await cache.get_list(keys, opts("0"))
            held = {
                orjson.loads(s.data)["metadata"]["name"]: s.resource_version for s in listed.items
            }
            assert held == last_valid
            cache.readiness_check()
        await everything.stop()
        await selected.stop()


@settings(max_examples=12, deadline=None, derandomize=True)
@given(ops=st.lists(writes(), min_size=1, max_size=20))
def test_valid_objects_reach_every_cache_and_watcher(etcd: EtcdCluster, ops: list[Write]) -> None:
    asyncio.run(scenario(list(etcd.endpoints), ops))
