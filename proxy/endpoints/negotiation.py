"""Content negotiation, in one place: request bodies in, response bodies out.

Request bodies: ``application/json`` and ``application/yaml`` (patch media types are
dispatched in ``proxy.patch.patcher``), at most 3 MiB (413 above). Decoding errors and a
kind/apiVersion that does not fit the endpoint become 400 BadRequest with
kube-apiserver's wording.

Responses: the Accept header (``proxy.endpoints.media_types``) picks the object as JSON
(orjson; stored bytes are sent as they are), YAML or protobuf, a ``meta.k8s.io`` Table
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
from proxy.endpoints import encoders, protobuf
from proxy.endpoints.media_types import AcceptedFormat, NotAcceptableError, parse_accept
from proxy.endpoints.scheme import check_kind
from proxy.printers import table
from proxy.registry.resources import ResourceInfo
from proxy.request.audit_context import REQUEST_BODY
from storage.interfaces import JSONObject, StoredObject

__all__ = [
    "JSON_TYPE",
    "MAX_REQUEST_BODY_BYTES",
    "PROTOBUF_TYPE",
    "YAML_TYPE",
    "body_media_type",
    "body_types",
    "check_body_type",
    "check_kind",
    "decode_kind",
    "decode_object",
    "decode_structured",
    "discovery_response",
    "dump_json",
    "json_response",
    "list_encoder",
    "media_type_of",
    "preferred_response",
    "read_body",
    "response_format",
    "status_response",
    "unsupported_body_type",
]


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
    body = b"".join(chunks)
    request[REQUEST_BODY] = body  # the audit's requestObject
    return body


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


class _SelfContaining(ValueError):
    """A YAML node that contains itself (an anchor used inside its own value)."""


def _expanded_size(value: Any) -> int:
    """How many nodes ``value`` has with shared (aliased) subtrees counted each time
    they appear; each distinct container is walked once, without recursion. ValueError
    for a container that contains itself (an anchor used inside its own value), which
    Go's yaml decoder refuses too."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(value, False)]
    on_path: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        children = list(node.values() if isinstance(node, dict) else node)
        if children_done:
            on_path.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes.get(id(c), 1) for c in children)
            continue
        if id(node) in sizes:
            continue
        if id(node) in on_path:
            raise _SelfContaining
        on_path.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes.get(id(value), 1)


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
        return _decode_yaml(body)
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"json parse error: {e}") from None


def _decode_yaml(body: bytes) -> Any:
    """YAML to Python values; ValueError worded as Go's yaml decoder words it
    (``yaml: line 1: ...``, ``yaml: anchor 'a' value contains itself``)."""
    try:
        value = yaml.safe_load(body)
    except yaml.MarkedYAMLError as e:
        where = f"line {e.problem_mark.line + 1}: " if e.problem_mark is not None else ""
        raise ValueError(f"yaml: {where}{e.problem or e}") from None
    except yaml.YAMLError as e:
        raise ValueError(f"yaml: {e}") from None
    except RecursionError:
        raise ValueError("yaml: exceeded max depth") from None
    try:
        size = _expanded_size(value)
    except _SelfContaining:
        anchor = _self_containing_anchor(body)
        raise ValueError(f"yaml: anchor '{anchor}' value contains itself") from None
    if size > MAX_YAML_NODES:
        raise ValueError("yaml: document contains excessive aliasing")
    return value


