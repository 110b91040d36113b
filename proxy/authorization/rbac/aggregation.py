"""The ClusterRole aggregation controller (upstream's
``clusterroleaggregation`` controller): a ClusterRole with an ``aggregationRule`` gets,
as its ``rules``, the rules of every other ClusterRole whose labels match one of its
selectors — roles in name order, each rule once, in order of first appearance — and
is rewritten whenever that differs from what is stored.

It wakes on every ClusterRole change the informer sees (coalesced: one pass per wake),
so adding a labelled role, relabelling or deleting one updates admin/edit/view within
one watch event's delay. It writes through the loopback client (as ``system:apiserver``,
a Conflict read again and retried); a failed write is retried a second later.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from proxy.authorization.rbac.informer import RBACInformer
from proxy.authorization.rbac.label_selector import selector_matches
from proxy.authorization.rbac.policy_rule import RBAC_GROUP
from proxy.loopback.client import APIError, LoopbackClient, resource_path

__all__ = ["AggregationController", "aggregated_rules"]

log = logging.getLogger("watchcache.authorization")


def aggregated_rules(informer: RBACInformer, name: str) -> list[dict[str, Any]] | None:
    """The rules ``name`` should have, or None when it is not an aggregated role."""
    role = informer.cluster_roles.get(name)
    if role is None or role.aggregation_selectors is None:
        return None
    rules: list[dict[str, Any]] = []
    for other_name in sorted(informer.cluster_roles):
        if other_name == name:
            continue
        other = informer.cluster_roles[other_name]
        if not any(selector_matches(s, other.labels) for s in role.aggregation_selectors):
            continue
        for rule in other.obj.get("rules") or ():
            if rule not in rules:
                rules.append(rule)
    return rules


class AggregationController:
    def __init__(self, informer: RBACInformer) -> None:
        self.informer = informer
        self._wake = asyncio.Event()
        informer.on_change(self._changed)

    def _changed(self, plural: str) -> None:
        if plural == "clusterroles":
            self._wake.set()

    async def _sync(self, client: LoopbackClient, name: str, rules: list[dict[str, Any]]) -> None:
        def with_rules(obj: dict[str, Any]) -> dict[str, Any] | None:
            if obj.get("rules") == rules:
                return None
            obj["rules"] = rules
            return obj

        await client.update(resource_path(RBAC_GROUP, "v1", "clusterroles", name=name), with_rules)

    async def sync_once(self, client: LoopbackClient) -> None:
        for name in sorted(self.informer.cluster_roles):
            rules = aggregated_rules(self.informer, name)
            if rules is None:
                continue
            current = self.informer.cluster_roles[name].obj.get("rules") or []
            if current != rules:
                await self._sync(client, name, rules)

    async def run(self, client: LoopbackClient) -> None:
        """Run until cancelled; failed writes are logged and retried on the next wake
        (or after a second)."""
        await self.informer.synced.wait()
        while True:
            self._wake.clear()
            try:
                await self.sync_once(client)
            except APIError as e:
                log.info("clusterrole aggregation: %s (retrying)", e)
                await asyncio.sleep(1.0)
                self._wake.set()
            await self._wake.wait()
