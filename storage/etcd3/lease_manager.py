"""Leases for values that expire (kube-apiserver's ``storage/etcd3/lease_manager.go``).

A resource whose REST storage has a TTL (only Events: ``--event-ttl``, 1 h by default)
writes every value under an etcd lease, so etcd itself deletes it when the lease ends —
the apiserver never sweeps. Granting a lease per write would be a round trip and an etcd
object per Event; like upstream, one lease is shared by the writes of a short window: a
lease is granted with a little extra TTL (5 % of the TTL, at most 60 s) and reused while
it still outlives ``now + ttl`` and does not outlive ``now + ttl + extra``, for at most
1000 values. A value thus lives between ``ttl`` and ``ttl + extra`` seconds after its
last write (every write of it, create or update, attaches it to a current lease).
"""

from __future__ import annotations

import asyncio
import time

from etcdclient import EtcdClient

__all__ = ["LeaseManager"]

REUSE_DURATION_PERCENT = 0.05  # upstream's defaultLeaseReuseDurationPercent
MAX_REUSE_DURATION_SECONDS = 60  # upstream's defaultLeaseReuseDurationSeconds
MAX_OBJECT_COUNT = 1000  # upstream's defaultLeaseMaxObjectCount: values per shared lease


class LeaseManager:
    """Hands out lease ids for writes with ``ttl`` seconds to live."""

    def __init__(self, client: EtcdClient) -> None:
        self._client = client
        self._lock = asyncio.Lock()
        self._lease_id = 0
        self._expires = 0.0  # monotonic time the current lease ends
        self._attached = 0  # values written under it

    @staticmethod
    def reuse_seconds(ttl: int) -> int:
        return min(int(REUSE_DURATION_PERCENT * ttl), MAX_REUSE_DURATION_SECONDS)

    async def get_lease(self, ttl: int) -> int:
        """A lease id that lives at least ``ttl`` seconds from now (a shared one when it
        does not live much longer)."""
        async with self._lock:
            now = time.monotonic()
            extra = self.reuse_seconds(ttl)
            valid = now + ttl < self._expires
            sufficient = now + ttl + extra > self._expires
            if self._lease_id and valid and sufficient and self._attached < MAX_OBJECT_COUNT:
                self._attached += 1
                return self._lease_id
            lease = await self._client.lease_grant(ttl + extra)
            self._lease_id, self._expires, self._attached = lease.id, now + ttl + extra, 1
            return self._lease_id
