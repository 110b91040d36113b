"""The ``rbac/bootstrap-roles`` post-start hook: the bootstrap policy reconciled into
storage, as upstream's ``reconciliation`` does for roles and bindings whose
``rbac.authorization.kubernetes.io/autoupdate`` annotation is not ``"false"``:

- a missing ClusterRole or ClusterRoleBinding is created;
- an existing role gets the missing labels, annotations and rules (nothing is taken
  away) and, for an aggregated role, the missing aggregation selectors (its rules are
  the aggregation controller's business);
- an existing binding gets the missing subjects (a binding whose roleRef differs is
  left alone and logged: upstream recreates it, which needs a delete we do not risk).

``run`` retries until everything is in place (etcd may be down at start-up) and then
sets ``ready`` (the ``/readyz`` check ``poststarthook/rbac/bootstrap-roles``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from proxy.registry import object_meta
from proxy.registry.storage_factory import ResourceStorage
from storage import errors as serr
from storage.interfaces import GetOptions

__all__ = ["AUTOUPDATE", "BootstrapPolicy", "RBACPolicy", "reconcile_binding", "reconcile_role"]

log = logging.getLogger("watchcache.authorization")

JSON = dict[str, Any]
RETRY_SECONDS = 1.0
# an object annotated "false" is left as its owner changed it
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"


@dataclass(frozen=True)
class RBACPolicy:
    """The ClusterRoles and ClusterRoleBindings to reconcile (kube's bootstrap policy,
    ``proxy.kube.bootstrap.rbac_policy``, passed in by the composition root)."""

    cluster_roles: Sequence[JSON]
    cluster_role_bindings: Sequence[JSON]


def _merge_meta(existing: JSON, wanted: JSON) -> None:
    meta = existing.setdefault("metadata", {})
    for field in ("labels", "annotations"):
        merged = dict(meta.get(field) or {})
        for k, v in (wanted["metadata"].get(field) or {}).items():
            merged.setdefault(k, v)
        meta[field] = merged


def reconcile_role(existing: JSON, wanted: JSON) -> JSON:
    """``existing`` with what ``wanted`` adds (see the module docstring)."""
    out = copy.deepcopy(existing)
    _merge_meta(out, wanted)
    if "aggregationRule" in wanted:
        selectors = list((out.get("aggregationRule") or {}).get("clusterRoleSelectors") or [])
        for s in wanted["aggregationRule"]["clusterRoleSelectors"]:
            if s not in selectors:
                selectors.append(s)
        out["aggregationRule"] = {"clusterRoleSelectors": selectors}
        return out
    rules = list(out.get("rules") or [])
    for rule in wanted.get("rules") or []:
        if rule not in rules:
            rules.append(rule)
    out["rules"] = rules
    return out


def reconcile_binding(existing: JSON, wanted: JSON) -> JSON:
    out = copy.deepcopy(existing)
    _merge_meta(out, wanted)
    subjects = list(out.get("subjects") or [])
    for s in wanted.get("subjects") or []:
        if s not in subjects:
            subjects.append(s)
    out["subjects"] = subjects
    return out


class BootstrapPolicy:
    def __init__(
        self, roles: ResourceStorage, bindings: ResourceStorage, policy: RBACPolicy
    ) -> None:
        self.roles = roles
        self.bindings = bindings
        self.policy = policy
        self.ready = asyncio.Event()
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def _ensure(self, rs: ResourceStorage, wanted: JSON) -> None:
        name = wanted["metadata"]["name"]
        key = rs.object_key("", name)
        merge = reconcile_role if rs.resource.plural == "clusterroles" else reconcile_binding
        try:
            stored = await rs.store.get(key, GetOptions())
        except serr.NotFound:
            obj = object_meta.prepare_for_create(copy.deepcopy(wanted), rs.resource, "")
            # AlreadyExists: another replica was faster; the next start reconciles it
            with contextlib.suppress(serr.AlreadyExists):
                await rs.store.create(key, obj)
            return
        current = stored.obj
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        if annotations.get(AUTOUPDATE) == "false":
            return
        if rs.resource.plural == "clusterrolebindings" and current.get("roleRef") != wanted.get(
            "roleRef"
        ):
            log.warning("clusterrolebinding %s refers to another role; left as it is", name)
            return
        if merge(current, wanted) == current:
            return

        async def try_update(obj: JSON) -> JSON:
            return merge(obj, wanted)

        await rs.store.guaranteed_update(key, None, try_update)

    async def ensure_once(self) -> bool:
        try:
            for role in self.policy.cluster_roles:
                await self._ensure(self.roles, role)
            for binding in self.policy.cluster_role_bindings:
                await self._ensure(self.bindings, binding)
        except serr.StorageError as e:
            log.info("reconciling the bootstrap RBAC policy: %s (will retry)", e)
            return False
        return True

    async def run(self) -> None:
        while not await self.ensure_once():
            await self.sleep(RETRY_SECONDS)  # etcd is down: nothing to wait on
        self.ready.set()
