"""The authorization filter (upstream's ``WithAuthorization``): on the secure port every
request is authorized with the user the authentication filter stored and the request's
RequestInfo (computed once by the request-info filter); anything but Allow is answered
403 Forbidden (``proxy.authorization.decision``). The plain port skips the filter (its
user is system:masters)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from proxy.authorization.authorizer import Decision, attributes_for
from proxy.authorization.decision import (
    AUDIT_DECISION,
    DECISION_ANNOTATION,
    REASON_ANNOTATION,
    authorize,
    forbidden,
)
from proxy.authorization.modes import Union
from proxy.endpoints.filters.authentication import is_secure, status_response, unauthorized
from proxy.request.audit_context import add_audit_annotation
from proxy.request.request_info import request_info_of
from proxy.request.user import request_user

__all__ = ["authorization_middleware"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def authorization_middleware(
    authorizer: Union,
) -> Middleware:
    @web.middleware
    async def authorize_request(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not is_secure(request):
            return await handler(request)
        user = request_user(request)
        if user is None:  # the authentication filter always sets one on this port
            return status_response(request, unauthorized())
        attrs = attributes_for(user, request_info_of(request))
        decision, reason = authorize(authorizer, attrs)
        # upstream's audit annotations of the decision (proxy.audit reads them)
        add_audit_annotation(
            request, DECISION_ANNOTATION, AUDIT_DECISION[decision is Decision.ALLOW]
        )
        add_audit_annotation(request, REASON_ANNOTATION, reason)
        if decision is not Decision.ALLOW:
            return status_response(request, forbidden(attrs, reason))
        return await handler(request)

    return authorize_request
