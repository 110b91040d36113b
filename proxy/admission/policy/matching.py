"""Which requests a ValidatingAdmissionPolicy and its bindings apply to (kube's
``policy/matching``): ``matchConstraints`` of the policy and ``matchResources`` of the
binding (resourceRules with resourceNames, excludeResourceRules, namespace and object
selectors, matchPolicy); and the params a binding names (``paramRef``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from proxy.admission.attributes import Attributes
from proxy.admission.configuration import ConfigurationSource
from proxy.admission.interfaces import ObjectLookup
from proxy.admission.webhook import rules
from proxy.authorization.rbac.label_selector import selector_matches

__all__ = ["ParamsNotFound", "applicable", "match_resources", "params_for"]

JSON = dict[str, Any]


class ParamsNotFound(Exception):
    """No params for a binding whose parameterNotFoundAction is Deny."""


def _rule_names_match(rule: JSON, attrs: Attributes) -> bool:
    names = rule.get("resourceNames") or ()
    return not names or attrs.name in names


def _any_rule(rule_list: Any, attrs: Attributes, policy: str) -> bool:
    return any(rules.rules_match([r], attrs, policy) and _rule_names_match(r, attrs)
               for r in rule_list or ())


def match_resources(match: JSON | None, attrs: Attributes, namespace: JSON | None,
                    *, default_all: bool) -> bool:
    """Whether ``match`` (matchConstraints or matchResources) covers the request.
    A binding without matchResources covers what its policy does (``default_all``)."""
    if not match:
        return default_all
    policy = str(match.get("matchPolicy") or "Equivalent")
    if (match.get("resourceRules") is not None or not default_all) and not _any_rule(
            match.get("resourceRules"), attrs, policy):  # fmt: skip
        return False
    if _any_rule(match.get("excludeResourceRules"), attrs, policy):
        return False
    if not rules.object_selector_matches(match.get("objectSelector"), attrs):
        return False
    return rules.namespace_selector_matches(match.get("namespaceSelector"), attrs, namespace)


async def params_for(policy: JSON, binding: JSON, attrs: Attributes,
                     lookup: ObjectLookup) -> list[JSON | None]:
    """The params objects to evaluate the policy with: ``[None]`` without paramKind;
    empty (nothing to evaluate) when none are found and the action is Allow;
    ParamsNotFound when Deny."""
    kind = (policy.get("spec") or {}).get("paramKind")
    ref = (binding.get("spec") or {}).get("paramRef")
    if not kind or not ref:
        return [None]
    group = str(kind.get("apiVersion") or "").rpartition("/")[0]
    served = lookup.resource_for_kind(group, str(kind.get("kind") or ""))
    found: list[JSON | None] = []
    if served is not None:
        plural, namespaced = served
        namespace = str(ref.get("namespace") or (attrs.namespace if namespaced else ""))
        if ref.get("name"):
            obj = await lookup.get(group, plural, namespace, str(ref["name"]))
            found = [obj] if obj is not None else []
        else:
            selector = ref.get("selector") or {}
            found = [o for o in await lookup.list(group, plural, namespace)
                     if selector_matches(selector, (o.get("metadata") or {}).get("labels") or {})]
    if not found and ref.get("parameterNotFoundAction") == "Deny":
        raise ParamsNotFound()
    return found


async def applicable(
    source: ConfigurationSource, kind: str, attrs: Attributes, lookup: ObjectLookup
) -> AsyncIterator[tuple[JSON, JSON, JSON | None]]:
    """(policy, binding, namespace object) of every binding, by name, of ``kind``
    (``validatingadmissionpolicies`` or ``mutatingadmissionpolicies``) whose policy
    exists and matches the request with the binding's own match."""
    bindings = source.items(kind.replace("policies", "policybindings"))
    if not bindings:
        return
    namespace = None
    if attrs.namespace:
        namespace = await lookup.get("", "namespaces", "", attrs.namespace)
    for binding in bindings:
        spec = binding.get("spec") or {}
        policy = source.get(kind, str(spec.get("policyName")))
        if policy is None:
            continue
        constraints = (policy.get("spec") or {}).get("matchConstraints")
        if not match_resources(constraints, attrs, namespace, default_all=False):
            continue
        if not match_resources(spec.get("matchResources"), attrs, namespace, default_all=True):
            continue
        yield policy, binding, namespace