def _self_containing_anchor(body: bytes) -> str:
    """The first anchor aliased inside its own value (the document parses: its events
    are walked again, keeping the anchors of the collections still open)."""
    open_anchors: list[str | None] = []
    for event in yaml.parse(body, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            open_anchors.append(event.anchor)
        elif isinstance(event, yaml.CollectionEndEvent):
            open_anchors.pop()
        elif isinstance(event, yaml.AliasEvent) and event.anchor in open_anchors:
            return str(event.anchor)
    return ""


def decode_object(
    body: bytes, media_type: str, resource: ResourceInfo, warnings: list[str] | None = None
) -> JSONObject:
    """Decode a create/update body for ``resource``.

    415 for a media type other than JSON/YAML/protobuf (protobuf only for kinds the
    protobuf schema knows); 400 for a malformed body, a non-object, or a kind/apiVersion
    that does not fit the endpoint. A missing kind or apiVersion is filled in from the
    endpoint (the decoder's default GVK). Protobuf fields the schema does not know are
    reported in ``warnings``.
    """
    if media_type == PROTOBUF_TYPE:
        obj = protobuf.decode_body(body, resource, BODY_TYPES, warnings, _summarize)
        check_kind(obj, resource)
        return obj
    if media_type not in BODY_TYPES:
        raise unsupported_body_type(media_type, body_types(resource))
    try:
        obj = decode_structured(body, media_type)
    except ValueError as e:
        # JSON fails where the decoder looks for version/kind; YAML before, converting
        stage = "" if media_type == YAML_TYPE else "couldn't get version/kind; "
        raise apierrors.bad_request(
            f"the object provided is unrecognized (must be of type {resource.kind}): "
            f"{stage}{e} ({_summarize(body)})"
        ) from None
    if obj is None:  # a null (or, in YAML, empty) document decodes into the empty object
        obj = {}
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


def _check_metadata(obj: JSONObject, resource: ResourceInfo) -> None:
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


def decode_kind(body: bytes, media_type: str, api_version: str, kind: str) -> JSONObject:
    """Decode the body of an endpoint that takes one ``kind`` but is no resource of the
    registry (``serviceaccounts/<name>/token``'s TokenRequest): JSON, YAML or protobuf;
    400/415 as ``decode_object``. A missing kind or apiVersion is defaulted."""
    if media_type == PROTOBUF_TYPE:
        group = api_version.rpartition("/")[0]
        target = (group, api_version, kind)
        accepted = (*BODY_TYPES, PROTOBUF_TYPE)
        obj = protobuf.decode_kind_body(body, target, accepted, None, _summarize)
    elif media_type not in BODY_TYPES:
        raise unsupported_body_type(media_type, (*BODY_TYPES, PROTOBUF_TYPE))
    else:
        try:
            obj = decode_structured(body, media_type) if body else {}
        except ValueError as e:
            raise apierrors.bad_request(str(e)) from None
        if not isinstance(obj, dict):
            raise apierrors.bad_request(f"the body of a {kind} must be an object")
    obj.setdefault("apiVersion", api_version)
    obj.setdefault("kind", kind)
    return obj


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
    table: bool = True,
) -> AcceptedFormat:
    """The response format for ``request``'s Accept header: the object (JSON/YAML, and
    protobuf for a ``resource`` the protobuf schema has), a ``meta.k8s.io`` Table
    (unless ``table`` is False: a resource without a Table convertor), or
    PartialObjectMetadata[List]; 406 if none fits."""
    pb = resource is not None and protobuf.supports(resource)
    accept = request.headers.get("Accept")
    try:
        return parse_accept(accept, is_list=is_list, protobuf=pb, table=table)
    except NotAcceptableError:
        raise apierrors.not_acceptable(
            (*RESPONSE_TYPES, PROTOBUF_TYPE) if pb else RESPONSE_TYPES
        ) from None


def _prefers_protobuf(request: web.Request) -> bool:
    try:
        fmt = parse_accept(request.headers.get("Accept"), protobuf=True)
    except NotAcceptableError:
        return False
    return fmt.format == "protobuf"


def status_response(request: web.Request, err: apierrors.StatusError) -> web.Response:
    """A Status error, as protobuf when the client prefers it (as upstream's negotiated
    error writer), else JSON."""
    media_type = PROTOBUF_TYPE if _prefers_protobuf(request) else JSON_TYPE
    return json_response(err.body, err.code, headers=err.headers, media_type=media_type)


def preferred_response(request: web.Request, obj: JSONObject, code: int = 200) -> web.Response:
    """An object made here (a review's answer), as protobuf when the client prefers it
    and the schema has its kind, else JSON."""
    media_type = PROTOBUF_TYPE if _prefers_protobuf(request) else JSON_TYPE
    return json_response(obj, code, media_type=media_type)


