"""The loopback token (upstream's ``AuthorizeClientBearerToken``): a random bearer token made
once per process for the loopback client (``proxy.loopback``), authenticated as
``system:apiserver`` in ``system:masters`` ahead of every other authenticator, on the
secure port and on the plain one (whose other requests stay ``system:unsecured``), so
the audit log names the server's own writes. It is never written anywhere: another
process, or a restart of this one, cannot use it."""

from __future__ import annotations

import hmac
import secrets
import uuid
from dataclasses import dataclass, field

from aiohttp import web

from proxy.authentication.authenticator import Response
from proxy.request.user import ALL_AUTHENTICATED, SYSTEM_PRIVILEGED_GROUP, UserInfo

__all__ = ["APISERVER_USER", "LoopbackToken"]

APISERVER_USER = "system:apiserver"


def _token() -> str:
    return secrets.token_urlsafe(32)


def _uid() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class LoopbackToken:
    """The token, and the user it stands for (a fresh uid per process, as upstream)."""

    token: str = field(default_factory=_token, repr=False)
    uid: str = field(default_factory=_uid)

    @property
    def user(self) -> UserInfo:
        return UserInfo(APISERVER_USER, self.uid, (SYSTEM_PRIVILEGED_GROUP, ALL_AUTHENTICATED))

    def matches(self, token: str) -> bool:
        # the header's bytes as sent (a byte that is not UTF-8 is a lone surrogate here)
        sent = token.encode("utf-8", "surrogateescape")
        return hmac.compare_digest(sent, self.token.encode())

    async def authenticate_token(self, token: str) -> Response | None:
        """A ``TokenAuthenticator``: the user for this token, None for any other."""
        return Response(self.user) if self.matches(token) else None

    def authenticate_plain(self, request: web.Request) -> UserInfo | None:
        """The user of a plain-port request that bears this token, else None."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        return self.user if self.matches(token.strip()) else None
