"""Escalation prevention (upstream's ``pkg/registry/rbac/*/policybased``): nobody
grants, through a Role, ClusterRole or a binding, permissions they do not hold.

- A (Cluster)Role write is allowed to ``system:masters``, to whoever may ``escalate``
  the role, or when every rule it contains is covered by the writer's own rules in
  the role's namespace (cluster-wide for a ClusterRole).
- A (Cluster)RoleBinding write is allowed to ``system:masters``, to whoever may
  ``bind`` the referenced role, or when the referenced role's rules are all covered.

Otherwise 403, with upstream's message::

    roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["devs"])
    is attempting to grant RBAC permissions not currently held:
    {APIGroups:[""], Resources:["secrets"], Verbs:["get"]}

(one missing rule per line, verbs of the same resource merged, lines sorted).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from proxy import apierrors
from proxy.apierrors import go_quote
from proxy.authorization.authorizer import Attributes, Decision
from proxy.authorization.modes import Union
from proxy.authorization.rbac.policy_rule import (
    RBAC_GROUP,
    PolicyRule,
    RoleRef,
    compact_string,
    parse_binding,
    parse_rules,
)
from proxy.authorization.rbac.rule_resolver import RuleResolver
from proxy.request.user import SYSTEM_PRIVILEGED_GROUP, UserInfo

__all__ = ["check_escalation", "covers", "missing_rules"]

ROLE_RESOURCES = frozenset({"roles", "clusterroles"})
BINDING_RESOURCES = frozenset({"rolebindings", "clusterrolebindings"})


def _breakdown(rule: PolicyRule) -> list[PolicyRule]:
    """One rule per (group, resource, verb[, name]) and per (url, verb)."""
    out: list[PolicyRule] = []
    for group in rule.api_groups:
        for resource in rule.resources:
            for verb in rule.verbs:
                names = rule.resource_names or ("",)
                out += [
                    PolicyRule((verb,), (group,), (resource,), (name,) if name else ())
                    for name in names
                ]
    for url in rule.non_resource_urls:
        out += [PolicyRule((verb,), non_resource_urls=(url,)) for verb in rule.verbs]
    return out


def _has(values: tuple[str, ...], value: str) -> bool:
    return "*" in values or value in values


def _resource_covered(owner: tuple[str, ...], requested: str) -> bool:
    if "*" in owner or requested in owner:
        return True
    _, _, sub = requested.partition("/")
    return bool(sub) and f"*/{sub}" in owner


def _url_covered(owner: tuple[str, ...], url: str) -> bool:
    return any(o == "*" or o == url or (o.endswith("*") and url.startswith(o[:-1])) for o in owner)


def _covers_atom(owner: PolicyRule, atom: PolicyRule) -> bool:
    if not _has(owner.verbs, atom.verbs[0]):
        return False
    if atom.non_resource_urls:
        return _url_covered(owner.non_resource_urls, atom.non_resource_urls[0])
    if not owner.resources or not _has(owner.api_groups, atom.api_groups[0]):
        return False
    if not _resource_covered(owner.resources, atom.resources[0]):
        return False
    if not owner.resource_names:
        return True
    return bool(atom.resource_names) and atom.resource_names[0] in owner.resource_names


def missing_rules(owner: Iterable[PolicyRule], requested: Iterable[PolicyRule]) -> list[PolicyRule]:
    owned = list(owner)
    return [
        atom
        for rule in requested
        for atom in _breakdown(rule)
        if not any(_covers_atom(o, atom) for o in owned)
    ]


def covers(owner: Iterable[PolicyRule], requested: Iterable[PolicyRule]) -> bool:
    return not missing_rules(owner, requested)


def _compact(rules: list[PolicyRule]) -> list[PolicyRule]:
    """Merge the verbs of atoms that differ only in their verb (upstream's CompactRules)."""
    merged: dict[tuple[Any, ...], list[str]] = {}
    for r in rules:
        key = (r.api_groups, r.resources, r.resource_names, r.non_resource_urls)
        verbs = merged.setdefault(key, [])
        if r.verbs[0] not in verbs:
            verbs.append(r.verbs[0])
    return [
        PolicyRule(tuple(v), g, res, names, urls) for (g, res, names, urls), v in merged.items()
    ]


def _not_held(user: UserInfo, missing: list[PolicyRule], errors: list[str]) -> str:
    lines = sorted(compact_string(r) for r in _compact(missing))
    groups = "[" + " ".join(go_quote(g) for g in user.groups) + "]"
    msg = (
        f"user {go_quote(user.name)} (groups={groups}) is attempting to grant RBAC "
        f"permissions not currently held:\n" + "\n".join(lines)
    )
    if errors:
        msg += f"; resolution errors: [{', '.join(errors)}]"
    return msg


def _allowed(
    authorizer: Union, user: UserInfo, verb: str, resource: str, ns: str, name: str
) -> bool:
    attrs = Attributes(user, verb, namespace=ns, api_group=RBAC_GROUP, api_version="v1",
                       resource=resource, name=name)  # fmt: skip
    return authorizer.authorize(attrs)[0] is Decision.ALLOW


def check_escalation(
    authorizer: Union,
    resolver: RuleResolver,
    user: UserInfo,
    plural: str,
    namespace: str,
    name: str,
    obj: dict[str, Any],
) -> None:
    """Raise 403 when writing ``obj`` (a role or binding) would escalate ``user``."""
    if plural not in ROLE_RESOURCES | BINDING_RESOURCES or SYSTEM_PRIVILEGED_GROUP in user.groups:
        return
    qualified = f"{plural}.{RBAC_GROUP}"
    if plural in ROLE_RESOURCES:
        if _allowed(authorizer, user, "escalate", plural, namespace, name):
            return
        requested = parse_rules(obj.get("rules"))
    else:
        ref: RoleRef = parse_binding(obj).role_ref
        role_plural = "clusterroles" if ref.kind == "ClusterRole" else "roles"
        if _allowed(authorizer, user, "bind", role_plural, namespace, ref.name):
            return
        found = (
            resolver.state.cluster_role_rules(ref.name)
            if ref.kind == "ClusterRole"
            else resolver.state.role_rules(namespace, ref.name)
        )
        if found is None:
            singular = "clusterrole" if ref.kind == "ClusterRole" else "role"
            raise apierrors.forbidden(
                qualified, name, f"{singular}.{RBAC_GROUP} {go_quote(ref.name)} not found"
            )
        requested = found
    owner, errors = resolver.rules_for_user(user, namespace)
    missing = missing_rules(owner, requested)
    if missing:
        raise apierrors.forbidden(qualified, name, _not_held(user, missing, errors))
