"""One priority level's queue set (upstream's ``fairqueuing/queueset``).

A request asks for ``seats``. An exempt level runs everything at once (only counted).
A level whose ``limitResponse`` is Reject runs a request when its seats fit in the
current concurrency limit, else rejects it (``concurrency-limit``). A queuing level
puts the request on the shortest queue of its flow's shuffle-sharded hand
(``queue-full`` when that queue holds ``queueLengthLimit`` requests) and dispatches
by fair queuing in virtual time:

- R, the virtual clock (seat-seconds), advances at ``min(seats wanted, limit) /
  active queues`` per real second: every active queue gets an equal share;
- dispatching a request adds its work (``seats x G``, G = 3 s, upstream's estimated
  service duration) to its queue's ``next_dispatch_r``; the next request comes from
  the non-empty queue with the smallest ``next_dispatch_r`` whose head fits (none
  fits: dispatch waits; a request wider than the limit runs alone);
- when it finishes, the queue is credited the unused part of that work, so a flow of
  quick requests is not charged G for each;
- an idle queue that gets a request starts at the current R (no credit saved up).

A waiting request gives up after ``wait_limit`` seconds (``time-out``) or when its
client goes away (``cancelled``). Everything runs on the event loop; no locks.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from proxy.flowcontrol.fairqueuing.shufflesharding import deal, flow_hash

__all__ = ["SERVICE_SECONDS", "Queue", "QueueSet", "QueuingConfig", "Rejected", "Request"]

SERVICE_SECONDS = 3.0  # G: upstream's estimated service duration of a request
HAND_CACHE_SIZE = 10_000


class Rejected(Exception):
    """The request is not served; ``reason`` is upstream's label (queue-full,
    concurrency-limit, time-out)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class QueuingConfig:
    queues: int
    hand_size: int
    queue_length_limit: int


@dataclass(eq=False)
class Request:
    """One request's passage through the queue set (``details`` feed dump_requests)."""

    flow_schema: str
    distinguisher: str
    seats: int
    arrive: float  # monotonic
    arrive_wall: float  # time.time()
    details: Any = None  # (user, request info) for dump_requests, read only there
    queue: Queue | None = None
    start: float | None = None
    start_wall: float | None = None
    future: asyncio.Future[None] | None = None
    released: bool = False

    @property
    def work(self) -> float:
        return self.seats * SERVICE_SECONDS


@dataclass(eq=False)
class Queue:
    index: int
    waiting: collections.deque[Request] = field(default_factory=collections.deque)
    waiting_seats: int = 0
    executing: int = 0
    seats_in_use: int = 0
    next_dispatch_r: float = 0.0

    def active(self) -> bool:
        return bool(self.waiting) or self.executing > 0


