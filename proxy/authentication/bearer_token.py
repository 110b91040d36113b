"""``Authorization: Bearer <token>``, handed to the token authenticators.

As upstream's bearertoken: no header, another scheme or an empty token is not this
authenticator's business (None, so anonymous may follow); a token no token
authenticator accepts is ``AuthenticationError("invalid bearer token")`` (401).
"""

from __future__ import annotations

from aiohttp import web

from proxy.authentication.authenticator import (
    AuthenticationError,
    Response,
    TokenAuthenticator,
)

__all__ = ["BearerToken", "bearer_token"]


def bearer_token(header: str) -> str:
    """The token of ``Bearer <token>`` (scheme case-insensitive), else ""."""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return ""
    return parts[1]


def _is_utf8(text: str) -> bool:
    """Whether ``text`` came from valid UTF-8 (aiohttp keeps other bytes as surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class BearerToken:
    def __init__(self, tokens: TokenAuthenticator) -> None:
        self.tokens = tokens

    async def authenticate(self, request: web.Request) -> Response | None:
        header = request.headers.get("Authorization", "")
        token = bearer_token(header)
        if not token:
            return None
        if not token.isascii() and not _is_utf8(token):
            # bytes that are not UTF-8 match no token file line, JWT or loopback token:
            # refused here, before any authenticator has to encode them (401, as Go's)
            raise AuthenticationError("invalid bearer token")
        response = await self.tokens.authenticate_token(token)
        if response is None:
            raise AuthenticationError("invalid bearer token")
        return response
