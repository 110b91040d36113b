"""Model-based test of the cache's watch streams (seeded random, real etcd).

Random creates, updates (labels, node) and deletes run while watchers with different
scopes and selectors stream concurrently; some watchers start mid-way from a write's RV
and some stop and resume from the last RV they saw. Every watcher's concatenated stream
must equal the etcd history after its start RV filtered through its selector with the
``convertToWatchEvent`` transitions: same order, same RVs, same objects, no gap, no duplicate.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import orjson
import pytest

from cacher import CacheDelegator
from etcdclient import EtcdClient
from storage.fields import attrs_func
from storage.interfaces import JSONObject, StoredObject, WatchEvent
from tests.integration.test_cacher_support import cached_store, opts, pod

pytestmark = pytest.mark.etcd

ATTRS = attrs_func("pods")
NAMES = [(ns, f"p{i}") for ns in ("ns1", "ns2") for i in range(5)]


@dataclass(frozen=True)
class Spec:
    """A watcher: key scope (namespace or one name) and selectors."""

    label: str = ""
    field: str = ""
    namespace: str = ""
    name: str = ""

    def key(self, prefix: str) -> str:
        if self.name:
            return f"{prefix}{self.namespace}/{self.name}"
        return f"{prefix}{self.namespace}/" if self.namespace else prefix

    def matches(self, obj: JSONObject | None) -> bool:
        if obj is None:
            return False
        labels, fields = ATTRS(obj)
        meta = obj["metadata"]
        if self.namespace and meta["namespace"] != self.namespace:
            return False
        if self.name and meta["name"] != self.name:
            return False
        for term in filter(None, self.label.split(",")):
            k, v = term.split("=")
            if labels.get(k) != v:
                return False
        for term in filter(None, self.field.split(",")):
            if "!=" in term:
                k, v = term.split("!=")
                if fields.get(k) == v:
                    return False
            else:
                k, v = term.split("=")
                if fields.get(k) != v:
                    return False
        return True


SPECS = [
    Spec(),
    Spec(namespace="ns1"),
    Spec(label="app=x"),
    Spec(field="spec.nodeName=n1"),  # node-indexed
    Spec(label="app=x", field="spec.nodeName!=n2"),
    Spec(namespace="ns2", name="p3"),
]


@dataclass
class Write:
    """One etcd change: the object before and after (None = absent), at ``rv``."""

    rv: int
    key: tuple[str, str]
    before: JSONObject | None
    after: JSONObject | None
    deleted: JSONObject | None = None  # last state at the deletion RV


def expected_stream(
    spec: Spec, writes: list[Write], start_rv: int
) -> list[tuple[str, int, JSONObject]]:
    out: list[tuple[str, int, JSONObject]] = []
    for w in writes:
        if w.rv <= start_rv:
            continue
        was, now = spec.matches(w.before), spec.matches(w.after)
        if w.after is None:
            if was:
                assert w.deleted is not None
                out.append(("DELETED", w.rv, w.deleted))
        elif now:
            out.append(("MODIFIED" if was else "ADDED", w.rv, w.after))
        elif was:
            assert w.before is not None
            old = orjson.loads(orjson.dumps(w.before))
            old["metadata"]["resourceVersion"] = str(w.rv)
            out.append(("DELETED", w.rv, old))
    return out


@dataclass
class Consumer:
    """One logical watch: several physical watches, each resumed from the last RV seen.

    ``segments``: after how many events each physical watch is stopped (then resumed)."""

    spec: Spec
    start_rv: int
    segments: list[int]
    got: list[WatchEvent] = field(default_factory=list)
    resumes: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)


async def follow(c: CacheDelegator, cons: Consumer) -> None:
    prefix = c.cacher.resource_prefix
    rv = cons.start_rv
    while True:
        spec = cons.spec
        w = await c.watch(
            spec.key(prefix),
            opts(str(rv), label=spec.label, field=spec.field, recursive=not spec.name),
        )
        stop_after = cons.segments.pop(0) if cons.segments else None
        n = 0
        try:
            async for ev in w:
                cons.got.append(ev)
                cons.changed.set()
                rv, n = ev.resource_version, n + 1
                if n == stop_after:
                    break
        finally:
            await w.stop()
        cons.resumes += 1


async def wait_for(cons: Consumer, n: int) -> None:
    async with asyncio.timeout(20):
        while len(cons.got) < n:
            cons.changed.clear()
            await cons.changed.wait()


async def random_write(
    c: CacheDelegator, rnd: random.Random, state: dict[tuple[str, str], JSONObject]
) -> Write | None:
    k = rnd.choice(NAMES)
    key = f"{c.cacher.resource_prefix}{k[0]}/{k[1]}"
    before = state.get(k)
    label, node = rnd.choice("xy"), rnd.choice(["n1", "n2", ""])
    stored: StoredObject
    if before is None:
        stored = await c.create(key, pod(k[1], k[0], labels={"app": label}, node=node))
        state[k] = stored.obj
        return Write(stored.resource_version, k, None, stored.obj)
    if rnd.random() < 0.25:
        stored = await c.delete(key)
        del state[k]
        return Write(stored.resource_version, k, before, None, stored.obj)

    async def change(o: JSONObject) -> JSONObject:
        o["metadata"]["labels"] = {"app": label}
        o["spec"]["nodeName"] = node
        return o

    stored = await c.guaranteed_update(key, None, change)
    if stored.resource_version == int(before["metadata"]["resourceVersion"]):
        return None  # nothing changed: no write, no event
    state[k] = stored.obj
    return Write(stored.resource_version, k, before, stored.obj)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_history_equals_every_watch_stream(
    client: EtcdClient, etcd_prefix: str, seed: int
) -> None:
    rnd = random.Random(seed)
    async with cached_store(client, etcd_prefix) as c:
        prefix = c.cacher.resource_prefix
        start = await c.create(f"{prefix}ns1/seed", pod("seed", "ns1"))
        writes = [Write(start.resource_version, ("ns1", "seed"), None, start.obj)]
        state: dict[tuple[str, str], JSONObject] = {}
        consumers: list[Consumer] = []
        tasks: list[asyncio.Task[None]] = []

        def launch(spec: Spec, rv: int) -> None:
            segments = [rnd.randint(1, 6) for _ in range(rnd.randint(0, 3))]
            consumers.append(Consumer(spec, rv, segments))
            tasks.append(asyncio.ensure_future(follow(c, consumers[-1])))

        for spec in SPECS:
            launch(spec, start.resource_version)
        for step in range(150):
            write = await random_write(c, rnd, state)
            if write is not None:
                writes.append(write)
                if step % 25 == 10:  # a watcher joining mid-way from this write's RV
                    launch(rnd.choice(SPECS), write.rv)
            if step % 7 == 0:
                await asyncio.sleep(0)  # let watchers run concurrently with the writes

        try:
            for cons in consumers:
                expected = expected_stream(cons.spec, writes, cons.start_rv)
                await wait_for(cons, len(expected))
                actual = [(e.type, e.resource_version, orjson.loads(e.data)) for e in cons.got]
                assert actual == expected, f"{cons.spec} from {cons.start_rv}"
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        assert sum(cons.resumes for cons in consumers) > 0
