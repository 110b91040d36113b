"""An update or delete starts from the watch cache's copy instead of an etcd read
(upstream's cachedExistingObject, passed down by ``CacheDelegator``): the etcd calls
each makes, counted on a real client over a real etcd. What a stale copy
must still end in is the shared storage suite's (``test_guaranteed_update_*suggestion*``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from etcdclient import EtcdClient
from etcdclient.types import GetResult, TxnResult
from lab.etcd import EtcdCluster
from storage.etcd3 import Etcd3Store
from storage.interfaces import JSONObject
from tests.integration.test_cacher_support import cached_store, pod

pytestmark = pytest.mark.etcd


class _CountingClient(EtcdClient):
    """A real client that counts the single-key reads and guarded writes sent."""

    def __init__(self, endpoints: list[str]) -> None:
        super().__init__(endpoints, request_timeout=5.0)
        self.gets = 0
        self.puts = 0
        self.deletes = 0

    async def get(self, key: bytes, **kw: Any) -> GetResult:
        self.gets += 1
        return await super().get(key, **kw)

    async def optimistic_put(
        self, key: bytes, value: bytes, expected_mod_revision: int, *, lease: int = 0
    ) -> TxnResult:
        self.puts += 1
        return await super().optimistic_put(key, value, expected_mod_revision, lease=lease)

    async def optimistic_delete(self, key: bytes, expected_mod_revision: int) -> TxnResult:
        self.deletes += 1
        return await super().optimistic_delete(key, expected_mod_revision)


@pytest.fixture
async def client(etcd: EtcdCluster) -> AsyncIterator[_CountingClient]:
    async with _CountingClient(etcd.endpoints) as c:
        yield c


async def _label(obj: JSONObject) -> JSONObject:
    obj["metadata"]["labels"] = {"updated": "yes"}
    return obj


async def _same(obj: JSONObject) -> JSONObject:
    return obj


async def test_a_current_suggestion_saves_the_read(client: _CountingClient) -> None:
    """A current copy: the update is one guarded write and no read; an update that
    changes nothing reads etcd once to confirm it, and writes nothing."""
    store = Etcd3Store(client)
    key = f"/t-{uuid.uuid4().hex[:12]}/registry/pods/ns/a"
    created = await store.create(key, pod("a"))
    client.gets = client.puts = 0
    updated = await store.guaranteed_update(key, None, _label, cached_existing_object=created)
    assert (client.gets, client.puts) == (0, 1)
    assert updated.obj["metadata"]["labels"] == {"updated": "yes"}
    same = await store.guaranteed_update(key, None, _same, cached_existing_object=updated)
    assert same.resource_version == updated.resource_version
    assert (client.gets, client.puts) == (1, 1)
    await store.guaranteed_update(key, None, _label)  # no suggestion: read first
    assert (client.gets, client.puts) == (2, 1)


async def test_a_stale_suggestion_costs_a_lost_write(client: _CountingClient) -> None:
    """A stale copy: its write loses the compare-and-swap, whose answer carries etcd's
    object; the update is made again from it without a read of its own."""
    store = Etcd3Store(client)
    key = f"/t-{uuid.uuid4().hex[:12]}/registry/pods/ns/a"
    stale = await store.create(key, pod("a"))
    await store.guaranteed_update(key, None, _label)
    client.gets = client.puts = 0

    async def annotate(obj: JSONObject) -> JSONObject:
        obj["metadata"]["annotations"] = {"n": "1"}
        return obj

    updated = await store.guaranteed_update(key, None, annotate, cached_existing_object=stale)
    assert (client.gets, client.puts) == (0, 2)
    assert updated.obj["metadata"]["labels"] == {"updated": "yes"}  # the current object's
    assert updated.obj["metadata"]["annotations"] == {"n": "1"}


async def test_the_cache_passes_its_copy(client: _CountingClient) -> None:
    """``CacheDelegator.guaranteed_update`` hands the store the watch cache's copy: an
    update of an object the cache holds reads nothing from etcd."""
    prefix = f"/t-{uuid.uuid4().hex[:12]}/registry"
    async with cached_store(client, prefix) as cached:
        key = f"{prefix}/pods/ns/a"
        created = await cached.create(key, pod("a"))
        assert await cached.cacher.get(key, created.resource_version) is not None
        client.gets = client.puts = 0
        updated = await cached.guaranteed_update(key, None, _label)
        assert (client.gets, client.puts) == (0, 1)
        assert updated.obj["metadata"]["labels"] == {"updated": "yes"}
        absent = f"{prefix}/pods/ns/b"  # not in the cache: etcd is read
        made = await cached.guaranteed_update(absent, None, lambda _: _label(pod("b")),
                                              ignore_not_found=True)  # fmt: skip
        assert made.resource_version > updated.resource_version
        assert (client.gets, client.puts) == (1, 2)


async def test_back_to_back_updates_never_start_from_a_stale_copy(
    client: _CountingClient,
) -> None:
    """Updates of one object back to back, each sent as the previous one is answered
    (a client's loop): the cache has often not seen the last write yet, and its copy
    would be the version just replaced. Until it has, etcd is read: every ``try_update``
    starts from the previous update's result, none is wasted on a stale guess."""
    prefix = f"/t-{uuid.uuid4().hex[:12]}/registry"
    async with cached_store(client, prefix) as cached:
        key = f"{prefix}/pods/ns/a"
        last = await cached.create(key, pod("a"))
        seen: list[str] = []

        async def increment(obj: JSONObject) -> JSONObject:
            seen.append(obj["metadata"]["resourceVersion"])
            annotations = obj["metadata"].setdefault("annotations", {})
            annotations["n"] = str(int(annotations.get("n", "0")) + 1)
            return obj

        answered = [str(last.resource_version)]
        for _ in range(20):
            last = await cached.guaranteed_update(key, None, increment)
            answered.append(str(last.resource_version))
        assert seen == answered[:-1]
        assert last.obj["metadata"]["annotations"]["n"] == "20"


async def test_a_delete_from_the_cache_copy_reads_nothing(client: _CountingClient) -> None:
    """The cache's copy of a pod it holds: the delete is one guarded delete, no read;
    what it returns is the deleted object at the deletion revision."""
    prefix = f"/t-{uuid.uuid4().hex[:12]}/registry"
    async with cached_store(client, prefix) as cached:
        key = f"{prefix}/pods/ns/a"
        created = await cached.create(key, pod("a", labels={"v": "1"}))
        assert await cached.cacher.get(key, created.resource_version) is not None
        client.gets = client.deletes = 0
        deleted = await cached.delete(key)
        assert (client.gets, client.deletes) == (0, 1)
        assert deleted.obj["metadata"]["labels"] == {"v": "1"}
        assert deleted.resource_version > created.resource_version
