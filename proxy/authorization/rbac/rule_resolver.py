"""Which rules apply to a user, and the RBAC authorizer (upstream's
``DefaultRuleResolver`` and ``RBACAuthorizer``).

Rules are visited in upstream's order: every ClusterRoleBinding whose subjects include
the user, then (for a namespaced request) every RoleBinding of that namespace that
does. A subject applies when it is the user by name, one of the user's groups, or the
service account whose username the user has (a RoleBinding's ServiceAccount subject
without a namespace means the binding's). A binding to a missing role is an error that
is collected, not fatal: the other bindings still count, and the errors become the
denial's reason (``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found``).

The state comes from an ``RBACState`` (the informer over the watch cache); decisions
never await.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from proxy.apierrors import go_quote
from proxy.authorization.authorizer import (
    Attributes,
    Decision,
    NonResourceRule,
    ResourceRule,
    RulesResult,
)
from proxy.authorization.rbac.decision_cache import DecisionCache, decision_key
from proxy.authorization.rbac.policy_rule import (
    RBAC_GROUP,
    Binding,
    PolicyRule,
    Subject,
    rule_allows,
)
from proxy.request.user import UserInfo, service_account_username

__all__ = ["RBACAuthorizer", "RBACState", "RuleResolver", "applies_to"]

# visitor(the binding and subject that apply, or None; rule or None; error or "") -> keep
# going? (the binding is described only when it allows: describing costs microseconds)
Source = tuple[Binding, Subject] | None
Visitor = Callable[[Source, PolicyRule | None, str], bool]


class RBACState(Protocol):
    """Read access to the RBAC objects (an informer's current view)."""

    def cluster_role_rules(self, name: str) -> tuple[PolicyRule, ...] | None: ...

    def role_rules(self, namespace: str, name: str) -> tuple[PolicyRule, ...] | None: ...

    def cluster_role_bindings(self) -> Iterable[Binding]: ...

    def role_bindings(self, namespace: str) -> Iterable[Binding]: ...


def _subject_applies(user: UserInfo, subject: Subject, binding_namespace: str) -> bool:
    if subject.kind == "User":
        return user.name == subject.name
    if subject.kind == "Group":
        return subject.name in user.groups
    if subject.kind == "ServiceAccount":
        namespace = subject.namespace or binding_namespace
        return bool(namespace) and user.name == service_account_username(namespace, subject.name)
    return False


def applies_to(user: UserInfo, binding: Binding) -> Subject | None:
    """The first subject of ``binding`` that is ``user``, or None."""
    for subject in binding.subjects:
        if _subject_applies(user, subject, binding.namespace):
            return subject
    return None


def _describe_subject(subject: Subject, binding_namespace: str) -> str:
    if subject.kind == "ServiceAccount":
        namespace = subject.namespace or binding_namespace
        return f"{subject.kind} {go_quote(subject.name + '/' + namespace)}"
    return f"{subject.kind} {go_quote(subject.name)}"


def _describe(binding: Binding, subject: Subject) -> str:
    if binding.namespace:
        return (
            f"RoleBinding {go_quote(binding.name + '/' + binding.namespace)} of "
            f"{binding.role_ref.kind} {go_quote(binding.role_ref.name)} to "
            f"{_describe_subject(subject, binding.namespace)}"
        )
    return (
        f"ClusterRoleBinding {go_quote(binding.name)} of {binding.role_ref.kind} "
        f"{go_quote(binding.role_ref.name)} to {_describe_subject(subject, '')}"
    )


class RuleResolver:
    def __init__(self, state: RBACState) -> None:
        self.state = state

    def _role_rules(self, binding: Binding) -> tuple[tuple[PolicyRule, ...], str]:
        ref = binding.role_ref
        if ref.kind == "ClusterRole":
            rules = self.state.cluster_role_rules(ref.name)
            if rules is None:
                return (), f"clusterrole.{RBAC_GROUP} {go_quote(ref.name)} not found"
            return rules, ""
        if ref.kind == "Role" and binding.namespace:
            rules = self.state.role_rules(binding.namespace, ref.name)
            if rules is None:
                return (), f"role.{RBAC_GROUP} {go_quote(ref.name)} not found"
            return rules, ""
        return (), f"unsupported role reference kind: {go_quote(ref.kind)}"

    def _visit_bindings(self, user: UserInfo, bindings: Iterable[Binding], visit: Visitor) -> bool:
        for binding in bindings:
            subject = applies_to(user, binding)
            if subject is None:
                continue
            rules, error = self._role_rules(binding)
            if error and not visit(None, None, error):
                return False
            source = (binding, subject)
            for rule in rules:
                if not visit(source, rule, ""):
                    return False
        return True

    def visit_rules_for(self, user: UserInfo, namespace: str, visit: Visitor) -> None:
        """Call ``visit`` with every rule that applies to ``user`` in ``namespace``
        (cluster-wide ones first) until it returns False."""
        if not self._visit_bindings(user, self.state.cluster_role_bindings(), visit):
            return
        if namespace:
            self._visit_bindings(user, self.state.role_bindings(namespace), visit)

    def rules_for_user(self, user: UserInfo, namespace: str) -> tuple[list[PolicyRule], list[str]]:
        rules: list[PolicyRule] = []
        errors: list[str] = []

        def collect(source: Source, rule: PolicyRule | None, error: str) -> bool:
            if rule is not None:
                rules.append(rule)
            if error:
                errors.append(error)
            return True

        self.visit_rules_for(user, namespace, collect)
        return rules, errors


def _aggregate(errors: list[str]) -> str:
    """An apimachinery aggregate's message: one error bare, several as ``[a, b]``."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


class RBACAuthorizer:
    """Allow when a rule that applies to the user allows the request; otherwise no
    opinion, with the resolution errors as the reason. Decisions are memoized when the
    state has a ``generation`` (``decision_cache``: exact, emptied on any change)."""

    def __init__(self, state: RBACState) -> None:
        self.resolver = RuleResolver(state)
        self.cache = DecisionCache()

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        generation = getattr(self.resolver.state, "generation", None)
        if not isinstance(generation, int):
            return self._resolve(attrs)
        key = decision_key(attrs)
        cached = self.cache.get(key, generation)
        if cached is None:
            cached = self._resolve(attrs)
            self.cache.put(key, generation, cached)
        return cached

    def _resolve(self, attrs: Attributes) -> tuple[Decision, str]:
        allowed_by: list[tuple[Binding, Subject]] = []
        errors: list[str] = []

        def check(source: Source, rule: PolicyRule | None, error: str) -> bool:
            if error:
                errors.append(error)
                return True
            if rule is not None and source is not None and rule_allows(attrs, rule):
                allowed_by.append(source)
                return False
            return True

        self.resolver.visit_rules_for(attrs.user, attrs.namespace, check)
        if allowed_by:
            return Decision.ALLOW, f"RBAC: allowed by {_describe(*allowed_by[0])}"
        return Decision.NO_OPINION, f"RBAC: {_aggregate(errors)}" if errors else ""

    def rules_for(self, user: UserInfo, namespace: str) -> RulesResult:
        rules, errors = self.resolver.rules_for_user(user, namespace)
        resource = [
            ResourceRule(r.verbs, r.api_groups, r.resources, r.resource_names)
            for r in rules
            if not r.non_resource_urls
        ]
        non_resource = [
            NonResourceRule(r.verbs, r.non_resource_urls) for r in rules if r.non_resource_urls
        ]
        return RulesResult(tuple(resource), tuple(non_resource), bool(errors), tuple(errors))
