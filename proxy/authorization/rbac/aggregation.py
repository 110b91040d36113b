"""The ClusterRole aggregation controller (upstream's
``clusterroleaggregation`` controller): a ClusterRole with an ``aggregationRule`` gets,
as its ``rules``, the rules of every other ClusterRole whose labels match one of its
selectors — roles in name order, each rule once, in order of first appearance — and
is rewritten whenever that differs from what is stored.

Every ClusterRole change the informer sees enqueues every aggregated ClusterRole (as
upstream's ``enqueueAll``: any role may now match a selector), so adding a labelled
role, relabelling or deleting one updates admin/edit/view within one watch event's
delay; the work queue coalesces a burst of changes into one reconcile per aggregated
role. It writes through the loopback client (as ``system:apiserver``; a Conflict is
read again and retried); other failures are retried with the queue's per-item backoff.
"""

from __future__ import annotations

import logging
from typing import Any

from proxy.authorization.rbac.informer import RBACInformer
from proxy.authorization.rbac.label_selector import selector_matches
from proxy.authorization.rbac.policy_rule import RBAC_GROUP
from proxy.informer import WorkQueue, run_workers
from proxy.loopback.client import LoopbackClient, resource_path

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
        self.queue: WorkQueue[str] = WorkQueue("clusterrole-aggregation")
        self.client: LoopbackClient | None = None
        informer.on_change(self._changed)

    def _changed(self, plural: str) -> None:
        if plural != "clusterroles":
            return
        for name, role in self.informer.cluster_roles.items():
            if role.aggregation_selectors is not None:
                self.queue.add(name)

    async def _sync(self, name: str, rules: list[dict[str, Any]]) -> None:
        def with_rules(obj: dict[str, Any]) -> dict[str, Any] | None:
            if obj.get("rules") == rules:
                return None
            obj["rules"] = rules
            return obj

        assert self.client is not None, "run() sets the client"
        await self.client.update(resource_path(RBAC_GROUP, "v1", "clusterroles", name=name),
                                 with_rules)  # fmt: skip

    async def reconcile(self, name: str) -> None:
        """Write the rules ``name`` should have, if they differ from its stored ones."""
        rules = aggregated_rules(self.informer, name)
        if rules is None:
            return
        current = self.informer.cluster_roles[name].obj.get("rules") or []
        if current != rules:
            await self._sync(name, rules)

    async def run(self, client: LoopbackClient) -> None:
        """Run until cancelled (the queue is shut down then); ``client`` writes."""
        self.client = client
        await self.informer.synced.wait()
        self._changed("clusterroles")
        try:
            await run_workers("clusterrole-aggregation", self.queue, self.reconcile)
        finally:
            self.queue.shut_down()
