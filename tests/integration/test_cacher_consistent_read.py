"""ConsistentListFromCache: an unset-RV LIST served from the cache once it reached etcd's
current revision — with progress requests on etcd >= 3.4.31 / 3.5.13, and falling back to
etcd on older ones (bugs #15220, #17507). Run with ETCD_BIN pointing at 3.5.16 for the
first branch and at 3.5.1 (default) or 3.4.23 for the second: the test asserts the
branch that matches the running etcd, read from the delegator's outcome counters and the
Prometheus counter."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from cacher import Outcome
from etcdclient import EtcdClient
from lab.etcd import EtcdCluster
from storage.etcd3.feature import progress_requests_supported
from tests.integration.test_cacher_support import (
    cached_store,
    next_events,
    opts,
    pod,
    view,
)

pytestmark = pytest.mark.etcd


def outcome_count(outcome: Outcome) -> float:
    value = REGISTRY.get_sample_value(
        "watchcache_consistent_read_outcomes_total",
        {"resource": "pods", "outcome": outcome.value},
    )
    return value or 0.0


@pytest.mark.parametrize("version", [(3, 4, 23), (3, 4, 30), (3, 5, 1), (3, 5, 12)])
def test_buggy_etcd_versions_are_gated_off(version: tuple[int, int, int]) -> None:
    assert not progress_requests_supported(version)


@pytest.mark.parametrize("version", [(3, 4, 31), (3, 5, 13), (3, 5, 16), (3, 6, 0)])
def test_fixed_etcd_versions_request_progress(version: tuple[int, int, int]) -> None:
    assert progress_requests_supported(version)


async def test_consistent_list_branch_matches_etcd_version(
    etcd: EtcdCluster, client: EtcdClient, etcd_prefix: str
) -> None:
    supported = progress_requests_supported(etcd.version)
    async with cached_store(client, etcd_prefix, consistent_list_from_cache=True) as c:
        prefix = c.cacher.resource_prefix
        a = await c.create(f"{prefix}ns/a", pod("a"))
        await c.cacher.wait_until_fresh(a.resource_version)
        # etcd moves on outside this resource: the cache cannot know it without progress
        etcd_rev = await client.put(f"{etcd_prefix}/configmaps/ns/x".encode(), b"{}")
        assert c.cacher.resource_version < etcd_rev
        expected = Outcome.PROGRESS if supported else Outcome.FALLBACK_UNSUPPORTED
        before = outcome_count(expected)

        listed = await c.get_list(prefix, opts())

        assert [s.obj["metadata"]["name"] for s in listed.items] == ["a"]
        assert listed.resource_version >= etcd_rev
        assert c.consistent_reads[expected] == 1
        assert sum(c.consistent_reads.values()) == 1
        assert outcome_count(expected) == before + 1
        assert c.cacher.progress.supported is supported
        if supported:
            assert listed.served_from == "cache"
            assert c.cacher.progress.requests >= 1
            assert c.cacher.resource_version >= etcd_rev
        else:
            assert listed.served_from == "etcd"
            assert c.cacher.progress.requests == 0

        # with a limit it is a consistent read too (1.34+); explicit RVs are not counted
        paged = await c.get_list(prefix, opts(limit=1))
        assert paged.served_from == ("cache" if supported else "etcd")
        assert (await c.get_list(prefix, opts("0"))).served_from == "cache"
        # the paged read needs no progress request when the first one's notification
        # already brought the cache to etcd's revision (its own watch stream: at once)
        again = c.consistent_reads[expected]
        if supported:
            again += c.consistent_reads[Outcome.FRESH]
        assert again == 2
        assert sum(c.consistent_reads.values()) == 2


async def test_gate_off_keeps_unset_rv_on_etcd(client: EtcdClient, etcd_prefix: str) -> None:
    async with cached_store(client, etcd_prefix) as c:
        prefix = c.cacher.resource_prefix
        await c.create(f"{prefix}ns/a", pod("a"))
        listed = await c.get_list(prefix, opts())
        assert listed.served_from == "etcd" and len(listed.items) == 1
        assert sum(c.consistent_reads.values()) == 0
        assert c.cacher.progress.requests == 0


async def test_watch_list_from_now_waits_for_etcd_revision(
    etcd: EtcdCluster, client: EtcdClient, etcd_prefix: str
) -> None:
    """sendInitialEvents with RV unset: the state at etcd's current revision when etcd can
    be asked for progress; on older etcd the cache's own state (like RV=0). Then the
    initial-events-end bookmark, then changes."""
    async with cached_store(client, etcd_prefix) as c:
        prefix = c.cacher.resource_prefix
        a = await c.create(f"{prefix}ns/a", pod("a"))
        etcd_rev = await client.put(f"{etcd_prefix}/configmaps/ns/x".encode(), b"{}")
        supported = progress_requests_supported(etcd.version)
        if not supported:
            await c.cacher.wait_until_fresh(a.resource_version)
        w = await c.watch(
            prefix, opts("", "NotOlderThan", bookmarks=True, send_initial_events=True)
        )
        events = await next_events(w, 2)
        assert view(events[0]) == ("ADDED", "a", a.resource_version)
        assert events[1].type == "BOOKMARK"
        if supported:
            assert events[1].resource_version >= etcd_rev
        else:
            assert events[1].resource_version >= a.resource_version
        b = await c.create(f"{prefix}ns/b", pod("b"))
        assert view((await next_events(w, 1))[0]) == ("ADDED", "b", b.resource_version)
        await w.stop()
