"""The authenticator contracts and the combinators kube-apiserver builds its chain from.

``RequestAuthenticator.authenticate(request)`` answers one of three ways:

- a ``Response`` (the user, and the audiences the credential was issued for);
- ``None``: this authenticator found no credential of its kind (the next one may);
- ``AuthenticationError``: a credential of its kind was presented and is invalid (a
  wrong token, an expired JWT). Its message is for the server log only and never
  carries the credential.

``Union`` tries each in turn (the first Response wins; errors are kept and raised
together only when nobody answered), ``AuthenticatedGroupAdder`` adds
``system:authenticated``, ``WithAnonymous`` answers ``system:anonymous`` when nobody
found a credential — but not when one was presented and rejected (upstream's
``union.NewFailOnError``): a bad token is 401, never anonymous.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from aiohttp import web

from proxy.request.user import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    ANONYMOUS,
    UserInfo,
)

__all__ = [
    "Anonymous",
    "AuthenticatedGroupAdder",
    "AuthenticationError",
    "RequestAuthenticator",
    "Response",
    "TokenAuthenticator",
    "Union",
    "WithAnonymous",
]


class AuthenticationError(Exception):
    """A presented credential is invalid (message for the log; never the credential)."""


@dataclass(frozen=True, slots=True)
class Response:
    user: UserInfo
    audiences: tuple[str, ...] = ()


class RequestAuthenticator(Protocol):
    async def authenticate(self, request: web.Request) -> Response | None: ...


class TokenAuthenticator(Protocol):
    """Authenticates a bearer token (None: not a token of this kind)."""

    async def authenticate_token(self, token: str) -> Response | None: ...


async def _first_answer(attempts: Iterable[Awaitable[Response | None]]) -> Response | None:
    """The first attempt that answers wins; errors only when none did (upstream's union
        authenticators). ``attempts`` is lazy (a generator): an authenticator after the one
    that answered is never called."""
    errors: list[str] = []
    for attempt in attempts:
        try:
            response = await attempt
        except AuthenticationError as e:
            errors.append(str(e))
            continue
        if response is not None:
            return response
    if errors:
        raise AuthenticationError("; ".join(errors))
    return None


class Union:
    """The first authenticator that answers wins; errors only when none did."""

    def __init__(self, authenticators: Sequence[RequestAuthenticator]) -> None:
        self.authenticators = tuple(authenticators)

    async def authenticate(self, request: web.Request) -> Response | None:
        return await _first_answer(a.authenticate(request) for a in self.authenticators)


class TokenUnion:
    """The first token authenticator that accepts the token wins."""

    def __init__(self, authenticators: Sequence[TokenAuthenticator]) -> None:
        self.authenticators = tuple(authenticators)

    async def authenticate_token(self, token: str) -> Response | None:
        return await _first_answer(a.authenticate_token(token) for a in self.authenticators)


class AuthenticatedGroupAdder:
    """Adds ``system:authenticated`` to every authenticated user (not to anonymous)."""

    def __init__(self, delegate: RequestAuthenticator) -> None:
        self.delegate = delegate

    async def authenticate(self, request: web.Request) -> Response | None:
        response = await self.delegate.authenticate(request)
        if response is None:
            return None
        user = response.user
        if user.name == ANONYMOUS or any(
            g in (ALL_AUTHENTICATED, ALL_UNAUTHENTICATED) for g in user.groups
        ):
            return response
        # built directly: dataclasses.replace walks the fields on every call (two per
        # authenticated request were ~4 % of a small GET's CPU)
        added = UserInfo(user.name, user.uid, (*user.groups, ALL_AUTHENTICATED), user.extra)
        return Response(added, response.audiences)


class Anonymous:
    """Everyone is ``system:anonymous`` in ``system:unauthenticated``."""

    USER = UserInfo(name=ANONYMOUS, groups=(ALL_UNAUTHENTICATED,))

    async def authenticate(self, request: web.Request) -> Response | None:
        return Response(self.USER)


class WithAnonymous:
    """``delegate``, else anonymous — unless the delegate rejected a credential."""

    def __init__(self, delegate: RequestAuthenticator) -> None:
        self.delegate = delegate

    async def authenticate(self, request: web.Request) -> Response | None:
        response = await self.delegate.authenticate(request)
        return response if response is not None else Response(Anonymous.USER)
