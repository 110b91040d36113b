"""The ``rbac/bootstrap-roles`` post-start hook: the bootstrap policy reconciled into
storage, as upstream's ``reconciliation`` does for roles and bindings whose
``rbac.authorization.kubernetes.io/autoupdate`` annotation is not ``"false"``:

- a missing ClusterRole or ClusterRoleBinding is created;
- an existing role gets the missing labels, annotations and rules (nothing is taken
  away) and, for an aggregated role, the missing aggregation selectors (its rules are
  the aggregation controller's business);
- an existing binding gets the missing subjects (a binding whose roleRef differs is
  left alone and logged: upstream recreates it, which needs a delete we do not risk).

Written through the loopback client (``proxy.loopback``), so the objects are validated,
admitted, audited as ``system:apiserver`` and carry managedFields, as upstream's.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from proxy.authorization.rbac.policy_rule import RBAC_GROUP
from proxy.loopback.client import LoopbackClient, resource_path

__all__ = [
    "AUTOUPDATE",
    "RBACPolicy",
    "reconcile_binding",
    "reconcile_bootstrap_policy",
    "reconcile_role",
]

log = logging.getLogger("watchcache.authorization")

JSON = dict[str, Any]
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


def _reconciler(plural: str, wanted: JSON) -> Callable[[JSON], JSON | None]:
    """The change ``wanted`` asks of the stored ``current`` (None: none, or not ours)."""
    merge = reconcile_role if plural == "clusterroles" else reconcile_binding

    def reconcile(current: JSON) -> JSON | None:
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        if annotations.get(AUTOUPDATE) == "false":
            return None
        if plural == "clusterrolebindings" and current.get("roleRef") != wanted.get("roleRef"):
            name = wanted["metadata"]["name"]
            log.warning("clusterrolebinding %s refers to another role; left as it is", name)
            return None
        merged = merge(current, wanted)
        return None if merged == current else merged

    return reconcile


async def reconcile_bootstrap_policy(client: LoopbackClient, policy: RBACPolicy) -> None:
    """Every ClusterRole of ``policy``, then every ClusterRoleBinding, created or
    reconciled through the API (``LoopbackClient.ensure``); an error ends the pass (the
    post-start hook's supervisor runs it again)."""
    for plural, objects in (
        ("clusterroles", policy.cluster_roles),
        ("clusterrolebindings", policy.cluster_role_bindings),
    ):
        collection = resource_path(RBAC_GROUP, "v1", plural)
        for wanted in objects:
            await client.ensure(collection, copy.deepcopy(wanted), _reconciler(plural, wanted))
