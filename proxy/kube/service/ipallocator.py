"""ClusterIP allocation over IPAddress objects, after kube-apiserver 1.37's
``pkg/registry/core/service/ipallocator`` (``Allocator`` behind the ``MetaAllocator`` of
MultiCIDRServiceAllocator, GA since 1.33).

An allocated ClusterIP *is* an ``networking.k8s.io/v1`` IPAddress object named by the
address, whose ``parentRef`` is the Service: creating it is the allocation, so two
replicas (or two requests) can never hold the same address — etcd refuses the second
create, which is upstream's ``provided IP is already allocated``. Releasing deletes it.

The range is ``--service-cluster-ip-range`` without the network address (and, for IPv4,
the broadcast address). KEP-3070: a dynamic allocation starts at a random address of
the upper band and falls back to the lower band (``min(max(16, size/16), 256)``
addresses), which is left to static assignments first. A dry run allocates nothing: a
dynamic one answers the network address, as upstream's allocator does.
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from storage.interfaces import JSONObject

__all__ = [
    "CONTROLLER_NAME",
    "ERR_ALLOCATED",
    "ERR_FULL",
    "ERR_MISMATCHED_NETWORK",
    "AllocationError",
    "IPAddressClient",
    "IPAllocator",
    "family_of",
]

CONTROLLER_NAME = "ipallocator.k8s.io"
LABEL_FAMILY = "ipaddress.kubernetes.io/ip-family"
LABEL_MANAGED_BY = "ipaddress.kubernetes.io/managed-by"
ERR_FULL = "range is full"
ERR_ALLOCATED = "provided IP is already allocated"
ERR_MISMATCHED_NETWORK = "the provided network does not match the current range"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class AllocationError(Exception):
    """One of upstream's allocator errors; ``str()`` is its message."""


class IPAddressClient(Protocol):
    """Where IPAddress objects live (the store of ``ipaddresses``)."""

    async def allocated(self) -> set[str]:
        """The names of the IPAddress objects that exist now (the informer's view)."""
        ...

    async def create(self, obj: JSONObject) -> bool:
        """Create ``obj``; False when an object of its name already exists."""
        ...

    async def delete(self, name: str) -> None:
        """Delete the named IPAddress; absent is not an error."""
        ...


def family_of(ip: str) -> str:
    """``IPv4`` or ``IPv6``."""
    return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"


def _range_offset(size: int) -> int:
    """KEP-3070's ``calculateRangeOffset`` (of the CIDR's size, network and broadcast
    included): the lower band kept for static addresses first."""
    if size <= 16:
        return 0
    return max(16, min(size // 16, 256))


@dataclass
class IPAllocator:
    """The allocator of one Service CIDR (one IP family)."""

    cidr: str
    client: IPAddressClient
    rand: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        network = ipaddress.ip_network(self.cidr, strict=False)
        self.network = network
        self.family = "IPv6" if network.version == 6 else "IPv4"
        self.first: Address = network.network_address + 1
        self.last: Address = network.broadcast_address - (1 if network.version == 4 else 0)
        self.offset = _range_offset(network.num_addresses)
        self.size = int(self.last) - int(self.first) + 1

    def contains(self, ip: str) -> bool:
        return ipaddress.ip_address(ip) in self.network

    async def allocate_service(self, service: JSONObject, ip: str, *, dry_run: bool) -> None:
        """Reserve ``ip`` for ``service`` (upstream's ``AllocateService``)."""
        address = ipaddress.ip_address(ip)
        if address not in self.network:
            raise AllocationError(ERR_MISMATCHED_NETWORK)
        if not int(self.first) <= int(address) <= int(self.last):
            raise AllocationError(
                f"the provided IP ({address}) is not in the valid range. "
                f"The range of valid IPs is {self.network}"
            )
        if dry_run:
            return
        if not await self.client.create(self._ip_address(str(address), service)):
            raise AllocationError(ERR_ALLOCATED)

    async def allocate_next_service(self, service: JSONObject, *, dry_run: bool) -> str:
        """A free address for ``service``: the upper band from a random start, then the
        lower band (``allocateNextService``); ``range is full`` when none is left."""
        if dry_run:
            return str(self.network.network_address)
        taken = await self.client.allocated()
        upper = self.size - self.offset
        bands = [(int(self.first) + self.offset, upper)]
        if self.offset:
            bands.append((int(self.first), self.offset))
        for start, count in bands:
            if count <= 0:
                continue
            for n, value in enumerate(_ring(start, count, self.rand.randrange(count))):
                if n % 4096 == 4095:
                    await asyncio.sleep(0)  # a nearly full /12: let other requests run
                name = str(ipaddress.ip_address(value))
                if name in taken:
                    continue
                # a lost race with another writer: that address is taken, try the next
                if await self.client.create(self._ip_address(name, service)):
                    return name
        raise AllocationError(ERR_FULL)

    async def release(self, ip: str) -> None:
        """Delete the address's IPAddress (errors are not the caller's: upstream logs)."""
        await self.client.delete(str(ipaddress.ip_address(ip)))

    def _ip_address(self, name: str, service: JSONObject) -> JSONObject:
        meta = service.get("metadata") or {}
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IPAddress",
            "metadata": {
                "name": name,
                "labels": {LABEL_FAMILY: self.family, LABEL_MANAGED_BY: CONTROLLER_NAME},
            },
            "spec": {
                "parentRef": {
                    "group": "",
                    "resource": "services",
                    "namespace": meta.get("namespace", ""),
                    "name": meta.get("name", ""),
                }
            },
        }


def _ring(start: int, count: int, offset: int) -> Iterator[int]:
    """``count`` integers from ``start``, beginning at ``start + offset`` and wrapping
    (upstream's ``ipIterator``)."""
    for i in range(count):
        yield start + (offset + i) % count

