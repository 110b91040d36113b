"""Classification (upstream's ``apf_controller.go`` matching and ``rule_wrapper``): which
FlowSchema a request matches, and its flow distinguisher.

FlowSchemas are tried by ascending ``matchingPrecedence`` then name; the first whose
any rule matches (a subject AND a resource or non-resource rule) wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proxy.request.request_info import RequestInfo
from proxy.request.user import UserInfo, split_service_account_username

__all__ = ["FlowSchemaSpec", "distinguisher", "matches", "parse_flow_schema", "sort_schemas"]

JSON = dict[str, Any]


@dataclass(frozen=True)
class FlowSchemaSpec:
    """A FlowSchema as the classifier uses it."""

    name: str
    uid: str
    precedence: int
    level: str
    method: str  # "ByUser", "ByNamespace" or ""
    rules: tuple[JSON, ...]


def parse_flow_schema(obj: JSON) -> FlowSchemaSpec:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    method = (spec.get("distinguisherMethod") or {}).get("type") or ""
    return FlowSchemaSpec(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        precedence=int(spec.get("matchingPrecedence") or 1000),
        level=str((spec.get("priorityLevelConfiguration") or {}).get("name", "")),
        method=str(method),
        rules=tuple(r for r in spec.get("rules") or () if isinstance(r, dict)),
    )


def sort_schemas(schemas: Sequence[FlowSchemaSpec]) -> list[FlowSchemaSpec]:
    return sorted(schemas, key=lambda s: (s.precedence, s.name))


def _subject_matches(subject: JSON, user: UserInfo) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        name = (subject.get("user") or {}).get("name")
        return name == "*" or name == user.name
    if kind == "Group":
        name = (subject.get("group") or {}).get("name")
        return name == "*" or name in user.groups
    if kind == "ServiceAccount":
        sa = subject.get("serviceAccount") or {}
        split = split_service_account_username(user.name)
        if split is None:
            return False
        return split[0] == sa.get("namespace") and sa.get("name") in ("*", split[1])
    return False


def _has(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _resource_rule_matches(rule: JSON, info: RequestInfo) -> bool:
    if not _has(rule.get("verbs"), info.verb) or not _has(rule.get("apiGroups"), info.group):
        return False
    resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
    if not _has(rule.get("resources"), resource):
        return False
    if not info.namespace:
        return bool(rule.get("clusterScope"))
    return _has(rule.get("namespaces"), info.namespace)


def _url_matches(pattern: str, path: str) -> bool:
    if pattern in ("*", path):
        return True
    return pattern.endswith("/*") and path.startswith(pattern[:-1])


def _non_resource_rule_matches(rule: JSON, info: RequestInfo) -> bool:
    if not _has(rule.get("verbs"), info.verb):
        return False
    return any(_url_matches(str(p), info.path) for p in rule.get("nonResourceURLs") or ())


def matches(schema: FlowSchemaSpec, user: UserInfo, info: RequestInfo) -> bool:
    """True when one of the schema's rules matches (a subject and a request rule)."""
    for rule in schema.rules:
        if not any(
            _subject_matches(s, user) for s in rule.get("subjects") or () if isinstance(s, dict)
        ):
            continue
        if info.is_resource_request:
            if any(_resource_rule_matches(r, info) for r in rule.get("resourceRules") or ()):
                return True
        elif any(_non_resource_rule_matches(r, info) for r in rule.get("nonResourceRules") or ()):
            return True
    return False


def distinguisher(schema: FlowSchemaSpec, user: UserInfo, info: RequestInfo) -> str:
    """The flow distinguisher: the user name (ByUser), the namespace (ByNamespace), or
    "" (no method: one flow for the whole schema)."""
    if schema.method == "ByUser":
        return user.name
    if schema.method == "ByNamespace":
        return info.namespace
    return ""
