"""``--authorization-mode``: AlwaysAllow, AlwaysDeny, RBAC, and the union that chains
them, preceded (always, as kube-apiserver does) by the ``system:masters`` shortcut.

The union asks each authorizer in order: the first Allow or Deny decides; NoOpinion
moves on, and the reasons of those that gave one are joined with newlines (upstream's
``union``). Rules for SelfSubjectRulesReview are the concatenation of every
authorizer's rules.
"""

from __future__ import annotations

from collections.abc import Sequence

from proxy.authorization.authorizer import (
    Attributes,
    Authorizer,
    Decision,
    NonResourceRule,
    ResourceRule,
    RuleResolver,
    RulesResult,
)
from proxy.request.user import SYSTEM_PRIVILEGED_GROUP, UserInfo

__all__ = [
    "MODES",
    "AlwaysAllow",
    "AlwaysDeny",
    "NamedAuthorizer",
    "PrivilegedGroups",
    "Union",
]

MODES = ("AlwaysAllow", "AlwaysDeny", "RBAC")


class AlwaysAllow:
    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        return Decision.ALLOW, ""

    def rules_for(self, user: UserInfo, namespace: str) -> RulesResult:
        return RulesResult(
            resource_rules=(ResourceRule(("*",), ("*",), ("*",)),),
            non_resource_rules=(NonResourceRule(("*",), ("*",)),),
        )


class AlwaysDeny:
    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        return Decision.NO_OPINION, "Everything is forbidden."

    def rules_for(self, user: UserInfo, namespace: str) -> RulesResult:
        return RulesResult()


class PrivilegedGroups:
    """Members of ``system:masters`` may do anything, whatever the other modes say."""

    def __init__(self, groups: Sequence[str] = (SYSTEM_PRIVILEGED_GROUP,)) -> None:
        self.groups = frozenset(groups)

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        if self.groups.intersection(attrs.user.groups):
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""

    def rules_for(self, user: UserInfo, namespace: str) -> RulesResult:
        return RulesResult()


class NamedAuthorizer:
    """An authorizer with its type and name, for ``apiserver_authorization_decisions_total``."""

    def __init__(self, type_: str, name: str, authorizer: Authorizer) -> None:
        self.type = type_
        self.name = name
        self.authorizer = authorizer


class Union:
    def __init__(self, authorizers: Sequence[NamedAuthorizer]) -> None:
        self.authorizers = tuple(authorizers)

    def decide(self, attrs: Attributes) -> tuple[Decision, str, NamedAuthorizer | None]:
        """The decision, its reason, and the authorizer that decided (None: nobody)."""
        reasons: list[str] = []
        for named in self.authorizers:
            decision, reason = named.authorizer.authorize(attrs)
            if decision is not Decision.NO_OPINION:
                return decision, reason, named
            if reason:
                reasons.append(reason)
        return Decision.NO_OPINION, "\n".join(reasons), None

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        decision, reason, _ = self.decide(attrs)
        return decision, reason

    def rules_for(self, user: UserInfo, namespace: str) -> RulesResult:
        resource: list[ResourceRule] = []
        non_resource: list[NonResourceRule] = []
        errors: list[str] = []
        incomplete = False
        for named in self.authorizers:
            resolver = named.authorizer
            if not isinstance(resolver, RuleResolver):
                continue
            result = resolver.rules_for(user, namespace)
            resource.extend(result.resource_rules)
            non_resource.extend(result.non_resource_rules)
            errors.extend(result.errors)
            incomplete = incomplete or result.incomplete
        return RulesResult(tuple(resource), tuple(non_resource), incomplete, tuple(errors))
