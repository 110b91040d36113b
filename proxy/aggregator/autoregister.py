"""kube-apiserver's ``autoregister`` controller, for the built-in group-versions: at
start, every group-version this server serves itself gets its local APIService
(``v1.``, ``v1.apps``, ... labelled ``kube-aggregator.kubernetes.io/automanaged:
onstart``, with upstream's priorities), created when missing and its spec put back when
someone changed it. Nothing is deleted (upstream deletes only ``automanaged: true``
APIServices whose group went away, i.e. CRD groups).

``run`` retries until every one is in place (etcd may be down at start), then sets
``ready`` (the ``/readyz`` check ``poststarthook/apiservice-registration-controller``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from proxy.aggregator.apiservice import AUTOMANAGED_LABEL, local_apiservice
from proxy.registry import object_meta
from proxy.registry.storage_factory import ResourceStorage
from storage import errors as serr
from storage.interfaces import GetOptions

__all__ = ["AutoRegister", "local_apiservices"]

log = logging.getLogger("watchcache.aggregator")

JSON = dict[str, Any]
RETRY_SECONDS = 1.0


def local_apiservices(group_versions: Iterable[tuple[str, str]]) -> list[JSON]:
    """The local APIServices of ``group_versions`` (those upstream has a priority for)."""
    out: list[JSON] = []
    for group, version in group_versions:
        obj = local_apiservice(group, version)
        if obj is not None:
            out.append(obj)
    return out


class AutoRegister:
    """Creates and keeps the local APIServices of the served group-versions."""

    def __init__(self, storage: ResourceStorage, wanted: list[JSON]) -> None:
        self.storage = storage
        self.wanted = wanted
        self.ready = asyncio.Event()
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def _ensure(self, wanted: JSON) -> None:
        rs = self.storage
        key = rs.object_key("", wanted["metadata"]["name"])
        try:
            stored = await rs.store.get(key, GetOptions())
        except serr.NotFound:
            obj = object_meta.prepare_for_create(copy.deepcopy(wanted), rs.resource, "")
            with contextlib.suppress(serr.AlreadyExists):  # another replica was faster
                await rs.store.create(key, obj)
            return
        current = stored.obj
        labels = (current.get("metadata") or {}).get("labels") or {}
        if current.get("spec") == wanted["spec"] and labels.get(AUTOMANAGED_LABEL):
            return

        async def put_back(obj: JSON) -> JSON:
            out = copy.deepcopy(obj)
            out["spec"] = copy.deepcopy(wanted["spec"])
            meta = out.setdefault("metadata", {})
            meta["labels"] = {**(meta.get("labels") or {}), AUTOMANAGED_LABEL: "onstart"}
            return out

        await rs.store.guaranteed_update(key, None, put_back)

    async def run(self) -> None:
        """Until every local APIService is in place (retried while etcd is down)."""
        while True:
            try:
                for wanted in self.wanted:
                    await self._ensure(wanted)
            except serr.StorageError as e:
                log.info("registering the local APIServices: %s (will retry)", e)
                await self.sleep(RETRY_SECONDS)
                continue
            self.ready.set()
            return
