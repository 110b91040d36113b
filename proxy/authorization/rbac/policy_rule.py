"""Policy rules, role references, subjects and bindings as this package holds them
(parsed once from the stored JSON), and the matching functions of upstream's
``rbac.go``/``helpers.go``:

- verbs and API groups match exactly or by ``*``;
- a resource matches ``*``, the exact ``resource`` or ``resource/subresource``, or
  ``*/subresource`` for any resource's subresource;
- ``resourceNames`` empty means every name; otherwise the request's name must be listed
  (a request without a name — list, watch, create — never matches a named rule);
- a non-resource URL matches ``*``, exactly, or by a trailing ``*`` prefix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from proxy.apierrors import go_quote
from proxy.authorization.authorizer import Attributes

__all__ = [
    "Binding",
    "PolicyRule",
    "RoleRef",
    "Subject",
    "compact_string",
    "go_quote_list",
    "parse_binding",
    "parse_rules",
    "rule_allows",
]

RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True, slots=True)
class PolicyRule:
    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verbs": list(self.verbs)}
        if self.api_groups:
            out["apiGroups"] = list(self.api_groups)
        if self.resources:
            out["resources"] = list(self.resources)
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        return out


@dataclass(frozen=True, slots=True)
class RoleRef:
    kind: str  # Role or ClusterRole
    name: str


@dataclass(frozen=True, slots=True)
class Subject:
    kind: str  # User, Group or ServiceAccount
    name: str
    namespace: str = ""


@dataclass(frozen=True, slots=True)
class Binding:
    """A RoleBinding (namespace set) or ClusterRoleBinding (namespace "")."""

    name: str
    namespace: str
    role_ref: RoleRef
    subjects: tuple[Subject, ...]


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def parse_rules(rules: Any) -> tuple[PolicyRule, ...]:
    """``rules`` of a stored Role/ClusterRole (malformed entries are skipped)."""
    out: list[PolicyRule] = []
    for raw in rules if isinstance(rules, list) else ():
        if not isinstance(raw, Mapping):
            continue
        out.append(
            PolicyRule(
                verbs=_strs(raw.get("verbs")),
                api_groups=_strs(raw.get("apiGroups")),
                resources=_strs(raw.get("resources")),
                resource_names=_strs(raw.get("resourceNames")),
                non_resource_urls=_strs(raw.get("nonResourceURLs")),
            )
        )
    return tuple(out)


def parse_binding(obj: Mapping[str, Any]) -> Binding:
    meta = obj.get("metadata") or {}
    ref = obj.get("roleRef") or {}
    subjects = tuple(
        Subject(str(s.get("kind", "")), str(s.get("name", "")), str(s.get("namespace", "")))
        for s in obj.get("subjects") or ()
        if isinstance(s, Mapping)
    )
    return Binding(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        role_ref=RoleRef(str(ref.get("kind", "")), str(ref.get("name", ""))),
        subjects=subjects,
    )


def _resource_matches(rule: PolicyRule, combined: str, subresource: str) -> bool:
    for resource in rule.resources:
        if resource == "*" or resource == combined:
            return True
        if (
            subresource
            and len(resource) == len(subresource) + 2
            and resource.startswith("*/")
            and resource.endswith(subresource)
        ):
            return True
    return False


def _url_matches(rule: PolicyRule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(attrs: Attributes, rule: PolicyRule) -> bool:
    if "*" not in rule.verbs and attrs.verb not in rule.verbs:
        return False
    if not attrs.resource_request:
        return _url_matches(rule, attrs.path)
    if "*" not in rule.api_groups and attrs.api_group not in rule.api_groups:
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not _resource_matches(rule, combined, attrs.subresource):
        return False
    return not rule.resource_names or attrs.name in rule.resource_names


def go_quote_list(values: Iterable[str]) -> str:
    """Go's ``%q`` of a []string: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def compact_string(rule: PolicyRule) -> str:
    """Upstream's ``PolicyRule.CompactString``: ``{APIGroups:[""], Resources:["pods"],
    Verbs:["get"]}``."""
    parts: list[str] = []
    fields: Sequence[tuple[str, tuple[str, ...]]] = (
        ("APIGroups", rule.api_groups),
        ("Resources", rule.resources),
        ("NonResourceURLs", rule.non_resource_urls),
        ("ResourceNames", rule.resource_names),
        ("Verbs", rule.verbs),
    )
    for label, values in fields:
        if values:
            parts.append(f"{label}:{go_quote_list(values)}")
    return "{" + ", ".join(parts) + "}"
