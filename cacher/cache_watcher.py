"""One client's watch on the cache, after kube-apiserver's ``cache_watcher.go``.

A watcher first replays its initial events (the current state for RV 0/unset, or the
history after RV N), then live events handed over by the dispatcher. The dispatcher never
waits for it: ``add`` converts and appends without blocking. The live buffer has a soft
limit; a watcher whose buffer stays at that limit longer than its time budget, or reaches
twice the limit, is closed (no ERROR event — its client reconnects from the last RV it
saw). Memory per watcher is therefore bounded.

Selector transitions (upstream ``cache_watcher.go`` ``convertToWatchEvent``): new
matches and old did not → ADDED; both → MODIFIED; old matched and new does not →
DELETED carrying the old object with the new RV; a real delete is sent only if the
last state matched, with the deletion revision.
"""

from __future__ import annotations

import asyncio
import enum
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator

from cacher.clock import Clock, Timer
from cacher.objects import WatchCacheEvent
from storage.interfaces import SelectionPredicate, WatchEvent


class CloseReason(enum.Enum):
    STOPPED = "stopped"  # the client (or the server on shutdown) stopped it
    TIMEOUT = "timeout"  # its deadline passed
    SLOW = "slow"  # could not keep up
    REPLACED = "replaced"  # the cache re-listed; the client must reconnect


def in_scope(key: str, watch_key: str, recursive: bool) -> bool:
    """Whether an object's ``key`` is under a watch on ``watch_key``."""
    return key.startswith(watch_key) if recursive else key == watch_key


def convert(event: WatchCacheEvent, predicate: SelectionPredicate) -> WatchEvent | None:
    """The event a watch with ``predicate`` sees for ``event``, or None (upstream's
    ``convertToWatchEvent``)."""
    rv = event.resource_version
    if predicate.empty:
        return WatchEvent(event.type, event.object.stored.data, rv)
    if event.type == "DELETED":
        # event.object is the last state (its attrs) at the deletion revision
        if event.object.matches(predicate):
            return WatchEvent("DELETED", event.object.stored.data, rv)
        return None
    now = event.object.matches(predicate)
    before = event.prev is not None and event.prev.matches(predicate)
    if now:
        return WatchEvent("MODIFIED" if before else "ADDED", event.object.stored.data, rv)
    if before:
        return WatchEvent("DELETED", event.prev_at_rv(), rv)
    return None


class CacheWatcher:
    """Consumed by exactly one task (the HTTP handler); fed by the dispatcher.

    ``_buf``, ``_full_since`` and ``closed`` are changed by ``add``/``close`` (dispatcher)
    and by ``__anext__`` (consumer), all on the event loop.
    """

    def __init__(
        self,
        *,
        key: str,
        recursive: bool,
        predicate: SelectionPredicate,
        start_rv: int,
        initial: Iterator[WatchEvent],
        clock: Clock,
        buffer_size: int = 100,
        time_budget: float = 0.25,
        allow_bookmarks: bool = False,
        deadline: float | None = None,
        on_close: Callable[[CacheWatcher], None] | None = None,
    ) -> None:
        self.key = key
        self.recursive = recursive
        self.predicate = predicate
        self._match_all = predicate.empty
        self.start_rv = start_rv
        self._initial: Iterator[WatchEvent] | None = initial
        self._clock = clock
        self._soft = max(1, buffer_size)
        self._budget = time_budget
        self.allow_bookmarks = allow_bookmarks
        self.deadline = deadline
        self.next_bookmark: float | None = None
        self._on_close = on_close
        self._buf: deque[WatchEvent] = deque()
        self._full_since: float | None = None
        self._waiter: asyncio.Future[None] | None = None
        self.closed: CloseReason | None = None
        self._deadline_timer: Timer | None = None
        if deadline is not None:
            self._deadline_timer = clock.call_later(
                deadline - clock.now(), lambda: self.close(CloseReason.TIMEOUT)
            )

    # -- producer side (dispatcher) ------------------------------------------------------

    def interested(self, key: str) -> bool:
        return in_scope(key, self.key, self.recursive)

    def add(self, event: WatchCacheEvent) -> None:
        """Deliver a cache event (already known to be in this watcher's key range)."""
        if self.closed is not None or event.resource_version <= self.start_rv:
            return
        out = self.convert(event)
        if out is not None:
            self._push(out)

    def convert(self, event: WatchCacheEvent) -> WatchEvent | None:
        """The event this watcher's client sees, or None (``convertToWatchEvent``)."""
        if self._match_all:
            return WatchEvent(event.type, event.object.stored.data, event.resource_version)
        return convert(event, self.predicate)

    @property
    def full(self) -> bool:
        """At its soft limit: its client has fallen behind (for now)."""
        return len(self._buf) >= self._soft

    @property
    def pending(self) -> int:
        """Events buffered for this client and not yet sent: how far it lags."""
        return len(self._buf)

    def add_bookmark(self, event: WatchEvent) -> None:
        """Best effort: a bookmark is dropped rather than counted against the budget."""
        rv = event.resource_version
        if self.closed is None and rv > self.start_rv and len(self._buf) < self._soft:
            self._push(event)

    def _push(self, event: WatchEvent) -> None:
        buf = self._buf
        if len(buf) >= self._soft:
            now = self._clock.now()
            if self._full_since is None:
                self._full_since = now
            elif now - self._full_since > self._budget or len(buf) >= 2 * self._soft:
                self.close(CloseReason.SLOW)
                return
        buf.append(event)
        self._wake()

    def check_budget(self) -> None:
        """Close the watcher if it has been full for longer than its budget (ticks)."""
        full = self._full_since
        if full is not None and self.closed is None and self._clock.now() - full > self._budget:
            self.close(CloseReason.SLOW)

    def close(self, reason: CloseReason = CloseReason.STOPPED) -> None:
        if self.closed is not None:
            return
        self.closed = reason
        self._initial = None
        if reason is not CloseReason.TIMEOUT:
            self._buf.clear()  # a stopped or dropped client reconnects from its last RV
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        if self._on_close is not None:
            self._on_close(self)
        self._wake()

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    # -- consumer side -------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            if self._initial is not None:
                ev = next(self._initial, None)
                if ev is not None:
                    return ev
                self._initial = None
            if self._buf:
                ev = self._buf.popleft()
                if len(self._buf) < self._soft:
                    self._full_since = None
                return ev
            if self.closed is not None:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None

    async def stop(self) -> None:
        self.close(CloseReason.STOPPED)

    @property
    def buffered(self) -> int:
        return len(self._buf)


class ErrorWatcher:
    """A watch that delivers one event (a 410 ERROR Status) and ends."""

    def __init__(self, event: WatchEvent) -> None:
        self._event: WatchEvent | None = event

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self

    async def __anext__(self) -> WatchEvent:
        ev, self._event = self._event, None
        if ev is None:
            raise StopAsyncIteration
        return ev

    async def stop(self) -> None:
        self._event = None
