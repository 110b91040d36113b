"""NodePort allocation, after kube-apiserver's ``pkg/registry/core/service/portallocator``
(``--service-node-port-range``, default ``30000-32767``).

Upstream keeps a bitmap of the range in etcd (``/registry/ranges/servicenodeports``)
and a repair controller reconciles it with the Services. Here the Services themselves
are the record: a port is taken when a stored Service (other than the one being
written) holds it as a ``nodePort`` or ``healthCheckNodePort``, read from etcd, or
when a write in flight on this server reserved it. The reservation ends once the write
is stored or failed, so two writes on one server never get one port; two replicas
allocating at the same instant could (docs/conformance.md).

KEP-3668: dynamic ports come from a random start in the upper band first; the lower
``min(max(16, size/32), 128)`` ports are left for static ones.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from proxy.kube.service.ipallocator import ERR_FULL, AllocationError

__all__ = ["ERR_PORT_ALLOCATED", "NodePortAllocator", "PortRange", "parse_port_range"]

ERR_PORT_ALLOCATED = "provided port is already allocated"

# (namespace, name) of the Service being written -> the ports every other one holds
PortsInUse = Callable[[str, str], Awaitable[set[int]]]


@dataclass(frozen=True)
class PortRange:
    base: int
    size: int

    def __str__(self) -> str:
        return f"{self.base}-{self.base + self.size - 1}"

    def __contains__(self, port: object) -> bool:
        return isinstance(port, int) and self.base <= port < self.base + self.size


def parse_port_range(value: str) -> PortRange:
    """``30000-32767`` (or a single port): ``net.ParsePortRange``."""
    low, _, high = value.strip().partition("-")
    first, last = int(low), int(high or low)
    if not 0 < first <= last <= 65535:
        raise ValueError(f"invalid port range {value!r}")
    return PortRange(first, last - first + 1)


def _range_offset(size: int) -> int:
    if size <= 16:
        return 0
    return max(16, min(size // 32, 128))


@dataclass
class NodePortAllocator:
    """Allocations for one write (``reserve``) against the ports in use."""

    ports: PortRange
    in_use: PortsInUse
    rand: random.Random = field(default_factory=random.Random)
    # ports of writes in flight; changed only under ``lock``
    reserved: set[int] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def operation(self, namespace: str, name: str) -> PortOperation:
        return PortOperation(self, namespace, name)

    async def taken(self, namespace: str, name: str) -> set[int]:
        return await self.in_use(namespace, name) | self.reserved


@dataclass
class PortOperation:
    """The ports one Service write takes (upstream's ``PortAllocationOperation``):
    ``allocate``/``allocate_next`` reserve; ``finish`` ends the reservations once the
    write is stored or failed."""

    allocator: NodePortAllocator
    namespace: str
    name: str
    held: set[int] = field(default_factory=set)

    async def allocate(self, port: int) -> None:
        ports = self.allocator.ports
        if port not in ports:
            raise AllocationError(
                f"provided port is not in the valid range. The range of valid ports is {ports}"
            )
        if port in self.held:
            return
        async with self.allocator.lock:
            if port in await self.allocator.taken(self.namespace, self.name):
                raise AllocationError(ERR_PORT_ALLOCATED)
            self._hold(port)

    async def allocate_next(self) -> int:
        a = self.allocator
        offset = _range_offset(a.ports.size)
        bands = [(a.ports.base + offset, a.ports.size - offset), (a.ports.base, offset)]
        async with a.lock:
            taken = await a.taken(self.namespace, self.name) | self.held
            for start, count in bands:
                if count <= 0:
                    continue
                first = a.rand.randrange(count)
                for i in range(count):
                    port = start + (first + i) % count
                    if port not in taken:
                        self._hold(port)
                        return port
        raise AllocationError(ERR_FULL)

    def _hold(self, port: int) -> None:
        self.held.add(port)
        self.allocator.reserved.add(port)

    async def finish(self) -> None:
        async with self.allocator.lock:  # see the module docstring: after the write
            self.allocator.reserved -= self.held
        self.held.clear()