def discovery_response(request: web.Request, document: JSONObject) -> web.Response:
    """A discovery document (APIVersions, APIGroupList, APIGroup, APIResourceList), as
    protobuf when the client prefers it (as upstream), else JSON."""
    if not _prefers_protobuf(request):
        return json_response(document)
    # the legacy /api/v1 list has no apiVersion in JSON; its protobuf envelope does
    return json_response({"apiVersion": "v1", **document}, media_type=PROTOBUF_TYPE)


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
    fmt: AcceptedFormat, resource: ResourceInfo, obj: JSONObject, request: web.Request
) -> JSONObject:
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
    stored: StoredObject | None = None,
) -> web.Response:
    """The response for one stored object (its bytes as they are, for JSON), with one
    ``Warning`` header per entry of ``warnings``; ``stored``, the version ``data`` is
    the JSON of, lets protobuf start from the value it was read from."""
    fmt = fmt or response_format(request, resource=resource)
    if fmt.format == "json":
        response = raw_json_response(data, code)
    elif fmt.format == "protobuf":
        # b"": members protobuf would drop
        encoded = protobuf.stored_bytes(stored) if stored else protobuf.object_bytes(data)
        response = (
            web.Response(body=encoded, status=code, content_type=PROTOBUF_TYPE)
            if encoded
            else raw_json_response(data, code)
        )
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
    fmt: AcceptedFormat, resource: ResourceInfo, metadata: JSONObject, request: web.Request
) -> encoders.ListEncoder | encoders.ProtobufListEncoder:
    """How a list of ``resource`` is encoded in ``fmt`` (one encoder per format): the
    resource's List as JSON, YAML or protobuf, a Table, or a PartialObjectMetadataList
    (JSON, YAML or protobuf). Raises 400 BadRequest for bad Table options, before
    anything is written."""
    yaml_media = fmt.media_type == YAML_TYPE
    if fmt.format == "table":
        convertor = _table_convertor(fmt, resource, request)
        return encoders.table_list(convertor, table.list_meta_of(metadata), yaml_media)
    if fmt.format == "partial-list" and fmt.media_type == PROTOBUF_TYPE:
        return encoders.partial_object_metadata_protobuf_list(metadata, fmt.version)
    if fmt.format == "partial-list":
        return encoders.partial_object_metadata_list(metadata, fmt.version, yaml_media)
    if fmt.format == "yaml":
        return encoders.yaml_list(resource.list_kind, resource.api_version, metadata)
    if fmt.format == "protobuf":
        return encoders.protobuf_list(resource.list_kind, resource.api_version, metadata)
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
        if fmt.media_type == PROTOBUF_TYPE:
            return _protobuf_event_object(fmt, event_type, data)
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


def _protobuf_event_object(fmt: AcceptedFormat, event_type: str, data: bytes) -> bytes:
    """The enveloped object of one protobuf watch event (ERROR: a Status; a version
    with members protobuf cannot carry is sent without them, logged)."""
    if fmt.format == "protobuf" or event_type in ("ERROR", "BOOKMARK"):
        encoded = protobuf.object_bytes(data)
        return encoded or protobuf.encode_lossy(orjson.loads(data))
    partial = table.as_partial_object_metadata(orjson.loads(data), fmt.version)
    return protobuf.encode_lossy(partial)


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
    encoded = protobuf.encode_object(obj) if media_type == PROTOBUF_TYPE else None
    if encoded is not None:
        body, content_type = encoded, None  # upstream names no as=/g=/v= for protobuf
    elif media_type == YAML_TYPE:
        body = encoders.dump_yaml(obj)
    else:
        body = orjson.dumps(obj)
        if media_type == PROTOBUF_TYPE:  # a kind or members protobuf cannot carry
            media_type, content_type = JSON_TYPE, None
    all_headers = dict(headers or {})
    all_headers["Content-Type"] = content_type or media_type
    return web.Response(body=body, status=code, headers=all_headers)


def raw_json_response(
    data: bytes, code: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """A response from already-encoded JSON (a StoredObject's bytes), not re-encoded."""
    return web.Response(body=data, status=code, content_type=JSON_TYPE, headers=headers)
