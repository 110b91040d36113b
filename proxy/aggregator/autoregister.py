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

``run`` compares the wanted set with the lister's (in memory) every ``interval`` seconds
and writes only differences; storage errors are retried at the next round. ``ready`` is
set after the first complete round (the ``/readyz`` check ``autoregister-completion``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable, Iterable
from typing import Any

from proxy.aggregator.apiservice import AUTOMANAGED_LABEL, CRD_PRIORITY, GROUP, local_apiservice
from proxy.aggregator.lister import APIServiceLister
from proxy.registry import object_meta
from proxy.registry.storage_factory import ResourceStorage
from storage import errors as serr

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
    """Keeps the local APIServices of ``served()`` (group-versions) stored."""

    def __init__(
        self,
        storage: ResourceStorage,
        lister: APIServiceLister,
        served: Callable[[], list[tuple[str, str]]],
        interval: float = 1.0,
    ) -> None:
        self.storage = storage
        self.lister = lister
        self.served = served
        self.interval = interval
        self.ready = asyncio.Event()
        # "onstart" APIServices already in place once: not touched again until restart
        self._synced_on_start: set[str] = set()

    async def _create(self, wanted: JSON) -> None:
        rs = self.storage
        obj = object_meta.prepare_for_create(copy.deepcopy(wanted), rs.resource, "")
        with contextlib.suppress(serr.AlreadyExists):  # another replica was faster
            await rs.store.create(rs.object_key("", wanted["metadata"]["name"]), obj)

    async def _put_back(self, wanted: JSON) -> None:
        async def apply(obj: JSON) -> JSON:
            out = copy.deepcopy(obj)
            out["spec"] = copy.deepcopy(wanted["spec"])
            meta = out.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), **wanted["metadata"]["labels"]}
            return out

        rs = self.storage
        key = rs.object_key("", wanted["metadata"]["name"])
        with contextlib.suppress(serr.NotFound):
            await rs.store.guaranteed_update(key, None, apply)

    async def _delete(self, name: str) -> None:
        rs = self.storage
        with contextlib.suppress(serr.NotFound):
            await rs.store.delete(rs.object_key("", name))

    async def sync_once(self) -> None:
        """One round: create, put back, delete what differs from the lister's view."""
        wanted = {w["metadata"]["name"]: w for w in local_apiservices(self.served())}
        current = self.lister.objects
        for name, w in wanted.items():
            if name in self._synced_on_start:
                continue  # "onstart": synced once, then left to its users (as upstream)
            found = current.get(name)
            if found is None:
                await self._create(w)
            elif found.get("spec") != w["spec"] or not _labels(found).get(AUTOMANAGED_LABEL):
                await self._put_back(w)
            if w["metadata"]["labels"][AUTOMANAGED_LABEL] == "onstart":
                self._synced_on_start.add(name)
        for name, obj in list(current.items()):
            if _labels(obj).get(AUTOMANAGED_LABEL) == "true" and name not in wanted:
                await self._delete(name)  # its CRD's group-version is gone

    async def run(self) -> None:
        """Until cancelled (see the module docstring)."""
        await self.lister.synced.wait()
        while True:
            try:
                await self.sync_once()
                self.ready.set()
            except serr.StorageError as e:
                log.info("registering the local APIServices: %s (will retry)", e)
            await asyncio.sleep(self.interval)  # the registry has no change events to await
