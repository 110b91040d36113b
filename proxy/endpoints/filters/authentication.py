"""The authentication filter (upstream's ``WithAuthentication``).

On the secure port every request is authenticated by the configured chain; the user
is stored on the request under ``USER_KEY``. No user (no credential and anonymous
off), a rejected credential, or a token for none of ``--api-audiences`` is 401 with
upstream's Status (``Unauthorized``); upstream sends no ``WWW-Authenticate`` header and
neither does this. The reason goes to the log, never the credential.

The plain port (``--port``) is kube's old insecure port: no authentication, every
request is ``system:unsecured`` in ``system:masters`` — but the loopback token's
(``proxy.authentication.loopback``), which is ``system:apiserver`` on either port.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from proxy import apierrors
from proxy.authentication.authenticator import AuthenticationError, RequestAuthenticator
from proxy.authentication.loopback import LoopbackToken
from proxy.authentication.metrics import record_authentication
from proxy.endpoints import responsewriters
from proxy.request.user import (
    ALL_AUTHENTICATED,
    SYSTEM_PRIVILEGED_GROUP,
    USER_KEY,
    UserInfo,
)

__all__ = [
    "PLAIN_PORT_USER",
    "FailedHandler",
    "answer_unauthorized",
    "authentication_middleware",
    "is_secure",
    "plain_port_authentication",
    "status_response",
    "unauthorized",
]

log = logging.getLogger("watchcache.authentication")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# the answer to a failed authentication (upstream's ``failedHandler``: 401, audited
# when auditing is on, ``proxy.audit.filter.failed_authentication_audit``)
FailedHandler = Callable[[web.Request], web.StreamResponse]

PLAIN_PORT_USER = UserInfo(
    name="system:unsecured", groups=(SYSTEM_PRIVILEGED_GROUP, ALL_AUTHENTICATED)
)


def unauthorized() -> apierrors.StatusError:
    body = apierrors.status_body(401, "Unauthorized", "Unauthorized")
    return apierrors.StatusError(body)


def answer_unauthorized(request: web.Request) -> web.StreamResponse:
    """The failed handler without auditing: 401 ``Unauthorized``."""
    return status_response(request, unauthorized())


def status_response(request: web.Request, err: apierrors.StatusError) -> web.Response:
    """The filters answer with a Status themselves (they sit outside the handlers'
    error translation), as upstream's filters write theirs (negotiated: protobuf when
    the client prefers it)."""
    return responsewriters.status_response(request, err)


def is_secure(request: web.Request) -> bool:
    """Did the request come in on the TLS port?"""
    transport = request.transport
    return transport is not None and isinstance(
        transport.get_extra_info("ssl_object"), ssl.SSLObject
    )


def _audiences_acceptable(api: tuple[str, ...], token: tuple[str, ...]) -> bool:
    return not api or not token or bool(set(api) & set(token))


def plain_port_user(request: web.Request, loopback: LoopbackToken | None) -> UserInfo:
    """``system:unsecured``, or ``system:apiserver`` for the loopback token."""
    user = loopback.authenticate_plain(request) if loopback is not None else None
    return user or PLAIN_PORT_USER


def plain_port_authentication(loopback: LoopbackToken) -> Middleware:
    """The authentication filter of a server without a secure port."""

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        request[USER_KEY] = plain_port_user(request, loopback)
        return await handler(request)

    return authenticate


def authentication_middleware(
    authenticator: RequestAuthenticator,
    api_audiences: tuple[str, ...] = (),
    loopback: LoopbackToken | None = None,
    failed: FailedHandler = answer_unauthorized,
) -> Middleware:
    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not is_secure(request):
            request[USER_KEY] = plain_port_user(request, loopback)
            return await handler(request)
        start = time.perf_counter()
        try:
            response = await authenticator.authenticate(request)
        except AuthenticationError as e:
            record_authentication("error", time.perf_counter() - start)
            log.info("Unable to authenticate the request: %s", e)
            return failed(request)
        if response is None:
            record_authentication("failure", time.perf_counter() - start)
            return failed(request)
        if not _audiences_acceptable(api_audiences, response.audiences):
            record_authentication("error", time.perf_counter() - start)
            log.info(
                "unable to match the audience: %s, accepted: %s",
                list(response.audiences),
                list(api_audiences),
            )
            return failed(request)
        record_authentication("success", time.perf_counter() - start, response.user.name)
        request[USER_KEY] = response.user
        return await handler(request)

    return authenticate
