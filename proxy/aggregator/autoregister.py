"""kube-apiserver's ``autoregister`` controller with its two feeders: every group-version
this server serves itself gets a local APIService.

- the built-in group-versions (``apiservice.LOCAL_PRIORITIES``: ``v1.``, ``v1.apps``,
  ...) are labelled ``kube-aggregator.kubernetes.io/automanaged: onstart``, with
  upstream's priorities; at start each is created when missing and its spec put back
  when changed, then left alone until the next start (upstream's "sync on start"),
  never deleted;
- any other group-version of the registry (custom resources, once CRDs make the
  registry dynamic: upstream's ``crdRegistrationController``) gets
  ``automanaged: "true"``, ``groupPriorityMinimum: 1000``, ``versionPriority: 100``
  (what a kube-apiserver 1.32 registers for a CRD's versions), kept in sync all the
  time, and deleted when its group-version is no longer served.

It writes through the loopback client (as ``system:apiserver``, through admission
and validation). ``run`` compares the wanted set with the lister's (in memory) every
``interval`` seconds and writes only differences; failed writes are retried at the next
round. ``ready`` is set after the first complete round (the ``/readyz`` check
``autoregister-completion``).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Iterable
from typing import Any

from proxy.aggregator.apiservice import AUTOMANAGED_LABEL, CRD_PRIORITY, GROUP, local_apiservice
from proxy.aggregator.lister import APIServiceLister
from proxy.loopback.client import APIError, LoopbackClient, resource_path

__all__ = ["AutoRegister", "local_apiservices"]

log = logging.getLogger("watchcache.aggregator")

JSON = dict[str, Any]


def _crd_apiservice(group: str, version: str) -> JSON:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "APIService",
        "metadata": {"name": f"{version}.{group}", "labels": {AUTOMANAGED_LABEL: "true"}},
        "spec": {"group": group, "version": version, "groupPriorityMinimum": CRD_PRIORITY[0],
                 "versionPriority": CRD_PRIORITY[1]},
    }  # fmt: skip


def local_apiservices(group_versions: Iterable[tuple[str, str]]) -> list[JSON]:
    """The local APIServices of ``group_versions``: built-in ones with upstream's
    priorities (``onstart``), any other as a CRD's (``true``)."""
    return [
        local_apiservice(group, version) or _crd_apiservice(group, version)
        for group, version in group_versions
    ]


def _labels(obj: JSON) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


class AutoRegister:
    """Keeps the local APIServices of ``served()`` (group-versions) stored, through the
    loopback client (``run``)."""

    def __init__(
        self,
        lister: APIServiceLister,
        served: Callable[[], list[tuple[str, str]]],
        interval: float = 1.0,
    ) -> None:
        self.lister = lister
        self.served = served
        self.interval = interval
        self.ready = asyncio.Event()
        # "onstart" APIServices already in place once: not touched again until restart
        self._synced_on_start: set[str] = set()

    async def _put_back(self, client: LoopbackClient, wanted: JSON) -> None:
        def apply(obj: JSON) -> JSON:
            obj["spec"] = copy.deepcopy(wanted["spec"])
            meta = obj.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), **wanted["metadata"]["labels"]}
            return obj

        await client.update(_path(wanted["metadata"]["name"]), apply)

    async def sync_once(self, client: LoopbackClient) -> None:
        """One round: create, put back, delete what differs from the lister's view."""
        wanted = {w["metadata"]["name"]: w for w in local_apiservices(self.served())}
        current = self.lister.objects
        for name, w in wanted.items():
            if name in self._synced_on_start:
                continue  # "onstart": synced once, then left to its users (as upstream)
            found = current.get(name)
            if found is None:
                await client.create_if_absent(_path(), copy.deepcopy(w))
            elif found.get("spec") != w["spec"] or not _labels(found).get(AUTOMANAGED_LABEL):
                await self._put_back(client, w)
            if w["metadata"]["labels"][AUTOMANAGED_LABEL] == "onstart":
                self._synced_on_start.add(name)
        for name, obj in list(current.items()):
            if _labels(obj).get(AUTOMANAGED_LABEL) == "true" and name not in wanted:
                await client.delete(_path(name))  # its CRD's group-version is gone

    async def run(self, client: LoopbackClient) -> None:
        """Until cancelled (see the module docstring)."""
        await self.lister.synced.wait()
        while True:
            try:
                await self.sync_once(client)
                self.ready.set()
            except APIError as e:
                log.info("registering the local APIServices: %s (will retry)", e)
            await asyncio.sleep(self.interval)  # the registry has no change events to await


def _path(name: str = "") -> str:
    return resource_path(GROUP, "v1", "apiservices", name=name)
