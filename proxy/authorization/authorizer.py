"""The authorizer contract (``authorizer.Attributes``, ``Decision``, ``Authorizer``,
``RuleResolver``) and the attributes of a request.

Decisions are synchronous: every authorizer here answers from memory (the RBAC one from
its informer over the watch cache), so the filter never awaits on the request path.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from proxy.request.request_info import RequestInfo
from proxy.request.user import UserInfo

__all__ = [
    "Attributes",
    "Authorizer",
    "Decision",
    "NonResourceRule",
    "ResourceRule",
    "RuleResolver",
    "RulesResult",
    "attributes_for",
]


class Decision(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    NO_OPINION = "no-opinion"


@dataclass(frozen=True, slots=True)
class Attributes:
    """What is asked: upstream's ``AttributesRecord``."""

    user: UserInfo
    verb: str
    resource_request: bool = True
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""


def attributes_for(user: UserInfo, info: RequestInfo) -> Attributes:
    return Attributes(
        user=user,
        verb=info.verb,
        resource_request=info.is_resource_request,
        namespace=info.namespace,
        api_group=info.group,
        api_version=info.version,
        resource=info.resource,
        subresource=info.subresource,
        name=info.name,
        path=info.path,
    )


class Authorizer(Protocol):
    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        """The decision and its reason (shown after the 403 message, or in a review)."""
        ...


@dataclass(frozen=True, slots=True)
class ResourceRule:
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NonResourceRule:
    verbs: tuple[str, ...]
    non_resource_urls: tuple[str, ...] = ()


@dataclass(frozen=True)
class RulesResult:
    """What a user may do in a namespace (SelfSubjectRulesReview)."""

    resource_rules: Sequence[ResourceRule] = ()
    non_resource_rules: Sequence[NonResourceRule] = ()
    incomplete: bool = False
    errors: Sequence[str] = field(default_factory=tuple)


@runtime_checkable
class RuleResolver(Protocol):
    def rules_for(self, user: UserInfo, namespace: str) -> RulesResult: ...
