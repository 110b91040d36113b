"""Leader election as client-go's ``tools/leaderelection`` runs it, over a Lease
(``proxy.leaderelection.lease_lock``).

- **acquire**: every ``retry_period`` (jittered), try to take the Lease: create it when
  absent; take it when it is released (no holder) or when its record has not changed
  for ``leaseDurationSeconds`` as measured on *this* process's clock since it was first
  observed (never by comparing ``renewTime`` with our wall clock: clocks skew); an
  update carries the resourceVersion read, so of two candidates one wins;
- **renew**: while leading, rewrite ``renewTime`` every ``retry_period``; when no
  renewal has succeeded for ``renew_deadline`` the leadership is lost (``leading``
  turns False before anyone else can have taken the Lease, since ``renew_deadline`` <
  ``lease_duration``) and the elector goes back to acquiring;
- **release** (``ReleaseOnCancel``): cancelling ``run`` while leading writes the Lease
  with no holder and a 1 s duration, so a successor takes over at once rather than
  after ``lease_duration``.

``leading`` is read on the event loop; callbacks registered with ``on_change`` are called
(synchronously) each time it flips. Transient failures (etcd down, a 5xx) are failed
attempts, logged once per change of state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from proxy.apimachinery.wait import LOOP_CLOCK, Clock
from proxy.leaderelection.lease_lock import LeaderElectionRecord, LeaseLock, micro_time
from proxy.loopback.client import APIError, LoopbackClient

__all__ = ["LeaderElectionConfig", "LeaderElector"]

log = logging.getLogger("watchcache.leaderelection")

# wait.JitterUntil's factor in client-go's acquire loop
JITTER_FACTOR = 1.2
# how long a release may take when the server is shutting down
RELEASE_TIMEOUT = 2.0


@dataclass(frozen=True)
class LeaderElectionConfig:
    """kube-controller-manager's ``--leader-elect-*`` defaults (15 s, 10 s, 2 s)."""

    lock: LeaseLock
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period * JITTER_FACTOR:
            raise ValueError("leaseDuration > renewDeadline > retryPeriod * 1.2 must hold")


@dataclass
class LeaderElector:
    """One candidate (see the module docstring); ``run`` until cancelled."""

    config: LeaderElectionConfig
    clock: Clock = LOOP_CLOCK
    leading: bool = False
    # the record last read and when (this clock) it was first seen as it is
    observed: LeaderElectionRecord | None = None
    observed_at: float = 0.0
    _callbacks: list[Callable[[bool], None]] = field(default_factory=list)
    _client: LoopbackClient | None = None
    # set while leading / while not: what ``wait_until`` awaits
    _leads: asyncio.Event = field(default_factory=asyncio.Event)
    _follows: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self._follows.set()

    def on_change(self, callback: Callable[[bool], None]) -> None:
        self._callbacks.append(callback)

    async def wait_until(self, leading: bool) -> None:
        """Return once ``leading`` is what is asked (at once if it is)."""
        await (self._leads if leading else self._follows).wait()

    async def run(self, client: LoopbackClient) -> None:
        """Acquire, renew until lost, acquire again...; released when cancelled."""
        self._client = client
        try:
            while True:
                await self._acquire()
                await self._renew()
        finally:
            if self.leading:
                self._set_leading(False)
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    async with asyncio.timeout(RELEASE_TIMEOUT):
                        await asyncio.shield(self._release())

    async def _acquire(self) -> None:
        while not await self._attempt():
            period = self.config.retry_period
            await self.clock.sleep(period + random.random() * JITTER_FACTOR * period)
        log.info("%s acquired lease %s", self.config.identity, self.config.lock.path())
        self._set_leading(True)

    async def _renew(self) -> None:
        while True:
            deadline = self.clock.now() + self.config.renew_deadline
            while not await self._attempt():
                if self.clock.now() >= deadline:
                    log.warning("%s failed to renew lease %s within %.1fs: leadership lost",
                                self.config.identity, self.config.lock.path(),
                                self.config.renew_deadline)  # fmt: skip
                    self._set_leading(False)
                    return
                await self.clock.sleep(self.config.retry_period)
            await self.clock.sleep(self.config.retry_period)

    async def _attempt(self) -> bool:
        """One ``tryAcquireOrRenew``; False on any failure (logged, never raised)."""
        try:
            async with asyncio.timeout(self.config.renew_deadline):
                return await self._try_acquire_or_renew()
        except (APIError, TimeoutError) as e:
            log.debug("%s: lease attempt failed: %s", self.config.identity, e)
            return False

    async def _try_acquire_or_renew(self) -> bool:
        assert self._client is not None
        lock, me, now = self.config.lock, self.config.identity, micro_time()
        record = LeaderElectionRecord(me, self._duration_seconds(), now, now, 0)
        found = await lock.get(self._client)
        if found is None:
            if not await lock.create(self._client, record):
                return False
            self._observe(record)
            return True
        old, resource_version = found
        if old != self.observed:
            self._observe(old)
        held_by_other = old.holder_identity and old.holder_identity != me
        if held_by_other and self.observed_at + old.lease_duration_seconds > self.clock.now():
            return False
        if old.holder_identity == me:
            record = LeaderElectionRecord(me, record.lease_duration_seconds, old.acquire_time,
                                          now, old.lease_transitions)  # fmt: skip
        else:
            record = LeaderElectionRecord(me, record.lease_duration_seconds, now, now,
                                          old.lease_transitions + 1)  # fmt: skip
        if not await lock.update(self._client, record, resource_version):
            return False
        self._observe(record)
        return True

    async def _release(self) -> None:
        """Write the Lease with no holder, if it is still ours."""
        assert self._client is not None
        found = await self.config.lock.get(self._client)
        if found is None or found[0].holder_identity != self.config.identity:
            return
        old, resource_version = found
        now = micro_time()
        released = LeaderElectionRecord("", 1, now, now, old.lease_transitions)
        await self.config.lock.update(self._client, released, resource_version)
        log.info("%s released lease %s", self.config.identity, self.config.lock.path())

    def _duration_seconds(self) -> int:
        return max(1, round(self.config.lease_duration))

    def _observe(self, record: LeaderElectionRecord) -> None:
        self.observed, self.observed_at = record, self.clock.now()

    def _set_leading(self, leading: bool) -> None:
        if leading == self.leading:
            return
        self.leading = leading
        (self._leads if leading else self._follows).set()
        (self._follows if leading else self._leads).clear()
        for callback in self._callbacks:
            callback(leading)
