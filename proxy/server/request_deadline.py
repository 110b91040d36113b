"""The request deadline of every non-long-running request on one timer.

Upstream gives each request a context with a deadline (``WithRequestDeadline``); the
handler chain's timeout filter here used ``asyncio.timeout`` for it, which arms a timer
handle per request on the loop's heap and cancels it when the request ends: ~4-5 µs of
a small GET's CPU, the largest single item of the chain's own work (round seven of
docs/performance.md). Requests given the same duration (``--request-timeout``, which
nearly every request gets) end in the order they started, so their deadlines queue
first in, first out behind **one** timer for the oldest: a request entering appends
itself, one ending marks itself done (dropped when it reaches the head, or when done
entries are half the queue). Other durations (``?timeout=``) keep ``asyncio.timeout``.

``DeadlineScope`` keeps ``asyncio.Timeout``'s contract (Python 3.11's
``asyncio/timeouts.py``): past its deadline it cancels the task, and leaving the
scope with that cancellation (and no other cancel request since it entered) raises
``TimeoutError`` from the ``CancelledError``; ``expired()`` tells the two apart.
"""

from __future__ import annotations

import asyncio
import collections
import time
from types import TracebackType

__all__ = ["DeadlineQueue", "DeadlineScope"]

# asyncio's loop runs a timer handle once loop.time() is within its clock's resolution
# of the deadline: the same slack, so the timer's call always expires the head
_RESOLUTION = time.get_clock_info("monotonic").resolution
_COMPACT_AT = 1024  # queue length from which done entries are swept when half of it


class DeadlineScope:
    """One request's deadline (``async with``); see the module docstring."""

    __slots__ = ("_cancelling", "_queue", "_task", "deadline", "done", "expiring")

    def __init__(self, queue: DeadlineQueue, deadline: float) -> None:
        self._queue = queue
        self.deadline = deadline
        self.done = False
        self.expiring = False
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0

    def expired(self) -> bool:
        """Whether the deadline passed (and cancelled the task) before the scope ended."""
        return self.expiring

    async def __aenter__(self) -> DeadlineScope:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a deadline scope must be used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._queue.enter(self)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self._queue.leave(self)
        if self.expiring:
            assert self._task is not None
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                raise TimeoutError from exc

    def expire(self) -> None:
        self.expiring = True
        if self._task is not None:
            self._task.cancel()


class DeadlineQueue:
    """The deadlines of one duration on one event loop, oldest first, behind one
    timer handle (armed for the oldest pending deadline, or none)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        self.loop = loop
        self.seconds = seconds
        self.pending: collections.deque[DeadlineScope] = collections.deque()
        self.timer: asyncio.TimerHandle | None = None
        self._done = 0  # done entries still queued

    def scope(self) -> DeadlineScope:
        """A scope whose deadline is ``seconds`` from now."""
        return DeadlineScope(self, self.loop.time() + self.seconds)

    def enter(self, scope: DeadlineScope) -> None:
        self.pending.append(scope)
        if self.timer is None:
            self.timer = self.loop.call_at(scope.deadline, self._fire)

    def leave(self, scope: DeadlineScope) -> None:
        if scope.done:
            return
        scope.done = True
        pending = self.pending
        if pending and pending[0] is scope:
            pending.popleft()
            while pending and pending[0].done:
                pending.popleft()
                self._done -= 1
            return
        self._done += 1
        # a long request at the head holds the ones behind it: sweep them when done
        # entries are half the queue (amortized O(1) per request; memory bounded)
        if len(pending) >= _COMPACT_AT and 2 * self._done >= len(pending):
            self.pending = collections.deque(s for s in pending if not s.done)
            self._done = 0

    def _fire(self) -> None:
        """Expire every pending scope whose deadline passed; re-arm for the next."""
        self.timer = None
        pending = self.pending
        now = self.loop.time() + _RESOLUTION
        while pending:
            head = pending[0]
            if head.done:
                pending.popleft()
                self._done -= 1
            elif head.deadline <= now:
                pending.popleft()
                head.done = True  # its leave() finds it gone
                head.expire()
            else:
                self.timer = self.loop.call_at(head.deadline, self._fire)
                break
