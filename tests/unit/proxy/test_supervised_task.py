"""The supervised task and the post-start hooks over a fake clock (no sleeping): restart
with jittered exponential backoff, the crash logged once with its traceback, the check
failing while down, dependency order, and what a wrong declaration is refused for."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from cacher.clock import FakeClock as CacherFakeClock
from proxy.apimachinery.wait import Backoff, SupervisedTask
from proxy.informer import SharedInformerFactory
from proxy.loopback.client import APIError, LoopbackClient, is_transient, resource_path
from proxy.loopback.config import LoopbackConfig
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks
from tests.unit.proxy.informer.fakes import FakeListerWatcher


@dataclass
class FakeClock:
    """Time moves only when someone sleeps; ``gate``, when set, holds every sleeper."""

    t: float = 0.0
    slept: list[float] = field(default_factory=list)
    gate: asyncio.Event | None = None

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.gate is not None:
            await self.gate.wait()
        self.t += seconds
        await asyncio.sleep(0)


class Flaky:
    """Raises ``times`` times (each run lasting ``lasting`` on the clock), then returns."""

    def __init__(self, times: int, clock: FakeClock, lasting: float = 0.0) -> None:
        self.left = times
        self.clock = clock
        self.lasting = lasting
        self.runs = 0

    async def __call__(self) -> None:
        self.runs += 1
        self.clock.t += self.lasting
        if self.left:
            self.left -= 1
            raise RuntimeError(f"bug {self.runs}")


def test_backoff_doubles_up_to_the_cap_plus_jitter() -> None:
    backoff = Backoff(initial=0.5, factor=2.0, cap=8.0, jitter=0.5)
    assert [backoff.delay(n, lambda: 0.0) for n in range(7)] == [0.5, 1, 2, 4, 8, 8, 8]
    assert backoff.delay(1, lambda: 1.0) == 1.5


async def test_a_crash_is_logged_once_with_its_traceback_and_restarted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    flaky = Flaky(3, clock)
    task = SupervisedTask("flaky", flaky, clock=clock, rand=lambda: 0.0)
    task.start()
    await asyncio.wait_for(_until(lambda: task.done), 5)
    assert flaky.runs == 4 and task.restarts == 3
    assert clock.slept == [0.5, 1.0, 2.0]
    crashes = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.exc_info[1].args[0] for r in crashes if r.exc_info and r.exc_info[1]] == [
        "bug 1", "bug 2", "bug 3"]  # fmt: skip
    assert task.healthy()
    task.check()


async def test_the_check_fails_while_down_and_passes_once_restarted() -> None:
    clock = FakeClock(gate=asyncio.Event())
    started = asyncio.Event()
    calls = 0

    async def run() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise KeyError("boom")
        started.set()
        await asyncio.Event().wait()  # a controller: runs until cancelled

    task = SupervisedTask("controller", run, clock=clock, rand=lambda: 0.0)
    task.start()
    await asyncio.wait_for(_until(lambda: task.crashed is not None), 5)
    with pytest.raises(RuntimeError, match="controller is down after a crash: KeyError"):
        task.check()
    assert not task.healthy()
    assert clock.gate is not None
    clock.gate.set()
    await asyncio.wait_for(started.wait(), 5)
    task.check()
    await task.stop()
    assert task.restarts == 1


async def test_a_long_healthy_run_resets_the_backoff() -> None:
    clock = FakeClock()
    flaky = Flaky(3, clock, lasting=100.0)  # each run longer than reset_after
    task = SupervisedTask("flaky", flaky, clock=clock, rand=lambda: 0.0)
    task.start()
    await asyncio.wait_for(_until(lambda: task.done), 5)
    assert clock.slept == [0.5, 0.5, 0.5]


async def test_an_expected_failure_is_one_line(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    calls = 0

    async def run() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise APIError({"code": 503, "reason": "ServiceUnavailable", "message": "etcd"})

    task = SupervisedTask("writer", run, clock=clock, quiet=lambda e: True)
    task.start()
    await asyncio.wait_for(_until(lambda: task.done), 5)
    assert [r.exc_info for r in caplog.records if "writer" in r.getMessage()] == [None]


async def _until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition`` holds (the callers bound it in time)."""
    for _ in range(100_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


def _context() -> PostStartHookContext:
    return PostStartHookContext(LoopbackClient(LoopbackConfig("http://127.0.0.1:1", "t")))


async def test_hooks_start_after_what_they_declare_not_in_the_order_added() -> None:
    hooks = PostStartHooks(clock=FakeClock())
    order: list[str] = []
    synced = asyncio.Event()
    release = asyncio.Event()

    async def informer(hook: PostStartHookContext) -> None:
        order.append("informer")
        await release.wait()
        synced.set()
        await asyncio.Event().wait()

    async def writer(hook: PostStartHookContext) -> None:
        order.append("writer")

    hooks.add("writer", writer, after=("informer",))
    hooks.add("informer", informer, ready=synced.is_set)
    assert hooks.order() == ["informer", "writer"]
    checks = dict(hooks.checks())
    with pytest.raises(RuntimeError, match="has not started"):
        checks["poststarthook/writer"]()
    hooks.start(_context())
    await asyncio.wait_for(_until(lambda: order == ["informer"]), 5)
    for _ in range(10):
        await asyncio.sleep(0)
    assert order == ["informer"]  # the writer waits for the informer to sync
    with pytest.raises(RuntimeError, match="not ready"):
        checks["poststarthook/informer"]()
    release.set()
    await asyncio.wait_for(_until(lambda: order == ["informer", "writer"]), 5)
    await asyncio.wait_for(_until(lambda: hooks.hooks["writer"].up()), 5)
    checks["poststarthook/informer"]()
    checks["poststarthook/writer"]()
    await hooks.stop()


async def _noop(hook: PostStartHookContext) -> None:
    return None


def test_a_hook_is_declared_once_and_after_known_hooks_without_cycles() -> None:
    hooks = PostStartHooks()
    hooks.add("a", _noop, after=("b",))
    with pytest.raises(ValueError, match="already registered"):
        hooks.add("a", _noop)
    with pytest.raises(ValueError, match="runs after unknown 'b'"):
        hooks.order()
    hooks.add("b", _noop, after=("a",))
    with pytest.raises(ValueError, match="run after each other: a -> b -> a"):
        hooks.order()


async def test_no_hook_is_added_once_they_started() -> None:
    hooks = PostStartHooks()
    hooks.start(_context())
    with pytest.raises(RuntimeError, match="have started"):
        hooks.add("late", _noop)


async def test_the_informer_factory_supervises_its_informers() -> None:
    """An informer whose run dies of a bug is named by ``not_synced`` (readyz's
    informer-sync) while down, and runs again after the backoff."""
    clock = CacherFakeClock()
    factory = SharedInformerFactory(lambda group, resource: FakeListerWatcher(), clock=clock)
    informer = factory.informer_for("", "configmaps")
    runs = 0

    async def buggy_run() -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise KeyError("a bug in a reflector")
        await asyncio.Event().wait()

    informer.run = buggy_run  # type: ignore[method-assign]
    factory.start()
    task = factory._tasks[("", "configmaps")]
    await asyncio.wait_for(_until(lambda: task.crashed is not None), 5)
    assert factory.not_synced() == ["configmaps"]
    clock.advance(clock.deadlines()[0] - clock.now())  # the backoff elapses
    await asyncio.wait_for(_until(lambda: runs == 2), 5)
    assert task.crashed is None and task.restarts == 1
    await factory.shutdown()


def test_what_the_supervisor_retries_quietly() -> None:
    """Overload, etcd down or a broken connection: one line; any other answer (403
    from admission, 422 from validation) is a bug worth its traceback."""
    for code in (429, 500, 503, 504, 0):
        assert is_transient(APIError({"code": code, "message": "x"}))
    for code in (403, 404, 409, 422):
        assert not is_transient(APIError({"code": code, "message": "x"}))
    assert not is_transient(KeyError("a bug"))
    assert resource_path("", "v1", "namespaces") == "/api/v1/namespaces"
    assert resource_path("g.io", "v1", "things", "ns", "a b", "status") == (
        "/apis/g.io/v1/namespaces/ns/things/a%20b/status"
    )
