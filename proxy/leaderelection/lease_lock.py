"""The Lease a leader election holds (client-go's ``resourcelock.LeaseLock``): one
``coordination.k8s.io/v1`` Lease, read and written through the loopback client, so the
write passes the whole pipeline as ``system:apiserver`` and lands in etcd like any other.

``LeaderElectionRecord`` is the part of the Lease the election reads and writes
(``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``, ``renewTime``,
``leaseTransitions``). ``get`` returns the record with the resourceVersion it was read
at; ``create`` and ``update`` are optimistic: False when another holder wrote first
(AlreadyExists, Conflict), ``APIError`` for any other failure.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from proxy.loopback.client import APIError, LoopbackClient, resource_path

__all__ = ["LeaderElectionRecord", "LeaseLock", "micro_time"]

JSON = dict[str, Any]


def micro_time(now: dt.datetime | None = None) -> str:
    """A ``metav1.MicroTime``: RFC 3339 with microseconds, UTC."""
    stamp = now or dt.datetime.now(dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaderElectionRecord:
    """``resourcelock.LeaderElectionRecord`` (``holder_identity`` empty: released)."""

    holder_identity: str
    lease_duration_seconds: int
    acquire_time: str
    renew_time: str
    lease_transitions: int

    def spec(self) -> JSON:
        spec: JSON = {
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.lease_transitions,
        }
        if self.holder_identity:
            spec["holderIdentity"] = self.holder_identity
        return spec

    @classmethod
    def of(cls, lease: JSON) -> LeaderElectionRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder_identity=str(spec.get("holderIdentity") or ""),
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=str(spec.get("acquireTime") or ""),
            renew_time=str(spec.get("renewTime") or ""),
            lease_transitions=int(spec.get("leaseTransitions") or 0),
        )


@dataclass(frozen=True)
class LeaseLock:
    """The Lease ``namespace/name`` (see the module docstring)."""

    namespace: str
    name: str

    def collection(self) -> str:
        return resource_path("coordination.k8s.io", "v1", "leases", self.namespace)

    def path(self) -> str:
        return f"{self.collection()}/{self.name}"

    async def get(self, client: LoopbackClient) -> tuple[LeaderElectionRecord, str] | None:
        """The record and its resourceVersion, None when there is no Lease (a consistent
        read: an unset resourceVersion)."""
        lease = await client.get(self.path())
        if lease is None:
            return None
        return LeaderElectionRecord.of(lease), str(lease["metadata"].get("resourceVersion", ""))

    async def create(self, client: LoopbackClient, record: LeaderElectionRecord) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.spec(),
        }
        return await client.create_if_absent(self.collection(), body) is not None

    async def update(
        self, client: LoopbackClient, record: LeaderElectionRecord, resource_version: str
    ) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": resource_version,
            },
            "spec": record.spec(),
        }
        try:
            await client.request("PUT", self.path(), body)
        except APIError as e:
            if e.code == 409:  # another holder wrote since we read: not ours this round
                return False
            raise
        return True
