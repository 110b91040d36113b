"""Content negotiation (upstream's ``endpoints/handlers/negotiation``): which media
type a request body is decoded as (``Content-Type``, 415 for one no decoder takes) and
which format a response is written in (``Accept``, 406 when none fits).

The other two halves of what used to live here: request bodies are read and decoded
(size limit, depth, YAML aliases, off the event loop when large) in
``proxy.endpoints.decoding``; responses are written in ``proxy.endpoints.responsewriters``.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiohttp import web

from proxy import apierrors
from proxy.endpoints import protobuf
from proxy.endpoints.media_types import AcceptedFormat, NotAcceptableError, parse_accept
from proxy.registry.resources import ResourceInfo

__all__ = [
    "BODY_TYPES",
    "JSON_TYPE",
    "PROTOBUF_TYPE",
    "RESPONSE_TYPES",
    "YAML_TYPE",
    "body_media_type",
    "body_types",
    "check_body_type",
    "media_type_of",
    "prefers_protobuf",
    "response_format",
    "unsupported_body_type",
]


JSON_TYPE = "application/json"
YAML_TYPE = "application/yaml"
PROTOBUF_TYPE = "application/vnd.kubernetes.protobuf"
BODY_TYPES = (JSON_TYPE, YAML_TYPE)
RESPONSE_TYPES = (JSON_TYPE, YAML_TYPE)


def media_type_of(request: web.Request, default: str = JSON_TYPE) -> str:
    """The request's media type without parameters (``application/json``); a request
    without Content-Type is taken as ``default`` (JSON, as kube-apiserver does)."""
    raw = request.headers.get("Content-Type", "")
    return raw.split(";", 1)[0].strip().lower() or default


def body_media_type(request: web.Request) -> str:
    """The media type a request body is decoded as, after Go's ``mime.ParseMediaType``
    as kube's input negotiation parses it: malformed parameters (``application/json;;``)
    make the whole header unrecognized (returned as it is, so it matches nothing)."""
    raw = request.headers.get("Content-Type", "")
    _, _, params = raw.partition(";")
    if params and not _media_params_ok(params):
        return raw
    return media_type_of(request)


def _media_params_ok(params: str) -> bool:
    """``key=value`` pairs separated by ``;`` (a single trailing ``;`` allowed)."""
    parts = params.split(";")
    if parts[-1].strip() == "" and len(parts) > 1:
        parts = parts[:-1]
    for part in parts:
        key, eq, value = part.strip().partition("=")
        if not key or not eq or not value or not key.replace("-", "").replace(".", "").isalnum():
            return False
    return True


def check_body_type(media_type: str) -> None:
    """415 for a body media type no decoder takes (before the body is read); protobuf is
    checked against the kind once the body is decoded (``decode_object``)."""
    if media_type not in BODY_TYPES and media_type != PROTOBUF_TYPE:
        raise unsupported_body_type(media_type, (*BODY_TYPES, PROTOBUF_TYPE))


def body_types(resource: ResourceInfo) -> tuple[str, ...]:
    """The request body media types ``resource`` accepts (protobuf where the schema has
    its kind, as upstream: custom resources take JSON and YAML only)."""
    return (*BODY_TYPES, PROTOBUF_TYPE) if protobuf.supports(resource) else BODY_TYPES


def unsupported_body_type(media_type: str, accepted: Sequence[str]) -> apierrors.StatusError:
    """415 naming the accepted media types."""
    return apierrors.unsupported_media_type(media_type, accepted)


def response_format(
    request: web.Request,
    *,
    is_list: bool = False,
    resource: ResourceInfo | None = None,
    watch: bool = False,
    table: bool = True,
) -> AcceptedFormat:
    """The response format for ``request``'s Accept header: the object (JSON/YAML, and
    protobuf for a ``resource`` the protobuf schema has), a ``meta.k8s.io`` Table
    (unless ``table`` is False: a resource without a Table convertor), or
    PartialObjectMetadata[List]; 406 if none fits."""
    pb = resource is not None and protobuf.supports(resource)
    accept = request.headers.get("Accept")
    try:
        return parse_accept(accept, is_list=is_list, protobuf=pb, watch=watch, table=table)
    except NotAcceptableError:
        raise apierrors.not_acceptable(
            (*RESPONSE_TYPES, PROTOBUF_TYPE) if pb else RESPONSE_TYPES
        ) from None


def prefers_protobuf(request: web.Request) -> bool:
    try:
        fmt = parse_accept(request.headers.get("Accept"), protobuf=True)
    except NotAcceptableError:
        return False
    return fmt.format == "protobuf"
