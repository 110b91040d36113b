"""The audit policy (``audit.k8s.io/v1`` Policy, upstream's ``audit/policy``): the
first rule that matches a request decides its level (None, Metadata, Request,
RequestResponse), the stages not to write (the policy's ``omitStages`` plus the
rule's) and whether managedFields are dropped (the rule's ``omitManagedFields``, else
the policy's). No rule matches: None.

A rule matches when each of its non-empty lists matches: ``users``, ``userGroups``
(any), ``verbs``, ``namespaces`` (``""`` for cluster-scoped resources),
``resources`` (per group: ``pods``, ``pods/status``, ``*``, ``*/status``,
``pods/*``; ``resourceNames``), ``nonResourceURLs`` (exact, or a ``/prefix*``). A
rule with resources or namespaces matches only resource requests, one with
nonResourceURLs only non-resource requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from proxy.request.request_info import RequestInfo
from proxy.request.user import UserInfo

__all__ = ["LEVELS", "STAGES", "Decision", "Policy", "PolicyError", "load_policy", "parse_policy"]

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
JSON = dict[str, Any]


class PolicyError(ValueError):
    """An unreadable or invalid policy file (``watchcache serve`` exits 2)."""


@dataclass(frozen=True)
class Decision:
    level: str
    omit_stages: frozenset[str]
    omit_managed_fields: bool


NONE = Decision("None", frozenset(), False)


def _strings(rule: JSON, key: str) -> tuple[str, ...]:
    value = rule.get(key) or []
    if not isinstance(value, list):
        raise PolicyError(f"{key}: must be a list")
    return tuple(str(v) for v in value)


def _check_stages(stages: tuple[str, ...], where: str) -> None:
    for stage in stages:
        if stage not in STAGES:
            raise PolicyError(f'{where}omitStages: Unsupported value: "{stage}"')


@dataclass(frozen=True)
class Rule:
    level: str
    users: tuple[str, ...]
    groups: tuple[str, ...]
    verbs: tuple[str, ...]
    namespaces: tuple[str, ...]
    resources: tuple[JSON, ...]
    urls: tuple[str, ...]
    omit_stages: frozenset[str]
    omit_managed_fields: bool | None

    @classmethod
    def parse(cls, rule: JSON, index: int) -> Rule:
        where = f"rules[{index}]."
        level = rule.get("level")
        if level not in LEVELS:
            raise PolicyError(f'{where}level: Unsupported value: "{level}"')
        resources = tuple(r for r in rule.get("resources") or () if isinstance(r, dict))
        urls = _strings(rule, "nonResourceURLs")
        if urls and (resources or rule.get("namespaces")):
            raise PolicyError(f"{where}nonResourceURLs: rules cannot apply to both regular "
                              "resources and non-resource URLs")  # fmt: skip
        stages = _strings(rule, "omitStages")
        _check_stages(stages, where)
        omit = rule.get("omitManagedFields")
        return cls(
            level=str(level),
            users=_strings(rule, "users"),
            groups=_strings(rule, "userGroups"),
            verbs=_strings(rule, "verbs"),
            namespaces=_strings(rule, "namespaces"),
            resources=resources,
            urls=urls,
            omit_stages=frozenset(stages),
            omit_managed_fields=None if omit is None else bool(omit),
        )

    def matches(self, user: UserInfo, info: RequestInfo) -> bool:
        if self.users and user.name not in self.users:
            return False
        if self.groups and not any(g in self.groups for g in user.groups):
            return False
        if self.verbs and info.verb not in self.verbs:
            return False
        if info.is_resource_request:
            return self._matches_resource(info)
        if self.namespaces or self.resources:
            return False
        return not self.urls or any(_url_matches(u, info.path) for u in self.urls)

    def _matches_resource(self, info: RequestInfo) -> bool:
        if self.urls:
            return False
        if self.namespaces and info.namespace not in self.namespaces:
            return False
        if not self.resources:
            return True
        return any(_group_resource_matches(gr, info) for gr in self.resources)


def _url_matches(pattern: str, path: str) -> bool:
    if pattern.endswith("*"):
        return path.startswith(pattern[:-1])
    return pattern == path


def _group_resource_matches(gr: JSON, info: RequestInfo) -> bool:
    if str(gr.get("group") or "") != info.group:
        return False
    names = gr.get("resourceNames") or []
    if names and info.name not in names:
        return False
    resources = gr.get("resources") or []
    if not resources:
        return True
    full = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
    for pattern in resources:
        if pattern in ("*", full):
            return True
        if pattern == "*/" + info.subresource and info.subresource:
            return True
        if pattern == info.resource + "/*" and info.subresource:
            return True
    return False


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...]
    omit_stages: frozenset[str]
    omit_managed_fields: bool
    # each rule with the Decision it gives, built once: a request only matches (a
    # frozen dataclass and a set union per request cost more than the matching)
    _decided: tuple[tuple[Rule, Decision], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_decided", tuple((r, self._decision(r)) for r in self.rules))

    def _decision(self, rule: Rule) -> Decision:
        omit = self.omit_managed_fields
        if rule.omit_managed_fields is not None:
            omit = rule.omit_managed_fields
        return Decision(rule.level, self.omit_stages | rule.omit_stages, omit)

    def decide(self, user: UserInfo, info: RequestInfo) -> Decision:
        """The level, omitted stages and managedFields choice for one request."""
        for rule, decision in self._decided:
            if rule.matches(user, info):
                return decision
        return NONE


def parse_policy(doc: Any) -> Policy:
    if not isinstance(doc, dict):
        raise PolicyError("the audit policy must be a mapping")
    if doc.get("kind") != "Policy" or doc.get("apiVersion") not in (
        "audit.k8s.io/v1",
        "audit.k8s.io/v1beta1",
    ):
        raise PolicyError('want kind "Policy" of apiVersion "audit.k8s.io/v1"')
    rules = doc.get("rules")
    if not isinstance(rules, list) or not rules:
        raise PolicyError("loaded illegal policy with 0 rules")
    stages = _strings(doc, "omitStages")
    _check_stages(stages, "")
    return Policy(
        rules=tuple(Rule.parse(r, i) for i, r in enumerate(rules) if isinstance(r, dict)),
        omit_stages=frozenset(stages),
        omit_managed_fields=bool(doc.get("omitManagedFields", False)),
    )


def load_policy(path: str) -> Policy:
    """The policy of ``--audit-policy-file`` (PolicyError naming the file)."""
    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise PolicyError(f"--audit-policy-file: cannot read {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise PolicyError(f"--audit-policy-file: invalid YAML in {path}: {e}") from None
    try:
        return parse_policy(doc)
    except PolicyError as e:
        raise PolicyError(f"--audit-policy-file {path}: {e}") from None
