"""Content negotiation, in one place: request bodies in, response bodies out.

Request bodies: ``application/json`` and ``application/yaml`` (patch media types are
dispatched in ``proxy.patch.patcher``), at most 3 MiB (413 above). Decoding errors and a
kind/apiVersion that does not fit the endpoint become 400 BadRequest with
kube-apiserver's wording.

Responses: the Accept header (``proxy.endpoints.media_types``) picks the object as JSON
(orjson; stored bytes are sent as they are) or YAML, a ``meta.k8s.io`` Table
(``as=Table``, printed by ``proxy.printers``, as kubectl asks for every ``get``), or
PartialObjectMetadata[List]. Lists are encoded item by item by the format's encoder
(:func:`list_encoder`, ``proxy.endpoints.encoders``) and streamed in bounded steps.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import yaml
from aiohttp import web

from proxy import apierrors
from proxy.endpoints import encoders
from proxy.endpoints.media_types import AcceptedFormat, NotAcceptableError, parse_accept
from proxy.printers import table
from proxy.registry.resources import ResourceInfo

__all__ = [
    "JSON_TYPE",
    "MAX_REQUEST_BODY_BYTES",
    "PROTOBUF_TYPE",
    "YAML_TYPE",
    "decode_object",
    "decode_structured",
    "dump_json",
    "json_response",
    "list_encoder",
    "media_type_of",
    "read_body",
    "response_format",
    "unsupported_body_type",
]

JSON = dict[str, Any]

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's limit for a request body
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


async def read_body(request: web.Request, limit: int = MAX_REQUEST_BODY_BYTES) -> bytes:
    """The whole request body, or 413 RequestEntityTooLarge past ``limit`` bytes."""
    if request.content_length is not None and request.content_length > limit:
        raise apierrors.request_entity_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            raise apierrors.request_entity_too_large(limit)
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


# a YAML document's nodes once its aliases are expanded (a 3 MiB body of plain YAML has
# far fewer); more is an alias bomb, which Go's yaml decoder refuses too
MAX_YAML_NODES = 1_000_000


def _expanded_size(value: Any) -> int:
    """How many nodes ``value`` has with shared (aliased) subtrees counted each time
    they appear; each distinct container is walked once. Depth is bounded by the YAML
    parser's own recursion (a deeper document fails to load first)."""
    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        if not isinstance(node, (dict, list)):
            return 1
        known = sizes.get(id(node))
        if known is not None:
            return known
        children = node.values() if isinstance(node, dict) else node
        total = 1 + sum(size(child) for child in children)
        sizes[id(node)] = total
        return total

    return size(value)


# deepest nesting of a request body: orjson encodes at most 255 levels, and the Python
# validators recurse per level; real objects (CRDs included) stay far below
MAX_DEPTH = 200


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests dicts/lists more than ``limit`` deep (iterative walk;
    shared subtrees are visited once)."""
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (dict, list)) or id(node) in seen:
            continue
        if depth > limit:
            return True
        seen.add(id(node))
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children)
    return False


def decode_structured(body: bytes, media_type: str) -> Any:
    """Decode JSON or YAML to Python values; raises ValueError with the decoder message
    (also for a document nested deeper than ``MAX_DEPTH``)."""
    value = _decode_structured(body, media_type)
    if too_deep(value):
        raise ValueError(f"exceeded max depth of {MAX_DEPTH}")
    return value


def _decode_structured(body: bytes, media_type: str) -> Any:
    if media_type == YAML_TYPE:
        try:
            value = yaml.safe_load(body)
        except yaml.YAMLError as e:
            raise ValueError(f"error converting YAML to JSON: {e}") from None
        except RecursionError:
            raise ValueError("error converting YAML to JSON: yaml: exceeded max depth") from None
        if _expanded_size(value) > MAX_YAML_NODES:
            raise ValueError(
                "error converting YAML to JSON: yaml: document contains excessive aliasing"
            )
        return value
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
        raise unsupported_body_type(media_type, BODY_TYPES)
    try:
        obj = decode_structured(body, media_type)
    except ValueError as e:
        raise apierrors.bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"couldn't get version/kind; {e} ({_summarize(body)})"
        ) from None
    if not isinstance(obj, dict):
        raise apierrors.bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"couldn't get version/kind; json parse error: expected an object "
            f"({_summarize(body)})"
        )
    check_kind(obj, resource)
    _check_metadata(obj, resource)
    return obj


_GO_JSON_TYPES = {str: "string", int: "number", float: "number", bool: "bool", list: "array"}


def _check_metadata(obj: JSON, resource: ResourceInfo) -> None:
    """400 as Go's decoder when ``metadata`` is not an object (null is no metadata)."""
    meta = obj.get("metadata")
    if meta is None or isinstance(meta, dict):
        return
    go_type = _GO_JSON_TYPES.get(type(meta), "value")
    raise apierrors.bad_request(
        f'{resource.kind} in version "{resource.version}" cannot be handled as a '
        f"{resource.kind}: json: cannot unmarshal {go_type} into Go struct field "
        f"{resource.kind}.metadata of type v1.ObjectMeta"
    )


