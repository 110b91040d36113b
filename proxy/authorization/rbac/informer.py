"""The RBAC objects in memory, kept current from storage (upstream's shared informers
over the four RBAC resources).

One task per resource: LIST at ``resourceVersion=0`` (served by the watch cache when it
is on), then WATCH from the list's revision; an ERROR event (410 Gone) or a closed
stream relists, a storage error retries after ``RETRY_SECONDS``. ``synced`` is set once
every resource has been listed once; until then the authorizer sees an empty policy
(requests are denied, as kube-apiserver denies before its informers sync).

The maps are replaced or changed only by these tasks, on the event loop; readers
(the authorizer, on the event loop too) see a consistent object per key. Listeners
registered with ``on_change`` are called synchronously after each change with the
resource's plural (the aggregation controller wakes on ``clusterroles``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from proxy.authorization.rbac.policy_rule import Binding, PolicyRule, parse_binding, parse_rules
from proxy.registry.storage_factory import ResourceStorage
from storage.interfaces import ListOptions

__all__ = ["RBAC_RESOURCES", "ClusterRole", "RBACInformer"]

log = logging.getLogger("watchcache.authorization")

RBAC_RESOURCES = ("roles", "rolebindings", "clusterroles", "clusterrolebindings")
RETRY_SECONDS = 1.0

Key = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class ClusterRole:
    """A (Cluster)Role as held here: its rules, labels and aggregation selectors."""

    name: str
    rules: tuple[PolicyRule, ...]
    labels: dict[str, str]
    aggregation_selectors: tuple[dict[str, Any], ...] | None
    obj: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def _role(obj: dict[str, Any]) -> ClusterRole:
    meta = obj.get("metadata") or {}
    rule = obj.get("aggregationRule")
    selectors = None
    if isinstance(rule, dict):
        selectors = tuple(s for s in rule.get("clusterRoleSelectors") or () if isinstance(s, dict))
    return ClusterRole(
        name=str(meta.get("name", "")),
        rules=parse_rules(obj.get("rules")),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        aggregation_selectors=selectors,
        obj=obj,
    )


class RBACInformer:
    """Implements ``RBACState`` over the four RBAC storages."""

    def __init__(self, storage_for: Callable[[str], ResourceStorage]) -> None:
        # plural -> its storage; called when the informer starts (storages are built then)
        self.storage_for = storage_for
        self.roles: dict[Key, ClusterRole] = {}
        self.cluster_roles: dict[str, ClusterRole] = {}
        self.bindings: dict[str, dict[str, Binding]] = {}  # namespace -> name -> binding
        self.cluster_bindings: dict[str, Binding] = {}
        self.synced = asyncio.Event()
        self._listed: set[str] = set()
        self._listeners: list[Callable[[str], None]] = []
        # bumped before every change is visible: RBACAuthorizer's decision cache is
        # valid for one generation (rbac.decision_cache)
        self.generation = 0

    # RBACState
    def cluster_role_rules(self, name: str) -> tuple[PolicyRule, ...] | None:
        role = self.cluster_roles.get(name)
        return role.rules if role is not None else None

    def role_rules(self, namespace: str, name: str) -> tuple[PolicyRule, ...] | None:
        role = self.roles.get((namespace, name))
        return role.rules if role is not None else None

    def cluster_role_bindings(self) -> Iterable[Binding]:
        return self.cluster_bindings.values()

    def role_bindings(self, namespace: str) -> Iterable[Binding]:
        return self.bindings.get(namespace, {}).values()

    def on_change(self, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)

    # maintenance
    def _apply(self, plural: str, kind: str, obj: dict[str, Any]) -> None:
        self.generation += 1
        namespace, name = _key(obj)
        deleted = kind == "DELETED"
        if plural == "clusterroles":
            if deleted:
                self.cluster_roles.pop(name, None)
            else:
                self.cluster_roles[name] = _role(obj)
        elif plural == "roles":
            if deleted:
                self.roles.pop((namespace, name), None)
            else:
                self.roles[(namespace, name)] = _role(obj)
        elif plural == "clusterrolebindings":
            if deleted:
                self.cluster_bindings.pop(name, None)
            else:
                self.cluster_bindings[name] = parse_binding(obj)
        elif deleted:
            self.bindings.get(namespace, {}).pop(name, None)
        else:
            self.bindings.setdefault(namespace, {})[name] = parse_binding(obj)

    def _replace(self, plural: str, items: list[dict[str, Any]]) -> None:
        self.generation += 1
        if plural == "clusterroles":
            self.cluster_roles = {}
        elif plural == "roles":
            self.roles = {}
        elif plural == "clusterrolebindings":
            self.cluster_bindings = {}
        else:
            self.bindings = {}
        for obj in items:
            self._apply(plural, "ADDED", obj)

    def _notify(self, plural: str) -> None:
        for listener in self._listeners:
            try:
                listener(plural)
            except Exception:  # a listener's bug must not stop the informer
                log.exception("RBAC informer listener failed")

    async def _list_and_watch(self, plural: str) -> None:
        rs = self.storage_for(plural)
        key = rs.list_key("")
        listed = await rs.store.get_list(key, ListOptions(resource_version="0"))
        self._replace(plural, [item.obj for item in listed.items])
        self._listed.add(plural)
        if self._listed.issuperset(RBAC_RESOURCES):
            self.synced.set()
        self._notify(plural)
        rv = listed.resource_version
        watcher = await rs.store.watch(key, ListOptions(resource_version=str(rv)))
        try:
            async for event in watcher:
                if event.type == "BOOKMARK":
                    continue
                if event.type == "ERROR":
                    return  # relist
                self._apply(plural, event.type, orjson.loads(event.data))
                self._notify(plural)
        finally:
            await watcher.stop()

    async def _run_one(self, plural: str) -> None:
        while True:
            try:
                await self._list_and_watch(plural)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # etcd down, compaction: list again shortly
                log.info("RBAC informer for %s: %s (relisting)", plural, e)
                await asyncio.sleep(RETRY_SECONDS)

    async def run(self) -> None:
        """Run until cancelled."""
        tasks = [
            asyncio.create_task(self._run_one(p), name=f"rbac-informer-{p}") for p in RBAC_RESOURCES
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
