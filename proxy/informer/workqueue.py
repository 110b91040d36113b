"""A rate-limited work queue (client-go's ``workqueue``: Type + delaying + rate limiting).

Guarantees, as upstream's:

- an item is queued at most once however often it is added (the *dirty* set);
- an item is handed to one worker at a time: added again while being processed
  (the *processing* set), it is queued again only when that worker calls ``done``;
- ``add_after`` queues it after a delay (the earliest of several pending delays wins);
  ``add_rate_limited`` after the rate limiter's delay; ``forget`` resets its failures;
- after ``shut_down`` adds are ignored and ``get`` raises ``ShutDown`` once the queue
  is empty (workers finish what is queued).

Items are hashable (controllers use keys, never objects). Everything runs on the event
loop; only ``get`` awaits.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from cacher.clock import Clock, RealClock, Timer
from proxy.informer.rate_limiter import RateLimiter, default_controller_rate_limiter

__all__ = ["ShutDown", "WorkQueue"]

T = TypeVar("T", bound=Hashable)


class ShutDown(Exception):
    """``get`` on a queue that is shut down and empty."""


class WorkQueue(Generic[T]):
    def __init__(
        self,
        name: str = "",
        *,
        clock: Clock | None = None,
        rate_limiter: RateLimiter | None = None,
    ) -> None:
        self.name = name
        self.clock = clock or RealClock()
        self.rate_limiter = rate_limiter or default_controller_rate_limiter(self.clock)
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._waiting: dict[T, tuple[float, Timer]] = {}  # add_after: deadline, timer
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if item in self._processing:
            return  # queued again by done()
        self._queue.append(item)
        self._wake_one()

    def add_after(self, item: T, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        deadline = self.clock.now() + delay
        pending = self._waiting.get(item)
        if pending is not None:
            if pending[0] <= deadline:
                return
            pending[1].cancel()
        timer = self.clock.call_later(delay, lambda: self._ready(item))
        self._waiting[item] = (deadline, timer)

    def _ready(self, item: T) -> None:
        self._waiting.pop(item, None)
        self.add(item)

    def add_rate_limited(self, item: T) -> None:
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)

    async def get(self) -> T:
        """The next item (now being processed: call ``done`` after); ShutDown when the
        queue is shut down and empty."""
        while not self._queue:
            if self._shutting_down:
                raise ShutDown(self.name)
            waiter = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if not waiter.cancelled():  # woken, then cancelled: pass the wake on
                    self._wake_one()
                raise
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one()

    def shut_down(self) -> None:
        """Stop taking items; wake every waiting ``get``; pending delays are dropped."""
        self._shutting_down = True
        for _, timer in self._waiting.values():
            timer.cancel()
        self._waiting.clear()
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
