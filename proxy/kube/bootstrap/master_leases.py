"""The lease endpoint reconciler's record of live API servers (upstream's
``pkg/controlplane/reconcilers/lease.go``, ``--endpoint-reconciler-type=lease``, its
default): every server keeps ``<prefix>/masterleases/<IP>`` in etcd under an etcd lease
of ``TTL`` seconds, refreshed every reconcile; the ``default/kubernetes`` endpoints list
the addresses whose keys are alive, so a replica that dies drops out within the TTL
instead of staying listed for ever (the ``master-count`` behaviour).

Written straight to etcd, as upstream's reconciler writes through a storage of its own:
the keys are no API resource. The value is an Endpoints naming the address, as upstream
stores it.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from etcdclient import EtcdClient

__all__ = ["TTL", "MasterLeases"]

TTL = 15  # seconds (upstream's DefaultEndpointReconcilerTTL)


@dataclass
class MasterLeases:
    """The lease keys under ``prefix`` (the server's ``--etcd-prefix``)."""

    client: EtcdClient
    prefix: str
    ttl: int = TTL

    def _dir(self) -> bytes:
        return f"{self.prefix.rstrip('/')}/masterleases/".encode()

    async def update(self, address: str) -> None:
        """(Re)write this server's key under a fresh lease of ``ttl`` seconds (the
        previous lease, no longer attached, expires on its own)."""
        lease = await self.client.lease_grant(self.ttl)
        value = orjson.dumps({
            "kind": "Endpoints", "apiVersion": "v1", "metadata": {"name": address},
            "subsets": [{"addresses": [{"ip": address}]}],
        })  # fmt: skip
        await self.client.put(self._dir() + address.encode(), value, lease=lease.id)

    async def addresses(self) -> list[str]:
        """The addresses whose leases are alive, sorted."""
        listed = await self.client.list_prefix(self._dir(), keys_only=True)
        start = len(self._dir())
        return sorted(kv.key[start:].decode() for kv in listed.kvs)

    async def remove(self, address: str) -> None:
        """Drop this server's key (a graceful shutdown: it leaves the endpoints at once)."""
        await self.client.delete(self._dir() + address.encode())
