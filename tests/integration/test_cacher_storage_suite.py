"""The shared storage suite (tests/integration/storage_suite.py) run against the cacher.

The cached store runs on a private etcd for this module, because the suite's compaction
tests compact it."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from cacher import CacheDelegator
from etcdclient import EtcdClient
from etcdclient.errors import Compacted
from lab.etcd import EtcdCluster
from storage.interfaces import Interface
from tests.integration.storage_suite import *  # noqa: F403
from tests.integration.storage_suite import Compact
from tests.integration.test_cacher_support import cached_store, etcd_client

pytestmark = pytest.mark.etcd


@pytest.fixture(scope="module")
def suite_etcd() -> Iterator[EtcdCluster]:
    with EtcdCluster(size=1) as cluster:
        yield cluster


@pytest.fixture
async def suite_client(suite_etcd: EtcdCluster) -> AsyncIterator[EtcdClient]:
    async with etcd_client(suite_etcd) as client:
        yield client


@pytest.fixture
def key_prefix() -> str:
    return f"/t-{uuid.uuid4().hex[:12]}/registry/pods/"


@pytest.fixture
def store_kind() -> str:
    return "cacher"


class CompactedRevision:
    """The latest compaction the suite made: the cacher reads it as production's reads
    the etcd3 compactor's (upstream's cacher tests likewise tell the cacher)."""

    def __init__(self) -> None:
        self.revision = 0

    def __call__(self) -> int:
        return self.revision


@pytest.fixture
def compacted() -> CompactedRevision:
    return CompactedRevision()


@pytest.fixture
async def store(
    suite_client: EtcdClient, key_prefix: str, compacted: CompactedRevision
) -> AsyncIterator[Interface]:
    prefix = key_prefix.removesuffix("/pods/")
    async with cached_store(suite_client, prefix, compact_revision=compacted) as cached:
        yield cached


@pytest.fixture
def compact(
    suite_client: EtcdClient, store: CacheDelegator, compacted: CompactedRevision
) -> Compact:
    async def do(revision: int) -> None:
        with contextlib.suppress(Compacted):
            await suite_client.compact(revision)
        compacted.revision = max(compacted.revision, revision)

    return do
