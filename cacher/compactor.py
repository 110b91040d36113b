"""Periodic etcd compaction, after kube-apiserver's ``storage/etcd3/compact.go``.

Every ``interval`` the compactor compacts etcd up to the revision it observed one interval
earlier, so that watchers get a whole interval to catch up. Several API servers share one
etcd: each round first writes the key ``compact_rev_key`` in a transaction guarded by the
key's last modification seen (upstream guards on its version, the same "nobody else wrote
it since I looked"); only the winner compacts, the others just learn the new state and
compact nothing this round. Compactions made by anyone else reach the caches through their
etcd watches (a resume below the compacted revision re-lists).

One compactor per etcd client, shared by every resource's cacher (``acquire``/``release``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from cacher.clock import Clock, RealClock
from etcdclient.errors import Compacted, EtcdError
from etcdclient.types import TxnResult

log = logging.getLogger(__name__)

COMPACT_REV_KEY = b"compact_rev_key"


class CompactClient(Protocol):
    async def optimistic_put(
        self, key: bytes, value: bytes, expected_mod_revision: int, *, lease: int = 0
    ) -> TxnResult: ...

    async def compact(self, revision: int, *, physical: bool = False) -> int: ...


class Compactor:
    """``run`` is its task, started by the first ``acquire`` and cancelled by the last
    ``release``. ``last_key_revision`` (mod_revision of compact_rev_key as last seen) and
    ``next_revision`` (what the next winning round compacts to) change only in ``round``."""

    _registry: dict[int, Compactor] = {}

    def __init__(self, client: CompactClient, interval: float, clock: Clock) -> None:
        self._client = client
        self.interval = interval
        self._clock = clock
        self.last_key_revision = 0
        self.next_revision = 0
        self.compacted: list[int] = []  # revisions this compactor compacted
        self._users = 0
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def acquire(
        cls, client: CompactClient, interval: float, clock: Clock | None = None
    ) -> Compactor | None:
        """The shared compactor of ``client`` (started now if new); None if disabled."""
        if interval <= 0:
            return None
        c = cls._registry.get(id(client))
        if c is None:
            c = cls._registry[id(client)] = cls(client, interval, clock or RealClock())
            c._task = asyncio.get_running_loop().create_task(c.run(), name="etcd-compactor")
        c._users += 1
        return c

    async def release(self) -> None:
        self._users -= 1
        if self._users > 0:
            return
        if self._registry.get(id(self._client)) is self:
            del self._registry[id(self._client)]
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run(self) -> None:
        while True:
            await self._clock.sleep(self.interval)
            try:
                await self.round()
            except EtcdError as err:  # etcd down: try again next interval
                log.warning("etcd compaction failed: %s", err)

    async def round(self) -> None:
        """One interval: win the compact_rev_key race, then compact to the revision
        recorded a round ago (nothing on the first round, as upstream on bootstrap)."""
        target = self.next_revision
        res = await self._client.optimistic_put(
            COMPACT_REV_KEY, str(target).encode(), self.last_key_revision
        )
        self.next_revision = res.revision
        if not res.succeeded:  # another server compacted (or started) this round
            self.last_key_revision = res.kv.mod_revision if res.kv is not None else 0
            return
        self.last_key_revision = res.revision
        if target == 0:
            return
        try:
            await self._client.compact(target)
            self.compacted.append(target)
            log.info("etcd: compacted revision %d", target)
        except Compacted:  # someone compacted further already
            pass
