"""The ``default/kubernetes`` Service and its endpoints, as kube-apiserver's bootstrap
controller keeps them (``pkg/controlplane/controller/kubernetesservice``, its endpoint
reconciler and ``EndpointsAdapter``): a ClusterIP Service on the first address of
``--service-cluster-ip-range``, port ``https`` 443 to this server's port, and the
Endpoints and EndpointSlice that list this server's advertised address. In-cluster
clients (``rest.InClusterConfig``) and upstream's e2e suite find the API through it.

Reconciled every ``INTERVAL`` seconds (upstream's ``--endpoint-reconciler-interval``,
10 s): a deleted or changed object is put back. With ``--endpoint-reconciler-type=lease``
(the default, upstream's) the endpoints list the servers whose master leases are alive
(``master_leases``), so a dead replica drops out within the lease's TTL; with
``master-count`` each replica adds its own address and never removes another's.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from proxy.kube.bootstrap.master_leases import MasterLeases
from proxy.kube.bootstrap.writer import BootstrapWriter
from proxy.server.post_start_hooks import PostStartHookContext
from storage.interfaces import JSONObject

__all__ = [
    "INTERVAL",
    "KubernetesService",
    "MasterLeaseKeeper",
    "advertise_address",
    "first_service_ip",
]

log = logging.getLogger("watchcache.proxy")

INTERVAL = 10.0
NAME, NAMESPACE, PORT_NAME = "kubernetes", "default", "https"


def first_service_ip(cidr: str) -> str:
    """The Service's ClusterIP: the range's first address after the network's
    (``10.96.0.0/12`` gives ``10.96.0.1``)."""
    network = ipaddress.ip_network(cidr, strict=False)
    return str(network.network_address + 1)


def advertise_address(advertise: str, bind: str) -> str:
    """The address the endpoints list: ``--advertise-address``, else the bind address,
    else (bound to every interface) the address of the default route's interface, as
    kube-apiserver's ``ChooseHostInterface``; loopback when there is none."""
    if advertise:
        return advertise
    if bind and not ipaddress.ip_address(bind).is_unspecified:
        return bind
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: the route is looked up
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def _service(cluster_ip: str, port: int) -> Callable[[JSONObject], JSONObject]:
    def desired(current: JSONObject) -> JSONObject:
        spec = dict(current.get("spec") or {})
        spec.update({
            "type": "ClusterIP",
            "clusterIP": spec.get("clusterIP") or cluster_ip,  # immutable once set
            "ports": [{"name": PORT_NAME, "port": 443, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None",
        })  # fmt: skip
        spec["clusterIPs"] = [spec["clusterIP"]]
        ipv6 = ipaddress.ip_address(spec["clusterIP"]).version == 6
        spec.setdefault("ipFamilies", ["IPv6" if ipv6 else "IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        meta = dict(current.get("metadata") or {"name": NAME, "namespace": NAMESPACE})
        meta["labels"] = {"component": "apiserver", "provider": "kubernetes"}
        return {**current, "apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}

    return desired


def _with_address(addresses: list[str], address: str) -> list[str]:
    return sorted(set(addresses) | {address})


# the addresses the endpoints should list, given those they list now
Addresses = Callable[[list[str]], list[str]]


def _endpoints(addresses: Addresses, port: int) -> Callable[[JSONObject], JSONObject]:
    def desired(current: JSONObject) -> JSONObject:
        subsets = current.get("subsets") or [{}]
        listed = [str(a.get("ip")) for a in (subsets[0].get("addresses") or [])]
        meta = dict(current.get("metadata") or {"name": NAME, "namespace": NAMESPACE})
        meta["labels"] = {"endpointslice.kubernetes.io/skip-mirror": "true"}
        return {**current, "apiVersion": "v1", "kind": "Endpoints", "metadata": meta,
                "subsets": [{
                    "addresses": [{"ip": ip} for ip in addresses(listed)],
                    "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}],
                }]}  # fmt: skip

    return desired


def _endpoint_slice(
    address: str, addresses: Addresses, port: int
) -> Callable[[JSONObject], JSONObject]:
    def desired(current: JSONObject) -> JSONObject:
        listed = [str(a) for e in current.get("endpoints") or [] for a in e.get("addresses") or []]
        family = "IPv6" if ipaddress.ip_address(address).version == 6 else "IPv4"
        meta = dict(current.get("metadata") or {"name": NAME, "namespace": NAMESPACE})
        meta["labels"] = {"kubernetes.io/service-name": NAME}
        return {**current, "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": meta, "addressType": family,
                "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}
                              for ip in addresses(listed)],
                "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}]}  # fmt: skip

    return desired


def _created_only(
    desired: Callable[[JSONObject], JSONObject],
) -> Callable[[JSONObject], JSONObject]:
    """``desired`` when the object is absent; the stored one, unchanged, otherwise."""
    return lambda current: current if current else desired(current)


@dataclass
class KubernetesService:
    """Keeps the Service and its endpoints; ``ready`` is set (by ``run`` only) once
    all three were written. ``port`` gives this server's serving port once it listens
    (None before)."""

    service_cidr: str
    address: str
    port: Callable[[], int | None]
    # False (--endpoint-reconciler-type=none): the Service is created when absent but
    # neither it nor the endpoints are rewritten, so a second server on the same etcd
    # leaves the first one's port alone
    reconcile: bool = True
    # --endpoint-reconciler-type=lease: the endpoints list the servers whose master
    # leases are alive (a dead one drops out); None (master-count): this server's
    # address is added and none is ever removed
    leases: MasterLeases | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def reconcile_once(self, writer: BootstrapWriter) -> bool:
        """Write what is missing or changed; True when all three are as they should."""
        port = self.port()
        if port is None:
            return False
        ensure = writer.ensure
        service = _service(first_service_ip(self.service_cidr), port)
        try:
            if not self.reconcile:
                await ensure("", "v1", "services", NAMESPACE, _created_only(service))
                return True
            await ensure("", "v1", "services", NAMESPACE, service)
            addresses = await self._addresses()
            await ensure("", "v1", "endpoints", NAMESPACE, _endpoints(addresses, port))
            await ensure("discovery.k8s.io", "v1", "endpointslices", NAMESPACE,
                         _endpoint_slice(self.address, addresses, port))  # fmt: skip
        except Exception as e:  # etcd down, a race: the next round retries
            log.info("reconciling the kubernetes service: %s (will retry)", e)
            return False
        return True

    async def _addresses(self) -> Addresses:
        """What the endpoints list: with leases, the live servers' (this one's lease
        refreshed first); else what they list plus this server."""
        if self.leases is None:
            return lambda listed: _with_address(listed, self.address)
        await self.leases.update(self.address)
        live = await self.leases.addresses()
        return lambda listed: _with_address(live, self.address)

    async def run(self, hook: PostStartHookContext) -> None:
        """The ``bootstrap-controller`` hook: reconcile until cancelled, every second
        until the first success, then every ``INTERVAL``."""
        writer = BootstrapWriter(hook.loopback)
        while True:
            if await self.reconcile_once(writer):
                self.ready.set()
            await self.sleep(INTERVAL if self.ready.is_set() else 1.0)


@dataclass
class MasterLeaseKeeper:
    """Every server's own master lease, refreshed every ``INTERVAL`` (the ``bootstrap-
    controller`` reconciling the endpoints runs in one worker of a server, and in one
    server of several sharing the controllers' Lease; each must still say it is alive).
    Not removed at shutdown: the key expires within its TTL."""

    leases: MasterLeases
    address: str
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, hook: PostStartHookContext) -> None:
        while True:
            try:
                await self.leases.update(self.address)
                self.ready.set()
            except Exception as e:  # etcd down: the next round retries
                log.info("refreshing the master lease of %s: %s (will retry)", self.address, e)
            await self.sleep(INTERVAL if self.ready.is_set() else 1.0)
