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
and validation). As upstream's, it is a work queue of APIService names, reconciled one
at a time against the lister (the shared informer): a change to an APIService enqueues
its name (one deleted by hand is put back at once), and every ``interval`` seconds every
wanted or automanaged name is enqueued again (the registry has no change events: that
resync is how a CRD's new group-version is noticed). A failed write is retried with the
queue's per-name backoff. ``ready`` is set once every name of the first round has been
reconciled (the ``/readyz`` check ``autoregister-completion``).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Iterable
from typing import Any

from proxy.aggregator.apiservice import AUTOMANAGED_LABEL, CRD_PRIORITY, GROUP, local_apiservice
from proxy.aggregator.lister import APIServiceLister
from proxy.informer import WorkQueue, run_workers
from proxy.loopback.client import LoopbackClient, resource_path

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
        self.queue: WorkQueue[str] = WorkQueue("autoregister")
        self.client: LoopbackClient | None = None
        # "onstart" APIServices already in place once: not touched again until restart
        self._synced_on_start: set[str] = set()
        # the names of the first round not reconciled yet (None once ``ready``)
        self._first_round: set[str] | None = None
        # ``_wanted``'s last answer and the group-versions it was built from
        self._served: list[tuple[str, str]] | None = None
        self._wanted_now: dict[str, JSON] = {}
        lister.on_change(self.queue.add)

    def _wanted(self) -> dict[str, JSON]:
        """The wanted APIServices by name, rebuilt only when the served group-versions
        change: every reconcile asks for them (each resync reconciles every name, once a
        second), and rebuilding them all for each name was most of an idle server's
        Python. Never mutated by its users (what is written is deep-copied)."""
        served = self.served()
        if served != self._served:
            self._served = served
            self._wanted_now = {w["metadata"]["name"]: w for w in local_apiservices(served)}
        return self._wanted_now

    def _enqueue_all(self) -> set[str]:
        """Every wanted name and every automanaged one stored (to delete)."""
        names = set(self._wanted())
        names.update(n for n, o in self.lister.objects.items()
                     if _labels(o).get(AUTOMANAGED_LABEL) == "true")  # fmt: skip
        for name in names:
            self.queue.add(name)
        return names

    async def _put_back(self, client: LoopbackClient, wanted: JSON) -> None:
        def apply(obj: JSON) -> JSON:
            obj["spec"] = copy.deepcopy(wanted["spec"])
            meta = obj.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), **wanted["metadata"]["labels"]}
            return obj

        await client.update(_path(wanted["metadata"]["name"]), apply)

    async def reconcile(self, name: str) -> None:
        """Create, put back or delete ``name`` where it differs from what is wanted."""
        assert self.client is not None, "run() sets the client"
        await self._sync(self.client, name, self._wanted().get(name))
        if self._first_round is not None:
            self._first_round.discard(name)
            if not self._first_round:
                self._first_round = None
                self.ready.set()

    async def _sync(self, client: LoopbackClient, name: str, wanted: JSON | None) -> None:
        found = self.lister.informer.indexer.get_by_key(name)
        if wanted is None:
            if found is not None and _labels(found).get(AUTOMANAGED_LABEL) == "true":
                await client.delete(_path(name))  # its CRD's group-version is gone
            return
        if name in self._synced_on_start:
            return  # "onstart": synced once, then left to its users (as upstream)
        if found is None:
            await client.create_if_absent(_path(), copy.deepcopy(wanted))
        elif found.get("spec") != wanted["spec"] or not _labels(found).get(AUTOMANAGED_LABEL):
            await self._put_back(client, wanted)
        if wanted["metadata"]["labels"][AUTOMANAGED_LABEL] == "onstart":
            self._synced_on_start.add(name)

    async def _resync_forever(self) -> None:
        while True:
            await asyncio.sleep(self.interval)  # the registry has no change events to await
            self._enqueue_all()

    async def run(self, client: LoopbackClient) -> None:
        """Until cancelled (see the module docstring); the queue is shut down then."""
        self.client = client
        await self.lister.synced.wait()
        self._first_round = self._enqueue_all()
        if not self._first_round:
            self._first_round = None
            self.ready.set()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._resync_forever(), name="autoregister-resync")
                group.create_task(run_workers("autoregister", self.queue, self.reconcile))
        finally:
            self.queue.shut_down()


def _path(name: str = "") -> str:
    return resource_path(GROUP, "v1", "apiservices", name=name)
