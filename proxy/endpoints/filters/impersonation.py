"""Impersonation (upstream's ``WithImpersonation``): ``Impersonate-User``,
``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and ``Impersonate-Extra-<key>``.

Each requested identity is authorized with the verb ``impersonate`` for the requesting
user: ``users``/``groups`` (API group ""), ``serviceaccounts`` in the namespace for a
``system:serviceaccount:NS:NAME`` user, ``uids`` and ``userextras/<key>``
(``authentication.k8s.io``). Any denial is 403 with upstream's message (``users "bob"
is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the
cluster scope``). Groups, extra or a uid without a user is a 500 as upstream. The
impersonated user replaces the request's user; ``system:authenticated`` is added as
upstream adds it (``system:unauthenticated`` for ``system:anonymous``).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware
from multidict import CIMultiDictProxy

from proxy.apierrors import go_quote
from proxy.authorization.authorizer import Attributes, Decision
from proxy.authorization.decision import authorize, forbidden
from proxy.authorization.modes import Union
from proxy.endpoints.filters.authentication import is_secure, status_response
from proxy.request.user import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    ANONYMOUS,
    USER_KEY,
    UserInfo,
    request_user,
    service_account_groups,
    service_account_username,
    split_service_account_username,
)

__all__ = ["ImpersonationRequest", "impersonation_middleware", "impersonation_requests"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

USER_HEADER = "Impersonate-User"
GROUP_HEADER = "Impersonate-Group"
UID_HEADER = "Impersonate-Uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHN_GROUP = "authentication.k8s.io"


@dataclass(frozen=True, slots=True)
class ImpersonationRequest:
    kind: str  # ServiceAccount, User, Group, UserExtra, UID
    name: str
    namespace: str = ""
    extra_key: str = ""

    def __str__(self) -> str:  # Go's %v of an ObjectReference, roughly
        return f"{{{self.kind} {self.namespace} {self.name} {self.extra_key}}}"


class ImpersonationError(ValueError):
    pass


def impersonation_requests(headers: CIMultiDictProxy[str]) -> list[ImpersonationRequest]:
    """The requested identities, in upstream's order (user, groups, extra, uid)."""
    out: list[ImpersonationRequest] = []
    user = headers.get(USER_HEADER, "")
    if user:
        sa = split_service_account_username(user)
        out.append(
            ImpersonationRequest("ServiceAccount", sa[1], sa[0])
            if sa
            else ImpersonationRequest("User", user)
        )
    groups = headers.getall(GROUP_HEADER, [])
    out += [ImpersonationRequest("Group", g) for g in groups]
    has_extra = False
    for header in headers:
        if header.lower().startswith(EXTRA_PREFIX):
            has_extra = True
            key = urllib.parse.unquote(header[len(EXTRA_PREFIX) :].lower())
            out += [
                ImpersonationRequest("UserExtra", v, extra_key=key) for v in headers.getall(header)
            ]
    uid = headers.get(UID_HEADER, "")
    if uid:
        out.append(ImpersonationRequest("UID", uid))
    if (groups or has_extra or uid) and not user:
        raise ImpersonationError(
            f"requested [{' '.join(map(str, out))}] without impersonating a user"
        )
    return out


def _attributes(requestor: UserInfo, req: ImpersonationRequest) -> Attributes:
    if req.kind == "ServiceAccount":
        return Attributes(
            requestor,
            "impersonate",
            namespace=req.namespace,
            api_version="v1",
            resource="serviceaccounts",
            name=req.name,
        )
    if req.kind in ("User", "Group"):
        resource = "users" if req.kind == "User" else "groups"
        return Attributes(
            requestor, "impersonate", api_version="v1", resource=resource, name=req.name
        )
    if req.kind == "UserExtra":
        return Attributes(
            requestor,
            "impersonate",
            api_group=AUTHN_GROUP,
            api_version="v1",
            resource="userextras",
            subresource=req.extra_key,
            name=req.name,
        )
    return Attributes(
        requestor,
        "impersonate",
        api_group=AUTHN_GROUP,
        api_version="v1",
        resource="uids",
        name=req.name,
    )


def impersonated_user(requests: list[ImpersonationRequest], groups_given: bool) -> UserInfo:
    name, uid = "", ""
    groups: list[str] = []
    extra: dict[str, tuple[str, ...]] = {}
    for req in requests:
        if req.kind == "ServiceAccount":
            name = service_account_username(req.namespace, req.name)
            if not groups_given:
                groups = list(service_account_groups(req.namespace))
        elif req.kind == "User":
            name = req.name
        elif req.kind == "Group":
            groups.append(req.name)
        elif req.kind == "UserExtra":
            extra[req.extra_key] = (*extra.get(req.extra_key, ()), req.name)
        else:
            uid = req.name
    if name != ANONYMOUS:
        if not any(g in (ALL_AUTHENTICATED, ALL_UNAUTHENTICATED) for g in groups):
            groups.append(ALL_AUTHENTICATED)
    elif ALL_UNAUTHENTICATED not in groups:
        groups.append(ALL_UNAUTHENTICATED)
    return UserInfo(name=name, uid=uid, groups=tuple(groups), extra=extra)


def _internal_error(request: web.Request, message: str) -> web.Response:
    """Upstream's ``responsewriters.InternalError``: plain text, not a Status."""
    return web.Response(
        status=500, text=f"Internal Server Error: {go_quote(request.path_qs)}: {message}\n"
    )


def impersonation_middleware(
    authorizer: Union,
) -> Middleware:
    @web.middleware
    async def impersonate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not is_secure(request):  # the plain port has no impersonation (nor authorization)
            return await handler(request)
        try:
            requests = impersonation_requests(request.headers)
        except ImpersonationError as e:
            return _internal_error(request, str(e))
        if not requests:
            return await handler(request)
        requestor = request_user(request)
        if requestor is None:
            return _internal_error(request, "no user found for request")
        for req in requests:
            attrs = _attributes(requestor, req)
            decision, reason = authorize(authorizer, attrs)
            if decision is not Decision.ALLOW:
                return status_response(request, forbidden(attrs, reason))
        request[USER_KEY] = impersonated_user(requests, GROUP_HEADER in request.headers)
        return await handler(request)

    return impersonate
