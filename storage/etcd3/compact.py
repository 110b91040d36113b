"""Periodic etcd compaction, after kube-apiserver's ``storage/etcd3/compact.go``.

Every ``interval`` the compactor compacts etcd up to the revision it observed one interval
earlier, so that watchers get a whole interval to catch up. Several API servers share one
etcd: each round first writes the key ``compact_rev_key`` in a transaction guarded by the
key's last modification seen (upstream guards on its version, the same "nobody else wrote
it since I looked"); only the winner compacts, the others just learn the new state and
compact nothing this round. Compactions made by anyone else reach the watch caches through
their etcd watches (a resume below the compacted revision re-lists).

One compactor per etcd client, owned by whoever owns the client (the server's storage
context): ``start()`` with the client, ``stop()`` before closing it. Its etcd calls go
through the store's translation (``storage.etcd3.translate.call``).

``compact_revision`` is the latest compaction it knows of (upstream's
``CompactRevision()``): its own, or the one another server recorded in
``compact_rev_key``. The watch caches drop their snapshots of compacted revisions by it
(``ListFromCacheSnapshot``). With compaction disabled (``interval`` 0) and
``observe_interval`` set, it only reads the key every ``observe_interval`` seconds, as
upstream's compactor keeps observing other servers' compactions for the snapshots.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from etcdclient import EtcdClient
from storage.errors import Expired, StorageError
from storage.etcd3.translate import call

log = logging.getLogger(__name__)

COMPACT_REV_KEY = b"compact_rev_key"

Sleep = Callable[[float], Awaitable[None]]


class Compactor:
    """``last_key_revision`` (mod_revision of compact_rev_key as last seen) and
    ``next_revision`` (what the next winning round compacts to) change only in ``round``.
    ``sleep`` is injected so tests drive the interval with a fake clock."""

    def __init__(
        self,
        client: EtcdClient,
        interval: float,
        *,
        request_timeout: float = 10.0,
        sleep: Sleep = asyncio.sleep,
        observe_interval: float = 0.0,
    ) -> None:
        self._client = client
        self.interval = interval
        self.observe_interval = observe_interval
        self.compact_revision = 0  # the latest compaction known (ours or another's)
        self._timeout = request_timeout
        self._sleep = sleep
        self.last_key_revision = 0
        self.next_revision = 0
        self.compacted: list[int] = []  # revisions this compactor compacted
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the periodic task (idempotent); needs the event loop running."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run(), name="etcd-compactor")

    async def stop(self) -> None:
        """Cancel and await the task (idempotent)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(self) -> None:
        compacting = self.interval > 0
        while True:
            await self._sleep(self.interval if compacting else self.observe_interval)
            try:
                await (self.round() if compacting else self.observe())
            except StorageError as err:  # etcd down: try again next interval
                log.warning("etcd compaction failed: %s", err.message)

    async def observe(self) -> None:
        """Learn the latest compaction another server recorded in compact_rev_key."""
        res = await call(self._client.get(COMPACT_REV_KEY), self._timeout, operation="get")
        if res.kv is not None:
            self._learn(res.kv.value)

    def _learn(self, value: bytes) -> None:
        """compact_rev_key's value: the revision its writer compacts to."""
        try:
            revision = int(value or b"0")
        except ValueError:  # not written by an API server: nothing to learn
            return
        self.compact_revision = max(self.compact_revision, revision)

    async def round(self) -> None:
        """One interval: win the compact_rev_key race, then compact to the revision
        recorded a round ago (nothing on the first round, as upstream on bootstrap)."""
        target = self.next_revision
        res = await call(
            self._client.optimistic_put(
                COMPACT_REV_KEY, str(target).encode(), self.last_key_revision
            ),
            self._timeout,
            operation="compactRevisionKey",
        )
        self.next_revision = res.revision
        if not res.succeeded:  # another server compacted (or started) this round
            self.last_key_revision = res.kv.mod_revision if res.kv is not None else 0
            if res.kv is not None:
                self._learn(res.kv.value)
            return
        self.last_key_revision = res.revision
        if target == 0:
            return
        try:
            await call(self._client.compact(target), self._timeout, operation="compact")
            self.compacted.append(target)
            self.compact_revision = max(self.compact_revision, target)
            log.info("etcd: compacted revision %d", target)
        except Expired:  # someone compacted further already
            self.compact_revision = max(self.compact_revision, target)
