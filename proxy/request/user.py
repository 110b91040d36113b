"""``user.Info``: the authenticated identity every later stage (authorization, audit,
the review APIs) reads from the request, and kube's well-known names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = [
    "ALL_AUTHENTICATED",
    "ALL_UNAUTHENTICATED",
    "ANONYMOUS",
    "SYSTEM_PRIVILEGED_GROUP",
    "USER_KEY",
    "UserInfo",
    "request_user",
    "service_account_groups",
    "service_account_username",
    "split_service_account_username",
]

SYSTEM_PRIVILEGED_GROUP = "system:masters"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An identity: name, uid, groups and extra (key -> values), as kube's DefaultInfo."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_api(self) -> dict[str, Any]:
        """The ``UserInfo`` of authentication.k8s.io (empty fields omitted)."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


# the request's UserInfo, set by the authentication filter (or the plain port's); a
# RequestKey, as aiohttp asks (a str key warns on every request)
USER_KEY = web.RequestKey("watchcache_user", UserInfo)


def request_user(request: web.Request) -> UserInfo | None:
    """The user the authentication filter stored, or None (no filter ran)."""
    user = request.get(USER_KEY)
    return user if isinstance(user, UserInfo) else None


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def split_service_account_username(username: str) -> tuple[str, str] | None:
    """``system:serviceaccount:NS:NAME`` -> (NS, NAME); None for any other name."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX) :].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def service_account_groups(namespace: str) -> tuple[str, str]:
    return SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}"