class QueueSet:
    """The queue set of one priority level. ``limit`` (seats) is set by the config
    controller (nominal, then borrowing adjusts it); ``exempt`` levels ignore it."""

    def __init__(
        self,
        name: str,
        *,
        limit: int,
        exempt: bool = False,
        queuing: QueuingConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.limit = limit
        self.exempt = exempt
        self.queuing = queuing
        self.clock = clock
        self.wall = wall
        self.queues = [Queue(i) for i in range(queuing.queues)] if queuing else []
        self.executing: set[Request] = set()
        self.seats_in_use = 0
        self.waiting_count = 0
        self.waiting_seats = 0
        self.current_r = 0.0
        self.active_count = 0  # queues with requests waiting or executing
        self._waiting_queues: set[Queue] = set()  # queues with requests waiting
        self._hands: dict[tuple[str, str], list[int]] = {}  # flow -> its queues
        self._last_real = clock()
        self.dispatched = 0
        self.rejected = 0
        self.timed_out = 0
        self.cancelled = 0
        self.peak_demand = 0  # seats executing + waiting, high watermark since last read

    # ------------------------------------------------------------------ configuration

    def reconfigure(self, limit: int, exempt: bool, queuing: QueuingConfig | None) -> None:
        """New limit/shape. A changed queue count re-deals future flows; waiting
        requests stay where they are (upstream quiesces old queues likewise)."""
        self.limit, self.exempt = limit, exempt
        if queuing != self.queuing:
            self._hands.clear()
            old = [q for q in self.queues if q.active()]
            self.queuing = queuing
            count = queuing.queues if queuing else 0
            self.queues = [Queue(i) for i in range(count)]
            for q in old:  # keep active queues' state reachable by index when possible
                if q.index < count:
                    self.queues[q.index] = q
            self.active_count = sum(1 for q in self.queues if q.active())
            self._waiting_queues = {q for q in self.queues if q.waiting}
        self._dispatch()

    def set_limit(self, limit: int) -> None:
        self.limit = limit
        self._dispatch()

    # ------------------------------------------------------------------ the virtual clock

    def _advance(self) -> None:
        now = self.clock()
        elapsed, self._last_real = now - self._last_real, now
        active = self.active_count
        if active and elapsed > 0:
            wanted = self.seats_in_use + self.waiting_seats
            self.current_r += elapsed * min(wanted, max(self.limit, 1)) / active

    # ------------------------------------------------------------------ entering

    async def acquire(
        self, request: Request, wait_limit: float, on_queued: Callable[[], None] | None = None
    ) -> None:
        """Return once ``request`` may execute (its seats are then taken until
        ``release``); ``Rejected`` when it may not; CancelledError passes through.
        ``on_queued`` is called when the request has to wait."""
        if self.exempt:
            self._start(request)
            return
        if self.queuing is None:
            if not self._fits(request.seats):
                self.rejected += 1
                raise Rejected("concurrency-limit")
            self._start(request)
            return
        self._advance()
        queue = self._choose_queue(request)
        if not self.waiting_count and self._fits(request.seats):
            # nothing waits anywhere: it goes at once, charged to its queue as if it had
            # been dispatched from it (the common case, kept short)
            if not queue.active():
                self.active_count += 1
            request.queue = queue
            self._dispatch_from(queue, request)
            return
        if len(queue.waiting) >= self.queuing.queue_length_limit:
            self.rejected += 1
            raise Rejected("queue-full")
        self._enqueue(queue, request)
        self._dispatch()
        if request.start is not None:
            return
        request.future = asyncio.get_running_loop().create_future()
        if on_queued is not None:
            on_queued()
        try:
            async with asyncio.timeout(wait_limit):
                await asyncio.shield(request.future)
        except TimeoutError:
            if request.start is None:
                self._remove_waiting(request)
                self.timed_out += 1
                self.rejected += 1
                raise Rejected("time-out") from None
        except asyncio.CancelledError:
            if request.start is None:
                self._remove_waiting(request)
                self.cancelled += 1
            else:
                self.release(request)
            raise

    def _choose_queue(self, request: Request) -> Queue:
        assert self.queuing is not None
        flow = (request.flow_schema, request.distinguisher)
        hand = self._hands.get(flow)
        if hand is None:  # dealt once per flow (hashing costs more than the rest)
            if len(self._hands) >= HAND_CACHE_SIZE:
                self._hands.clear()
            hand = self._hands[flow] = deal(
                flow_hash(*flow), len(self.queues), min(self.queuing.hand_size, len(self.queues))
            )
        return min((self.queues[i] for i in hand), key=lambda q: q.waiting_seats + q.seats_in_use)

    def _enqueue(self, queue: Queue, request: Request) -> None:
        if not queue.active():
            self.active_count += 1
            queue.next_dispatch_r = max(queue.next_dispatch_r, self.current_r)
        queue.waiting.append(request)
        self._waiting_queues.add(queue)
        queue.waiting_seats += request.seats
        request.queue = queue
        self.waiting_count += 1
        self.waiting_seats += request.seats
        self._note_demand()

    def _remove_waiting(self, request: Request) -> None:
        queue = request.queue
        if queue is not None and request in queue.waiting:
            queue.waiting.remove(request)
            if not queue.waiting:
                self._waiting_queues.discard(queue)
            queue.waiting_seats -= request.seats
            if not queue.active():
                self.active_count -= 1
            self.waiting_count -= 1
            self.waiting_seats -= request.seats

    # ------------------------------------------------------------------ dispatching

    def _dispatch(self) -> None:
        """Start waiting requests, fairest first, while their seats fit."""
        if self.queuing is None:
            return
        self._advance()
        while self.waiting_count:
            queue = min(self._waiting_queues, key=lambda q: (q.next_dispatch_r, q.index))
            head = queue.waiting[0]
            if not self._fits(head.seats):
                return
            queue.waiting.popleft()
            if not queue.waiting:
                self._waiting_queues.discard(queue)
            queue.waiting_seats -= head.seats
            self.waiting_count -= 1
            self.waiting_seats -= head.seats
            self._dispatch_from(queue, head)
            if head.future is not None and not head.future.done():
                head.future.set_result(None)

    def _fits(self, seats: int) -> bool:
        """Seats free for it (a request wider than the limit runs alone)."""
        return not self.seats_in_use or self.seats_in_use + seats <= self.limit

    def _dispatch_from(self, queue: Queue, request: Request) -> None:
        queue.next_dispatch_r = max(queue.next_dispatch_r, self.current_r) + request.work
        queue.executing += 1
        queue.seats_in_use += request.seats
        self._start(request)

    def _start(self, request: Request) -> None:
        request.start = self.clock()
        request.start_wall = self.wall()
        self.executing.add(request)
        self.seats_in_use += request.seats
        self.dispatched += 1
        self._note_demand()

    def release(self, request: Request) -> None:
        """The request's seats are free (it finished, or a watch is initialized);
        idempotent."""
        if request.released or request.start is None:
            return
        request.released = True
        self.executing.discard(request)
        self.seats_in_use -= request.seats
        queue = request.queue
        if queue is not None and self.queuing is not None:
            self._advance()
            queue.executing -= 1
            queue.seats_in_use -= request.seats
            if not queue.active():
                self.active_count -= 1
            used = (self.clock() - request.start) * request.seats
            queue.next_dispatch_r -= max(0.0, request.work - used)
        self._dispatch()

    # ------------------------------------------------------------------ reading

    def _note_demand(self) -> None:
        self.peak_demand = max(self.peak_demand, self.seats_in_use + self.waiting_seats)

    def take_peak_demand(self) -> int:
        """Seats wanted at the busiest moment since the last call (borrowing's input)."""
        peak, self.peak_demand = self.peak_demand, self.seats_in_use + self.waiting_seats
        return peak

    def active_queues(self) -> int:
        return self.active_count

    def is_idle(self) -> bool:
        return not self.executing and not self.waiting_count
