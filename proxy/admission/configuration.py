"""The admission configuration objects kept in memory by watching them (kube's
``configuration`` package and its informers): MutatingWebhookConfigurations,
ValidatingWebhookConfigurations, Validating- and MutatingAdmissionPolicies and their bindings.

``ConfigurationSource`` lists each resource from the watch cache, then follows its
watch; on an error or a closed watch it lists again. Readers take ``items(plural)``,
a snapshot sorted by name (upstream sorts configurations by name), which changes only
on the event loop. Until the first list, ``synced`` is unset and the webhook plugins
answer as kube does before its informers sync (they wait for it, bounded).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from storage.interfaces import ListOptions

if TYPE_CHECKING:
    from proxy.registry.storage_factory import ResourceStorage

__all__ = ["ADMISSION_GROUP", "CONFIGURATION_RESOURCES", "ConfigurationSource"]

log = logging.getLogger("watchcache.admission")

JSON = dict[str, Any]

ADMISSION_GROUP = "admissionregistration.k8s.io"
CONFIGURATION_RESOURCES = (
    "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
)
RETRY_SECONDS = 1.0


class ConfigurationSource:
    """The configurations, by plural then name. ``version`` grows on every change (the
    policy plugin recompiles when it moved)."""

    def __init__(self, storage_for: Callable[[str], ResourceStorage | None]) -> None:
        self.storage_for = storage_for
        self._objects: dict[str, dict[str, JSON]] = {p: {} for p in CONFIGURATION_RESOURCES}
        self._sorted: dict[str, list[JSON]] = {p: [] for p in CONFIGURATION_RESOURCES}
        self.version = 0
        self.synced = asyncio.Event()
        self._listed: set[str] = set()

    def items(self, plural: str) -> list[JSON]:
        """The current objects of ``plural``, sorted by name (read-only)."""
        return self._sorted.get(plural, [])

    def get(self, plural: str, name: str) -> JSON | None:
        return self._objects.get(plural, {}).get(name)

    def _changed(self, plural: str) -> None:
        objects = self._objects[plural]
        self._sorted[plural] = [objects[n] for n in sorted(objects)]
        self.version += 1

    async def _list_and_watch(self, plural: str, rs: ResourceStorage) -> None:
        key = rs.list_key("")
        listed = await rs.store.get_list(key, ListOptions(resource_version="0"))
        self._objects[plural] = {
            str(item.obj["metadata"]["name"]): item.obj for item in listed.items
        }
        self._changed(plural)
        self._listed.add(plural)
        if self._listed.issuperset(CONFIGURATION_RESOURCES):
            self.synced.set()
        since = ListOptions(resource_version=str(listed.resource_version))
        watcher = await rs.store.watch(key, since)
        try:
            async for event in watcher:
                if event.type == "BOOKMARK":
                    continue
                if event.type == "ERROR":
                    return
                obj = orjson.loads(event.data)
                name = str(obj["metadata"]["name"])
                if event.type == "DELETED":
                    self._objects[plural].pop(name, None)
                else:
                    self._objects[plural][name] = obj
                self._changed(plural)
        finally:
            await watcher.stop()

    async def _run_one(self, plural: str) -> None:
        rs = self.storage_for(plural)
        if rs is None:  # not served: nothing to configure
            self._listed.add(plural)
            if self._listed.issuperset(CONFIGURATION_RESOURCES):
                self.synced.set()
            return
        while True:
            try:
                await self._list_and_watch(plural, rs)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # etcd down, compaction: list again shortly
                log.info("admission configuration %s: %s (relisting)", plural, e)
            await asyncio.sleep(RETRY_SECONDS)

    async def run(self) -> None:
        """Keep the configurations current until cancelled (a post-start hook)."""
        async with asyncio.TaskGroup() as group:  # cancelling this cancels each watch
            for plural in CONFIGURATION_RESOURCES:
                group.create_task(self._run_one(plural), name=f"admission-config-{plural}")
