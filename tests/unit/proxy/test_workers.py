"""The pieces of ``--workers`` that need no server: the worker's identity, the
``worker`` label on every metric sample, and post-start hooks that run only while their
process leads (the election itself runs against a real server in
tests/integration/test_workers.py)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

import pytest

from proxy.app.workers import _next_line
from proxy.endpoints.metrics import label_samples
from proxy.leaderelection.leader_election import LeaderElectionConfig, LeaderElector
from proxy.leaderelection.lease_lock import LeaderElectionRecord, LeaseLock
from proxy.loopback.client import APIError, LoopbackClient
from proxy.loopback.config import LoopbackConfig
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks
from proxy.server.worker import WorkerIdentity, worker_identity

JSON = dict[str, Any]


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


class FakeClock:
    """Time that moves only when told (``sleep`` moves it and yields once)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds
        await asyncio.sleep(0)


class FakeLeases(LoopbackClient):
    """The three calls the Lease lock makes, over one stored Lease with a
    resourceVersion (an update with a stale one is a 409 Conflict, as the API's); with
    ``down`` every call fails as a 503 would."""

    def __init__(self) -> None:
        super().__init__(LoopbackConfig("http://127.0.0.1:1", "t"))
        self.lease: JSON | None = None
        self.rv = 0
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise APIError({"code": 503, "reason": "ServiceUnavailable"})

    async def get(self, path: str) -> JSON | None:
        self._check()
        found = copy.deepcopy(self.lease)
        await asyncio.sleep(0)  # a read takes a round trip: candidates interleave here
        return found

    async def create_if_absent(self, collection: str, obj: JSON) -> JSON | None:
        self._check()
        if self.lease is not None:
            return None
        return self._store(obj)

    async def request(
        self, method: str, path: str, body: JSON | None = None,
        content_type: str = "application/json",
    ) -> JSON:  # fmt: skip
        self._check()
        assert method == "PUT" and body is not None and self.lease is not None
        if body["metadata"]["resourceVersion"] != str(self.rv):
            raise APIError({"code": 409, "reason": "Conflict"})
        return self._store(body)

    def _store(self, obj: JSON) -> JSON:
        self.rv += 1
        self.lease = copy.deepcopy(obj)
        self.lease["metadata"]["resourceVersion"] = str(self.rv)
        return copy.deepcopy(self.lease)

    def holder(self) -> str:
        assert self.lease is not None
        return str(self.lease["spec"].get("holderIdentity", ""))


def candidate(name: str, leases: FakeLeases, clock: FakeClock) -> LeaderElector:
    config = LeaderElectionConfig(LeaseLock("kube-system", "l"), name,
                                  lease_duration=3, renew_deadline=2, retry_period=0.5)  # fmt: skip
    elector = LeaderElector(config, clock=clock)
    elector._client = leases
    return elector


async def test_a_held_lease_is_taken_only_after_it_stopped_changing_for_its_duration() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = candidate("a", leases, clock), candidate("b", leases, clock)
    assert await a._try_acquire_or_renew()
    assert not await b._try_acquire_or_renew()  # held: B starts its own clock now
    clock.t += 2.9
    assert await a._try_acquire_or_renew()  # renewed: the record changed...
    clock.t += 2.9
    assert not await b._try_acquire_or_renew()  # ...so B's 3 s start again from here
    clock.t += 2.9
    assert not await b._try_acquire_or_renew()
    clock.t += 0.2  # 3.1 s without a change, as B measured it: expired
    assert await b._try_acquire_or_renew()
    assert leases.holder() == "b"
    assert leases.lease is not None and leases.lease["spec"]["leaseTransitions"] == 1
    assert not await a._try_acquire_or_renew()  # A sees B's fresh record


async def test_a_released_lease_is_taken_at_once() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = candidate("a", leases, clock), candidate("b", leases, clock)
    assert await a._try_acquire_or_renew()
    assert not await b._try_acquire_or_renew()
    await a._release()
    assert leases.holder() == ""
    assert await b._try_acquire_or_renew()  # no 3 s wait


async def test_two_candidates_racing_on_one_read_one_wins() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a, b = candidate("a", leases, clock), candidate("b", leases, clock)
    assert await a._try_acquire_or_renew()
    await a._release()
    won = await asyncio.gather(a._try_acquire_or_renew(), b._try_acquire_or_renew())
    assert sorted(won) == [False, True]


async def test_leadership_is_given_up_when_renewals_fail_past_the_deadline() -> None:
    leases, clock = FakeLeases(), FakeClock()
    a = candidate("a", leases, clock)
    changes: list[tuple[bool, float]] = []
    a.on_change(lambda leading: changes.append((leading, clock.t)))
    task = asyncio.create_task(a.run(leases))
    await a.wait_until(leading=True)
    leases.down = True  # etcd gone: every renewal fails
    began = clock.t
    await a.wait_until(leading=False)
    assert [leading for leading, _ in changes] == [True, False]
    # when it gave up (not when this test resumed: the elector may already be sleeping
    # before its next acquire attempt, which moves the shared fake clock)
    lost_at = changes[-1][1]
    assert 2 <= lost_at - began < 3  # within the renew deadline, before the lease expires
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_the_supervisor_relays_lines_longer_than_its_buffer_whole() -> None:
    stream = asyncio.StreamReader(limit=32)
    sent = b"a" * 80 + b"\nserving on x\n" + b"tail"
    stream.feed_data(sent)
    stream.feed_eof()
    chunks = []
    while chunk := await _next_line(stream):
        chunks.append(chunk)
    assert b"".join(chunks) == sent  # nothing dropped
    assert b"serving on x\n" in chunks  # short lines still come whole
