"""Audit annotations a request collects on its way (upstream's ``audit.AddAuditAnnotation``):
authorization records its decision and reason, admission its plugins' annotations.
They are kept on the request whether or not auditing is on (a small dict), and the
audit filter copies them into the events it writes after they were added."""

from __future__ import annotations

from aiohttp import web

__all__ = [
    "AUDIT_ANNOTATIONS",
    "REQUEST_BODY",
    "RESPONSE_CHUNKS",
    "add_audit_annotation",
    "audit_annotations",
]

AUDIT_ANNOTATIONS = web.RequestKey("watchcache_audit_annotations", dict)


def add_audit_annotation(request: web.Request, key: str, value: str) -> None:
    """Record ``key: value``; a key already set keeps its first value (upstream logs
    the conflict and keeps the first)."""
    annotations = request.get(AUDIT_ANNOTATIONS)
    if annotations is None:
        annotations = request[AUDIT_ANNOTATIONS] = {}
    annotations.setdefault(key, value)


def audit_annotations(request: web.Request) -> dict[str, str]:
    """Everything recorded so far (authorization's and admission's)."""
    return dict(request.get(AUDIT_ANNOTATIONS) or {})


# the request body as the handler read it (``decoding.read_body`` records it), for
# the Request and RequestResponse levels' ``requestObject``
REQUEST_BODY = web.RequestKey("watchcache_audit_request_body", bytes)
# set by the audit filter at the RequestResponse level only: the chunks of a streamed
# response (a LIST), joined into ``responseObject``
RESPONSE_CHUNKS = web.RequestKey("watchcache_audit_response_chunks", list)
