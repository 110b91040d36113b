"""Content negotiation, in one place: request bodies in, response bodies out.

Request bodies: ``application/json`` and ``application/yaml`` (patch media types are
dispatched in ``proxy.patch``), at most 3 MiB (413 above). Decoding errors and a
kind/apiVersion that does not fit the endpoint become 400 BadRequest with
kube-apiserver's wording.

Responses: JSON via orjson, always; ``application/yaml`` when asked for by a client
that does not also accept JSON. A Table request (``as=Table``) falls back to JSON
until Table printing is wired in here (``response_format`` is the seam).
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from proxy import status
from proxy.registry import ResourceInfo

__all__ = [
    "JSON_TYPE",
    "MAX_REQUEST_BODY_BYTES",
    "YAML_TYPE",
    "decode_object",
    "decode_structured",
    "dump_json",
    "json_response",
    "media_type_of",
    "read_body",
    "response_format",
]

JSON = dict[str, Any]

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's limit for a request body
JSON_TYPE = "application/json"
YAML_TYPE = "application/yaml"
BODY_TYPES = (JSON_TYPE, YAML_TYPE)
RESPONSE_TYPES = (JSON_TYPE, YAML_TYPE)


def media_type_of(request: web.Request, default: str = JSON_TYPE) -> str:
    """The request's media type without parameters (``application/json``); a request
    without Content-Type is taken as ``default`` (JSON, as kube-apiserver does)."""
    raw = request.headers.get("Content-Type", "")
    return raw.split(";", 1)[0].strip().lower() or default


async def read_body(request: web.Request, limit: int = MAX_REQUEST_BODY_BYTES) -> bytes:
    """The whole request body, or 413 RequestEntityTooLarge past ``limit`` bytes."""
    if request.content_length is not None and request.content_length > limit:
        raise status.request_entity_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise status.request_entity_too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _summarize(data: bytes, max_length: int = 30) -> str:
    """apimachinery's summarizeData: a short, safe preview of a body."""
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        text = data.decode("utf-8", "replace")
        return text[:max_length] + " ..." if len(data) > max_length else text
    return data[:max_length].hex() + (" ..." if len(data) > max_length else "")


def decode_structured(body: bytes, media_type: str) -> Any:
    """Decode JSON or YAML to Python values; raises ValueError with the decoder message."""
    if media_type == YAML_TYPE:
        try:
            return yaml.safe_load(body)
        except yaml.YAMLError as e:
            raise ValueError(f"error converting YAML to JSON: {e}") from None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"json parse error: {e}") from None


def decode_object(body: bytes, media_type: str, resource: ResourceInfo) -> JSON:
    """Decode a create/update body for ``resource``.

    415 for a media type other than JSON/YAML; 400 for a malformed body, a non-object,
    or a kind/apiVersion that does not fit the endpoint. A missing kind or apiVersion
    is filled in from the endpoint (the decoder's default GVK).
    """
    if media_type not in BODY_TYPES:
        raise status.unsupported_media_type(media_type, BODY_TYPES)
    try:
        obj = decode_structured(body, media_type)
    except ValueError as e:
        raise status.bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"couldn't get version/kind; {e} ({_summarize(body)})"
        ) from None
    if not isinstance(obj, dict):
        raise status.bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"couldn't get version/kind; json parse error: expected an object "
            f"({_summarize(body)})"
        )
    check_kind(obj, resource)
    return obj


def check_kind(obj: JSON, resource: ResourceInfo) -> None:
    """kind/apiVersion must name the endpoint's; missing ones are defaulted."""
    api_version = obj.get("apiVersion") or resource.api_version
    kind = obj.get("kind") or resource.kind
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise status.bad_request("Object 'Kind' is missing or invalid in request body")
    if kind != resource.kind:
        version = api_version.rsplit("/", 1)[-1]
        raise status.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {resource.kind}: '
            f'no kind "{kind}" is served at this endpoint'
        )
    if api_version != resource.api_version:
        raise status.bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({resource.api_version})"
        )
    obj["apiVersion"], obj["kind"] = api_version, kind


def response_format(request: web.Request) -> str:
    """The response media type for ``request``'s Accept header (406 if none fits)."""
    accept = request.headers.get("Accept", "")
    if not accept.strip():
        return JSON_TYPE
    offered = [part.split(";", 1)[0].strip().lower() for part in accept.split(",")]
    for media in offered:
        if media in (JSON_TYPE, "*/*", "application/*", "application/json-seq"):
            return JSON_TYPE
        if media == YAML_TYPE:
            return YAML_TYPE
    raise status.not_acceptable(RESPONSE_TYPES)


def dump_json(obj: Any) -> bytes:
    return orjson.dumps(obj)


def json_response(
    obj: Any,
    code: int = 200,
    headers: dict[str, str] | None = None,
    media_type: str = JSON_TYPE,
) -> web.Response:
    """One encoded response (objects, Status, discovery). Lists stream elsewhere."""
    if media_type == YAML_TYPE:
        body = yaml.safe_dump(obj, sort_keys=False).encode()
    else:
        body = orjson.dumps(obj)
    return web.Response(body=body, status=code, content_type=media_type, headers=headers)


def raw_json_response(
    data: bytes,
    code: int = 200,
    headers: dict[str, str] | None = None,
    media_type: str = JSON_TYPE,
) -> web.Response:
    """A response from already-encoded JSON (a StoredObject's bytes), not re-encoded."""
    if media_type == YAML_TYPE:
        return json_response(orjson.loads(data), code, headers, media_type)
    return web.Response(body=data, status=code, content_type=JSON_TYPE, headers=headers)
