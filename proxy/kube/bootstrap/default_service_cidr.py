"""The default ``ServiceCIDR`` named ``kubernetes``, as kube-apiserver 1.33+ keeps it
(``pkg/controlplane/controller/defaultservicecidr``, post-start hook
``start-kubernetes-service-cidr-controller``): created from ``--service-cluster-ip-range``
by the first server that starts, then its ``Ready`` condition set to True by a
server-side apply of its status (field manager ``kubernetes-service-cidr-controller``)
when its CIDRs are this server's. One whose CIDRs differ, or whose Ready is False, is
left alone (upstream records a warning Event; here a log line): the servers of a cluster
must be configured alike.

Looked at again every ``INTERVAL`` seconds (a deleted one comes back) with a read from
the watch cache: nothing is written while it is as it should be, so an idle cluster's
etcd revision does not move. The hook's ``/readyz`` check passes once it exists and is
Ready, as upstream's hook returns only then (the Service allocators need it).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from proxy.loopback.client import APIError, LoopbackClient, resource_path
from proxy.server.post_start_hooks import PostStartHookContext
from storage.interfaces import JSONObject

__all__ = ["DEFAULT_SERVICE_CIDR_HOOK", "DefaultServiceCIDR"]

log = logging.getLogger("watchcache.proxy")

DEFAULT_SERVICE_CIDR_HOOK = "start-kubernetes-service-cidr-controller"
NAME = "kubernetes"
FIELD_MANAGER = "kubernetes-service-cidr-controller"
INTERVAL = 10.0  # upstream: the endpoint reconciler's interval
API_VERSION = "networking.k8s.io/v1"


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ready(cidr: JSONObject) -> bool | None:
    """The Ready condition's status as a bool; None when it has none."""
    for condition in (cidr.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return None


@dataclass
class DefaultServiceCIDR:
    """The controller (see the module docstring); ``cidrs`` in order (the first one's
    family is the cluster's default)."""

    cidrs: list[str]
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, hook: PostStartHookContext) -> None:
        while True:
            try:
                if await self.sync(hook.loopback):
                    self.ready.set()
            except Exception as e:  # etcd down, the server still starting: next round
                log.info("default ServiceCIDR: %s (will retry)", e)
            await self.sleep(INTERVAL if self.ready.is_set() else 0.1)

    async def sync(self, client: LoopbackClient) -> bool:
        """One round: whether the default ServiceCIDR exists and is Ready afterwards."""
        path = resource_path("networking.k8s.io", "v1", "servicecidrs", name=NAME)
        current = await client.get(path + "?resourceVersion=0")
        if current is None:
            log.info("creating the default ServiceCIDR with CIDRs %s", self.cidrs)
            body = {"apiVersion": API_VERSION, "kind": "ServiceCIDR",
                    "metadata": {"name": NAME}, "spec": {"cidrs": self.cidrs}}  # fmt: skip
            try:
                current = await client.create(resource_path(
                    "networking.k8s.io", "v1", "servicecidrs"), body)  # fmt: skip
            except APIError as e:
                if e.code != 409:
                    raise
                current = await client.get(path)
                if current is None:
                    return False
        return await self._sync_status(client, path, current)

    async def _sync_status(self, client: LoopbackClient, path: str, cidr: JSONObject) -> bool:
        if (cidr.get("metadata") or {}).get("deletionTimestamp"):
            return False
        ready = _ready(cidr)
        if ready is not None:
            if not ready:
                log.warning("the default ServiceCIDR's condition Ready is not True")
            return ready
        if (cidr.get("spec") or {}).get("cidrs") != self.cidrs:
            log.warning("the default ServiceCIDR's CIDRs %s are not this server's %s",
                        (cidr.get("spec") or {}).get("cidrs"), self.cidrs)  # fmt: skip
            return False
        condition = {"type": "Ready", "status": "True",
                     "message": "Kubernetes default Service CIDR is ready",
                     "lastTransitionTime": _now()}  # fmt: skip
        applied = {"apiVersion": API_VERSION, "kind": "ServiceCIDR", "metadata": {"name": NAME},
                   "status": {"conditions": [condition]}}  # fmt: skip
        await client.apply(path + "/status", applied, FIELD_MANAGER, force=True)
        return True