def unsupported_body_type(media_type: str, accepted: Sequence[str]) -> apierrors.StatusError:
    """415 naming the accepted media types; a protobuf body (``kubectl create namespace|
    configmap|secret|deployment`` send one) also says how to get the same object in."""
    err = apierrors.unsupported_media_type(media_type, accepted)
    if media_type == PROTOBUF_TYPE:
        err.body["message"] += (
            f"; {PROTOBUF_TYPE} request bodies are not supported by this server: send the "
            "object as JSON or YAML (for kubectl: a manifest with create -f or apply -f)"
        )
    return err


def check_kind(obj: JSON, resource: ResourceInfo) -> None:
    """kind/apiVersion must name the endpoint's; missing ones are defaulted."""
    api_version = obj.get("apiVersion") or resource.api_version
    kind = obj.get("kind") or resource.kind
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise apierrors.bad_request("Object 'Kind' is missing or invalid in request body")
    if kind != resource.kind:
        version = api_version.rsplit("/", 1)[-1]
        raise apierrors.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {resource.kind}: '
            f'no kind "{kind}" is served at this endpoint'
        )
    if api_version != resource.api_version:
        raise apierrors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({resource.api_version})"
        )
    obj["apiVersion"], obj["kind"] = api_version, kind


def response_format(request: web.Request, *, is_list: bool = False) -> AcceptedFormat:
    """The response format for ``request``'s Accept header: the object (JSON/YAML), a
    ``meta.k8s.io`` Table, or PartialObjectMetadata[List]; 406 if none fits."""
    try:
        return parse_accept(request.headers.get("Accept"), is_list=is_list)
    except NotAcceptableError:
        raise apierrors.not_acceptable(RESPONSE_TYPES) from None


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _table_convertor(
    fmt: AcceptedFormat, resource: ResourceInfo, request: web.Request
) -> table.TableConvertor:
    """The request's Table options (``includeObject``); 400 BadRequest if invalid."""
    try:
        return table.TableConvertor(
            resource,
            include_object=request.query.get("includeObject", "Metadata"),
            table_version=fmt.version,
            now=_now(),
        )
    except table.TableError as e:
        raise apierrors.bad_request(str(e)) from None


def converted_object(
    fmt: AcceptedFormat, resource: ResourceInfo, obj: JSON, request: web.Request
) -> JSON:
    """One object as a Table or PartialObjectMetadata (``fmt`` is neither json nor yaml)."""
    if fmt.format == "table":
        try:
            return table.to_table(
                resource,
                [obj],
                include_object=request.query.get("includeObject", "Metadata"),
                now=_now(),
                table_version=fmt.version,
            )
        except table.TableError as e:
            raise apierrors.bad_request(str(e)) from None
    return table.as_partial_object_metadata(obj, fmt.version)


