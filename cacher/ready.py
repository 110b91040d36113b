"""The cache's readiness gate, after kube-apiserver's ``cacher/ready.go``.

Three states: ``pending`` (priming or re-listing) ⇄ ``ready`` → ``stopped`` (terminal).
Readers that need the cache call ``check()`` (non-blocking) or ``wait(timeout)``.
"""

from __future__ import annotations

import asyncio
import enum

from cacher.clock import Clock, wait_for_future


class State(enum.Enum):
    PENDING = "pending"
    READY = "ready"
    STOPPED = "stopped"


class Stopped(Exception):
    """The cache was stopped while waiting for it."""


class Ready:
    """Shared by the reflector (which flips it) and readers (who wait on it).

    ``_state`` and ``_waiter`` are changed only by ``set_ready``/``set_pending``/``stop``.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._state = State.PENDING
        self._waiter: asyncio.Future[None] | None = None
        self.generation = 0  # bumped on every pending → ready transition

    @property
    def state(self) -> State:
        return self._state

    def check(self) -> bool:
        return self._state is State.READY

    def set_ready(self) -> None:
        if self._state is State.STOPPED:
            return
        if self._state is State.PENDING:
            self.generation += 1
        self._state = State.READY
        self._wake()

    def set_pending(self) -> None:
        if self._state is State.READY:
            self._state = State.PENDING

    def stop(self) -> None:
        self._state = State.STOPPED
        self._wake()

    async def wait(self, seconds: float) -> bool:
        """True once ready; False when ``seconds`` pass first. Raises Stopped."""
        deadline = self._clock.now() + seconds
        while self._state is State.PENDING:
            remaining = deadline - self._clock.now()
            if remaining <= 0:
                return False
            if self._waiter is None or self._waiter.done():
                self._waiter = asyncio.get_running_loop().create_future()
            if not await wait_for_future(self._clock, self._waiter, remaining):
                return False
        if self._state is State.STOPPED:
            raise Stopped
        return True

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None
