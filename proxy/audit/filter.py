"""The audit filter (upstream's ``WithAudit`` and ``WithAuditInit``), between
authentication and impersonation.

Every request gets an audit ID (the client's ``Audit-ID`` header, else a new UUID),
answered in the ``Audit-Id`` response header. The policy decides the level from the
authenticated user and the request info; at level None nothing is written. Otherwise
the Event is written at RequestReceived, at ResponseStarted for a long-running
request (a WATCH) when its headers go out, at ResponseComplete when the handler
returns, and at Panic (500) when it raises something unexpected — each unless the
policy omits that stage. Authorization and admission annotations are copied in as
they were recorded by then. The impersonated user, when impersonation changed the
user, is ``impersonatedUser``.

A request whose authentication failed never reaches this filter (authentication is
outside it); ``failed_authentication_audit`` audits its 401 as upstream's
``WithFailedAuthenticationAudit`` does.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from proxy.audit.event import AuditEvent, RawObject, new_audit_id, user_api
from proxy.audit.log_backend import LEVELS
from proxy.audit.policy import Decision, Policy
from proxy.authentication.x509 import peer_certificate
from proxy.endpoints.filters.authentication import PLAIN_PORT_USER, FailedHandler
from proxy.endpoints.responsewriter import response_started
from proxy.request.audit_context import REQUEST_BODY, RESPONSE_CHUNKS, audit_annotations
from proxy.request.request_info import REQUEST_INFO
from proxy.request.user import UserInfo, request_user
from proxy.server.filters import is_long_running

__all__ = [
    "AUDIT_ID_HEADER",
    "audit_middleware",
    "failed_authentication_audit",
    "on_response_prepare",
]

AUDIT_ID_HEADER = "Audit-Id"
AUDIT_ID = web.RequestKey("watchcache_audit_id", str)
# the event in progress and its decision (set only when the level is not None)
AUDIT_EVENT = web.RequestKey("watchcache_audit_event", tuple)

Emit = Callable[[dict[str, Any]], None]
_LEVEL_CHILDREN = {
    level: LEVELS.labels(level) for level in ("Metadata", "Request", "RequestResponse")
}
_AT_LEAST_REQUEST = frozenset({"Request", "RequestResponse"})


def _emit_stage(emit: Emit, event: AuditEvent, decision: Decision, stage: str,
                request: web.Request) -> None:  # fmt: skip
    if stage in decision.omit_stages:
        return
    if stage != "RequestReceived":
        event.annotations = audit_annotations(request)
    emit(event.at(stage))


def _impersonated(request: web.Request, authenticated: UserInfo) -> dict[str, Any] | None:
    current = request_user(request)
    if current is None or current is authenticated:
        return None
    return user_api(current)


def _complete(request: web.Request, event: AuditEvent, level: str,
              response: web.StreamResponse) -> None:  # fmt: skip
    body = response.body if isinstance(response, web.Response) else None
    raw = body if isinstance(body, bytes) else None
    event.set_status(response.status, raw, response.content_type)
    info = request[REQUEST_INFO]
    sent = request.get(REQUEST_BODY)
    if sent and level in _AT_LEAST_REQUEST:
        event.set_request_object(sent, request.content_type, info)
    if sent and info.verb == "create":
        event.name_created_object(sent, request.content_type)
    if level == "RequestResponse" and not info.is_watch:
        chunks = request.get(RESPONSE_CHUNKS)
        data = b"".join(chunks) if chunks else raw
        if data:
            event.response_object = RawObject(
                data, response.content_type, event.omit_managed_fields
            )


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """The Audit-Id header; ResponseStarted for a long-running request."""
    audit_id = request.get(AUDIT_ID)
    if audit_id is not None:
        response.headers[AUDIT_ID_HEADER] = audit_id
    found = request.get(AUDIT_EVENT)
    if found is None:
        return
    emit, event, decision, authenticated = found
    if is_long_running(request[REQUEST_INFO]):
        event.impersonated = _impersonated(request, authenticated)
        event.set_status(response.status, None, "")
        _emit_stage(emit, event, decision, "ResponseStarted", request)


def audit_middleware(policy: Policy, emit: Emit) -> Middleware:
    @web.middleware
    async def audit(request: web.Request, handler: Handler) -> web.StreamResponse:
        audit_id = request.headers.get("Audit-ID") or new_audit_id()
        request[AUDIT_ID] = audit_id
        info = request[REQUEST_INFO]
        user = request_user(request) or PLAIN_PORT_USER
        decision = policy.decide(user, info)
        if decision.level == "None":
            return await handler(request)
        _LEVEL_CHILDREN[decision.level].inc()
        event = AuditEvent(request, info, user, decision.level, audit_id,
                           decision.omit_managed_fields)  # fmt: skip
        request[AUDIT_EVENT] = (emit, event, decision, user)
        if decision.level == "RequestResponse" and not info.is_watch:
            request[RESPONSE_CHUNKS] = []
        _emit_stage(emit, event, decision, "RequestReceived", request)
        try:
            response = await handler(request)
        except (asyncio.CancelledError, ConnectionResetError):
            # the client went away: a started response (a watch) still completes, as
            # upstream's handler returns and its filter writes ResponseComplete
            started = response_started(request)
            if started is not None:
                event.impersonated = _impersonated(request, user)
                event.set_status(started.status, None, "")
                _emit_stage(emit, event, decision, "ResponseComplete", request)
            raise
        except web.HTTPException as e:
            event.impersonated = _impersonated(request, user)
            event.set_status(e.status, None, "")
            _emit_stage(emit, event, decision, "ResponseComplete", request)
            raise
        except Exception as e:
            event.impersonated = _impersonated(request, user)
            message = f"APIServer panic'd: {e}"
            event.response_status = {"metadata": {}, "status": "Failure", "message": message,
                                     "reason": "InternalError", "code": 500}  # fmt: skip
            _emit_stage(emit, event, decision, "Panic", request)
            raise
        event.impersonated = _impersonated(request, user)
        _complete(request, event, decision.level, response)
        _emit_stage(emit, event, decision, "ResponseComplete", request)
        return response

    return audit


# the user a failed authentication is evaluated and audited as: none (upstream's nil
# user: a rule naming users or groups does not match it, its event's user is ``{}``)
_NO_USER = UserInfo(name="")


def _basic_auth(header: str) -> bool:
    """Does ``Authorization`` hold Basic credentials (Go's ``Request.BasicAuth``)?"""
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        return b":" in base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return False


def _auth_methods(request: web.Request) -> str:
    """What the client tried, as upstream's ``getAuthMethods`` words it."""
    header = request.headers.get("Authorization", "")
    methods = []
    if _basic_auth(header):
        methods.append("basic")
    parts = header.strip().split(" ")
    if len(parts) > 1 and parts[0].lower() == "bearer":
        methods.append("bearer")
    if request.query.get("access_token", "").strip():
        methods.append("access_token")
    if peer_certificate(request) is not None:
        methods.append("x509")
    if methods:
        return f"Authentication failed, attempted: {', '.join(methods)}"
    return "Authentication failed, no credentials provided"


def failed_authentication_audit(
    failed: FailedHandler, policy: Policy, emit: Emit
) -> FailedHandler:
    """The authentication filter's answer to a failed authentication, audited
    (upstream's ``WithFailedAuthenticationAudit``): the policy decides for no user, and
    one event is written, at ResponseStarted (unless omitted), with the answer's code
    and a message naming the credentials tried; no other stage. The answer carries
    its ``Audit-Id`` as every other (upstream's ``WithAuditInit`` is outside
    authentication)."""

    def audited(request: web.Request) -> web.StreamResponse:
        audit_id = request.headers.get("Audit-ID") or new_audit_id()
        request[AUDIT_ID] = audit_id
        response = failed(request)
        decision = policy.decide(_NO_USER, request[REQUEST_INFO])
        if decision.level == "None" or "ResponseStarted" in decision.omit_stages:
            return response
        _LEVEL_CHILDREN[decision.level].inc()
        event = AuditEvent(request, request[REQUEST_INFO], _NO_USER, decision.level,
                           audit_id, decision.omit_managed_fields)  # fmt: skip
        event.user = {}
        event.response_status = {"metadata": {}, "message": _auth_methods(request),
                                 "code": response.status}  # fmt: skip
        emit(event.at("ResponseStarted"))
        return response

    return audited
