"""A background task the server owns (after apimachinery's ``util/wait``): started once,
restarted after a crash with jittered exponential backoff, cancelled and awaited on
shutdown, and visible in ``/readyz``.

Upstream runs its controllers as goroutines under ``wait.BackoffUntil`` with a backoff
manager (``wait.NewExponentialBackoffManager``: initial, cap, reset duration, factor,
jitter, an injected clock) and a panic in one of them is handled by ``HandleCrash``.
A Python task that dies of a bug dies silently until someone awaits it; a
``SupervisedTask`` awaits it at once, logs the crash with its traceback (once per
crash), and runs it again after the backoff, while ``check`` fails so that the named
readyz check (``poststarthook/NAME``, ``proxy.server.post_start_hooks``) shows it down.

- ``run`` returning normally is done (a one-shot job such as a bootstrap writer): not
  restarted, healthy from then on;
- ``ready`` (optional): what "up" means once running (an informer's "synced", a
  bootstrap writer's "written"); without it, running is up;
- ``quiet(err)``: an expected failure (the API answered 503 while etcd is down) is
  logged on one line, without the traceback a bug deserves.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["LOOP_CLOCK", "Backoff", "Clock", "SupervisedTask", "cancel_and_wait"]

log = logging.getLogger("watchcache.proxy")


class Clock(Protocol):
    """Time as the supervisor reads it; tests inject a fake one and never sleep."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class _LoopClock:
    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


LOOP_CLOCK: Clock = _LoopClock()


@dataclass(frozen=True)
class Backoff:
    """Upstream's exponential backoff manager: the n-th restart in a row waits
    ``min(initial * factor**n, cap)`` plus up to ``jitter`` times that (``wait.Jitter``);
    a run that lasted ``reset_after`` seconds starts the sequence again."""

    initial: float = 0.5
    factor: float = 2.0
    cap: float = 8.0
    jitter: float = 0.5
    reset_after: float = 60.0

    def delay(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        base = min(self.initial * self.factor**attempt, self.cap)
        return base + rand() * self.jitter * base


async def cancel_and_wait(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it to end (its CancelledError is not ours)."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # we are being cancelled ourselves: let it through


class SupervisedTask:
    """One supervised background task (see the module docstring).

    All state is read and written on the event loop: ``crashed`` is the last crash while
    the task waits to restart (None while it runs), ``restarts`` counts restarts."""

    def __init__(
        self,
        name: str,
        run: Callable[[], Awaitable[None]],
        *,
        ready: Callable[[], bool] | None = None,
        backoff: Backoff = Backoff(),
        clock: Clock = LOOP_CLOCK,
        rand: Callable[[], float] = random.random,
        quiet: Callable[[BaseException], bool] = lambda err: False,
    ) -> None:
        self.name = name
        self._run = run
        self._ready = ready
        self.backoff = backoff
        self.clock = clock
        self._rand = rand
        self._quiet = quiet
        self.crashed: BaseException | None = None
        self.restarts = 0
        self.done = False
        self._task: asyncio.Task[None] | None = None

    @property
    def started(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        """Start supervising (once; a second call does nothing)."""
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=self.name)

    async def stop(self) -> None:
        """Cancel the task and wait for it (shutdown)."""
        if self._task is not None:
            await cancel_and_wait(self._task)

    def healthy(self) -> bool:
        if self._task is None or self.crashed is not None:
            return False
        return self.done or self._ready is None or self._ready()

    def check(self) -> None:
        """Raise while not started, down after a crash, or not ready yet (the readyz
        check; its reason is withheld from the listing, as upstream's hooks')."""
        if self._task is None:
            raise RuntimeError(f"{self.name} not started")
        if self.crashed is not None:
            raise RuntimeError(f"{self.name} is down after a crash: {self.crashed!r}")
        if not self.healthy():
            raise RuntimeError(f"{self.name} not ready yet")

    async def _supervise(self) -> None:
        attempt = 0
        while True:
            began = self.clock.now()
            try:
                await self._run()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a crash: logged, restarted after the backoff
                if self.clock.now() - began >= self.backoff.reset_after:
                    attempt = 0
                delay = self.backoff.delay(attempt, self._rand)
                attempt += 1
                self._crashed(err, delay)
                await self.clock.sleep(delay)
                self.restarts += 1
                self.crashed = None
                continue
            self.done = True
            return

    def _crashed(self, err: Exception, delay: float) -> None:
        self.crashed = err
        if self._quiet(err):
            log.warning("%s failed: %s (retrying in %.1fs)", self.name, err, delay)
        else:
            log.error("%s crashed (restarting in %.1fs)", self.name, delay, exc_info=err)
