"""The RBAC objects in memory, as the authorizer reads them: the four RBAC resources'
shared informers (``proxy.informer``), with each role's rules and each binding parsed
once, when its event arrives.

The informers' handlers keep the parsed maps: on every add, update or delete
(tombstones of a relist included) they bump ``generation``, change the one entry, then
call the listeners registered with ``on_change`` with the resource's plural (the
aggregation controller enqueues on ``clusterroles``). Handlers run synchronously on the
event loop, so readers (the authorizer, on the event loop too) see a consistent object
per key. ``synced`` is set once all four informers have synced (``run``); until then
the authorizer sees what has been delivered so far, and kube-apiserver's readiness
waits for it (the ``rbac/bootstrap-roles`` post-start hook).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from proxy.authorization.rbac.policy_rule import Binding, PolicyRule, parse_binding, parse_rules
from proxy.informer import (
    DeletedFinalStateUnknown,
    EventHandlers,
    SharedIndexInformer,
    SharedInformerFactory,
    wait_for_cache_sync,
)

__all__ = ["RBAC_RESOURCES", "ClusterRole", "RBACInformer"]

log = logging.getLogger("watchcache.authorization")

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_RESOURCES = ("roles", "rolebindings", "clusterroles", "clusterrolebindings")

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
    """Implements ``RBACState`` over the four RBAC resources' shared informers."""

    def __init__(self, informers: SharedInformerFactory) -> None:
        self.roles: dict[Key, ClusterRole] = {}
        self.cluster_roles: dict[str, ClusterRole] = {}
        self.bindings: dict[str, dict[str, Binding]] = {}  # namespace -> name -> binding
        self.cluster_bindings: dict[str, Binding] = {}
        self.synced = asyncio.Event()
        self._listeners: list[Callable[[str], None]] = []
        # bumped before every change is visible: RBACAuthorizer's decision cache is
        # valid for one generation (rbac.decision_cache)
        self.generation = 0
        self.informers: dict[str, SharedIndexInformer] = {}
        for plural in RBAC_RESOURCES:
            informer = informers.informer_for(RBAC_GROUP, plural)
            informer.add_event_handler(self._handlers(plural))
            self.informers[plural] = informer

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

    # maintenance: the informers' handlers
    def _handlers(self, plural: str) -> EventHandlers:
        def added(obj: dict[str, Any]) -> None:
            self._apply(plural, "ADDED", obj)
            self._notify(plural)

        def deleted(obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
            last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            self._apply(plural, "DELETED", last)
            self._notify(plural)

        return EventHandlers(on_add=added, on_update=lambda old, new: added(new), on_delete=deleted)

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

    def _notify(self, plural: str) -> None:
        for listener in self._listeners:
            try:
                listener(plural)
            except Exception:  # a listener's bug must not stop the informer
                log.exception("RBAC informer listener failed")

    async def run(self) -> None:
        """Set ``synced`` once the four informers have synced (the factory runs them)."""
        await wait_for_cache_sync(*self.informers.values())
        self.synced.set()