def object_response(
    request: web.Request,
    resource: ResourceInfo,
    data: bytes,
    code: int = 200,
    fmt: AcceptedFormat | None = None,
    warnings: Sequence[str] = (),
) -> web.Response:
    """The response for one stored object (its bytes as they are, for JSON), with one
    ``Warning`` header per entry of ``warnings``."""
    fmt = fmt or response_format(request)
    if fmt.format == "json":
        response = raw_json_response(data, code)
    elif fmt.format in ("table", "partial"):
        obj = orjson.loads(data)
        response = json_response(
            converted_object(fmt, resource, obj, request),
            code,
            media_type=fmt.media_type,
            content_type=fmt.content_type,
        )
    else:
        response = json_response(orjson.loads(data), code, media_type=YAML_TYPE)
    for warning in warnings:
        response.headers.add("Warning", warning)
    return response


def list_encoder(
    fmt: AcceptedFormat, resource: ResourceInfo, metadata: JSON, request: web.Request
) -> encoders.ListEncoder:
    """How a list of ``resource`` is encoded in ``fmt`` (one encoder per format): the
    resource's List as JSON or YAML, a Table, or a PartialObjectMetadataList. Raises
    400 BadRequest for bad Table options, before anything is written."""
    if fmt.format == "table":
        convertor = _table_convertor(fmt, resource, request)
        return encoders.table_list(convertor, table.list_meta_of(metadata))
    if fmt.format == "partial-list":
        return encoders.partial_object_metadata_list(metadata, fmt.version)
    if fmt.format == "yaml":
        return encoders.yaml_list(resource.list_kind, resource.api_version, metadata)
    return encoders.json_list(resource.list_kind, resource.api_version, metadata)


WatchEncoder = Callable[[str, bytes], bytes]


def watch_encoder(
    fmt: AcceptedFormat, resource: ResourceInfo, request: web.Request
) -> WatchEncoder:
    """For one watch stream: ``encode(event_type, data)`` → the event's ``object`` in
    ``fmt`` (JSON bytes). Tables carry their column definitions on the first printed
    event only (kube's watchEmbeddedEncoder); ERROR and BOOKMARK pass through."""
    tables = table.TableWatchEncoder(
        resource,
        include_object=request.query.get("includeObject", "Metadata"),
        table_version=fmt.version,
    )

    def encode(event_type: str, data: bytes) -> bytes:
        if fmt.format == "json" or event_type in ("ERROR", "BOOKMARK"):
            return data
        obj = orjson.loads(data)
        if fmt.format != "table":
            return orjson.dumps(table.as_partial_object_metadata(obj, fmt.version))
        try:
            event = tables.encode(event_type, obj, _now())
        except table.TableError as e:
            raise apierrors.bad_request(str(e)) from None
        return orjson.dumps(event["object"])

    return encode


def dump_json(obj: Any) -> bytes:
    return orjson.dumps(obj)


def json_response(
    obj: Any,
    code: int = 200,
    headers: dict[str, str] | None = None,
    media_type: str = JSON_TYPE,
    content_type: str | None = None,
) -> web.Response:
    """One encoded response (objects, Status, discovery). Lists stream elsewhere.
    ``content_type`` overrides the header (``application/json;as=Table;...``)."""
    body = encoders.dump_yaml(obj) if media_type == YAML_TYPE else orjson.dumps(obj)
    all_headers = dict(headers or {})
    all_headers["Content-Type"] = content_type or media_type
    return web.Response(body=body, status=code, headers=all_headers)


def raw_json_response(
    data: bytes, code: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """A response from already-encoded JSON (a StoredObject's bytes), not re-encoded."""
    return web.Response(body=data, status=code, content_type=JSON_TYPE, headers=headers)
