"""The pieces of ``--workers`` that need no server: the worker's identity, the
``worker`` label on every metric sample, and post-start hooks that run only while their
process leads (the election itself runs against a real server in
tests/integration/test_workers.py)."""

from __future__ import annotations

import asyncio

import pytest

from proxy.endpoints.metrics import label_samples
from proxy.leaderelection.leader_election import LeaderElectionConfig, LeaderElector
from proxy.leaderelection.lease_lock import LeaderElectionRecord, LeaseLock
from proxy.loopback.client import LoopbackClient
from proxy.loopback.config import LoopbackConfig
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks
from proxy.server.worker import WorkerIdentity, worker_identity


def test_worker_identity_from_the_environment() -> None:
    assert worker_identity({"WATCHCACHE_WORKER": "2/3"}) == WorkerIdentity(2, 3)
    for raw in ("", "0/2", "3/2", "x/2", "2"):
        assert worker_identity({"WATCHCACHE_WORKER": raw}) is None, raw
    assert worker_identity({}) is None


def test_every_sample_gets_the_worker_label() -> None:
    body = (
        b"# HELP up x\n# TYPE up gauge\nup 1.0\n"
        b'apiserver_request_total{code="200",verb="GET"} 3.0\n'
        b'odd{le="+Inf"} 1.0 1700000000\n'
    )
    assert label_samples(body, "worker", "2") == (
        b"# HELP up x\n# TYPE up gauge\n"
        b'up{worker="2"} 1.0\n'
        b'apiserver_request_total{worker="2",code="200",verb="GET"} 3.0\n'
        b'odd{worker="2",le="+Inf"} 1.0 1700000000\n'
    )


def test_a_lease_record_round_trips_through_its_spec() -> None:
    record = LeaderElectionRecord("me", 15, "2026-12-02T00:00:00.000000Z",
                                  "2026-12-02T00:00:01.000000Z", 3)  # fmt: skip
    assert LeaderElectionRecord.of({"spec": record.spec()}) == record
    released = LeaderElectionRecord("", 1, "t", "t", 3)
    assert "holderIdentity" not in released.spec()


def test_the_durations_must_nest() -> None:
    lock = LeaseLock("kube-system", "x")
    with pytest.raises(ValueError):
        LeaderElectionConfig(lock, "me", lease_duration=2, renew_deadline=3, retry_period=1)
    with pytest.raises(ValueError):
        LeaderElectionConfig(lock, "me", lease_duration=5, renew_deadline=2, retry_period=2)


async def test_an_elected_hook_runs_only_while_leading() -> None:
    elector = LeaderElector(LeaderElectionConfig(LeaseLock("kube-system", "x"), "me"))
    hooks = PostStartHooks(elector=elector)
    runs: list[asyncio.Event] = []
    cancelled = asyncio.Event()
    began = asyncio.Event()

    async def controller(hook: PostStartHookContext) -> None:
        runs.append(asyncio.Event())
        began.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    hooks.add("controller", controller, ready=lambda: False, elected=True)
    client = LoopbackClient(LoopbackConfig("http://127.0.0.1:1", "t"))
    hooks.start(PostStartHookContext(client))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not runs
    check = dict(hooks.checks())["poststarthook/controller"]
    check()  # on standby: up (the leader does the work)

    elector._set_leading(True)
    await began.wait()
    assert len(runs) == 1
    with pytest.raises(RuntimeError):
        check()  # leading: up only once the controller says so

    elector._set_leading(False)
    await cancelled.wait()
    began.clear()
    elector._set_leading(True)
    await began.wait()
    assert len(runs) == 2  # again on the next leadership
    await hooks.stop()
    await client.close()
