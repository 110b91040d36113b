"""What go-restful checks once a route's path and method matched, before kube-apiserver's
handler runs (``RouterJSR311.detectRoute``): the body's Content-Type against what the
route consumes, then the Accept header against what it produces. Its refusals carry
go-restful's own text, through kube's ``serviceErrorHandler`` (details ``{}``)::

    a PATCH body of a type the route does not consume, Content-Length > 0
        → 415 "415: Unsupported Media Type"
    no route left, or none producing an accepted type:
        POST/PUT/PATCH without a Content-Length header
        → 415 "415: Unsupported Media Type\\n\\nAvailable representations: <produced>"
        otherwise
        → 406 "406: Not Acceptable\\n\\nAvailable representations: <produced>"

Matching is go-restful's: each comma-separated entry, parameters cut off, compared
exactly (``*/*`` matches anything; ``application/*`` matches nothing). The handler's own
negotiation (a Table version it does not know, a body type it cannot decode) comes
after, in ``proxy.endpoints.negotiation``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from proxy import apierrors

__all__ = ["MEDIA_TYPES", "PATCH_TYPES", "accepts", "check", "produces"]

MEDIA_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
STREAM_TYPES = ("application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch")
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})
# methods whose routes match a request without a Content-Type
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "DELETE", "TRACE"})


def produces(verb: str) -> tuple[str, ...]:
    """The media types the route of ``verb`` produces (list and watch also stream)."""
    return MEDIA_TYPES + STREAM_TYPES if verb in ("list", "watch") else MEDIA_TYPES


def _consumes(verb: str) -> Sequence[str] | None:
    """What the route of ``verb`` consumes; None for anything (the handler decides)."""
    return PATCH_TYPES if verb == "patch" else None


def _entries(header: str) -> list[str]:
    return [entry.split(";", 1)[0].strip() for entry in header.split(",")]


def _consumed(method: str, content_type: str, consumed: Sequence[str]) -> bool:
    if not content_type:
        if method in _IDEMPOTENT:
            return True
        content_type = "application/octet-stream"
    return any(e == "*/*" or e in consumed for e in _entries(content_type))


def accepts(accept: str, produced: Sequence[str]) -> bool:
    """Whether an Accept header names one of ``produced`` (or ``*/*``), as go-restful
    matches it."""
    return any(e == "*/*" or e in produced for e in _entries(accept or "*/*"))


def _content_length(headers: Mapping[str, str]) -> int:
    try:
        return int(headers.get("Content-Length", "") or 0)
    except ValueError:
        return 0


def check(method: str, verb: str, headers: Mapping[str, str]) -> None:
    """Raise go-restful's 415/406 (see the module docstring) for a request whose route
    matched by path and method; return quietly when the handler is to run."""
    consumed = _consumes(verb)
    produced: tuple[str, ...] = produces(verb)
    if consumed is not None and not _consumed(method, headers.get("Content-Type", ""), consumed):
        if _content_length(headers) > 0:
            raise apierrors.restful_error(415, "415: Unsupported Media Type")
        produced = ()  # no route is left to produce anything
    if produced and accepts(headers.get("Accept", ""), produced):
        return
    available = ", ".join(produced)
    if method in _WITH_BODY and "Content-Length" not in headers:
        raise apierrors.restful_error(
            415, f"415: Unsupported Media Type\n\nAvailable representations: {available}"
        )
    raise apierrors.restful_error(
        406, f"406: Not Acceptable\n\nAvailable representations: {available}"
    )
