"""The etcd3 compactor (``storage/etcd3/compact.py``) against a real etcd: two API
servers sharing one etcd compact it once per round between them (the compact_rev_key
transaction), to the revision seen a round ago."""

from __future__ import annotations

import pytest

from etcdclient.errors import Compacted
from lab.etcd import EtcdCluster
from storage.etcd3.compact import COMPACT_REV_KEY, Compactor
from tests.integration.test_cacher_support import etcd_client

pytestmark = pytest.mark.etcd


async def test_two_compactors_compact_once_per_round(etcd_own: EtcdCluster) -> None:
    async with etcd_client(etcd_own) as one, etcd_client(etcd_own) as two:
        a, b = Compactor(one, 300), Compactor(two, 300)
        first = await one.put(b"/k", b"v1")
        await a.round()  # bootstrap: records the revision, compacts nothing
        await b.round()  # loses the race: follows
        assert a.compacted == [] and b.compacted == []
        seen = a.next_revision
        await one.put(b"/k", b"v2")
        await one.put(b"/k", b"v3")
        await a.round()
        await b.round()
        assert a.compacted == [seen] and b.compacted == []
        with pytest.raises(Compacted):
            await one.get(b"/k", revision=first)
        assert (await one.get(b"/k", revision=seen)).kv is not None
        key = await two.get(COMPACT_REV_KEY)
        assert key.kv is not None and key.kv.value == str(seen).encode()
