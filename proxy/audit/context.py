"""Audit annotations a request collects on its way (upstream's ``audit.AddAuditAnnotation``):
authorization records its decision and reason, admission its plugins' annotations.
They are kept on the request whether or not auditing is on (a small dict), and the
audit filter copies them into the events it writes after they were added."""

from __future__ import annotations

import functools
import importlib

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
    """Everything recorded so far, including what admission recorded under its own key
    (``proxy.admission.attributes``, when that module keeps one)."""
    found: dict[str, str] = dict(request.get(AUDIT_ANNOTATIONS) or {})
    key = _admission_key()
    if key is not None:
        for k, v in (request.get(key) or {}).items():
            found.setdefault(str(k), str(v))
    return found


@functools.cache
def _admission_key() -> web.RequestKey[dict[str, str]] | None:
    """Admission's own annotations key, if its module defines one other than ours."""
    try:
        attributes = importlib.import_module("proxy.admission.attributes")
    except ImportError:
        return None
    for name in ("AUDIT_ANNOTATIONS", "AUDIT_ANNOTATIONS_KEY"):
        key = getattr(attributes, name, None)
        if isinstance(key, web.RequestKey) and key is not AUDIT_ANNOTATIONS:
            return key
    return None


# the request body as the handler read it (``negotiation.read_body`` records it), for
# the Request and RequestResponse levels' ``requestObject``
REQUEST_BODY = web.RequestKey("watchcache_audit_request_body", bytes)
# set by the audit filter at the RequestResponse level only: the chunks of a streamed
# response (a LIST), joined into ``responseObject``
RESPONSE_CHUNKS = web.RequestKey("watchcache_audit_response_chunks", list)
