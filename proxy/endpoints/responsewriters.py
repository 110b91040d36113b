"""Writing responses (upstream's ``endpoints/handlers/responsewriters``): an object,
a Status, a review's answer or a discovery document in the format the request's
``Accept`` negotiated (``proxy.endpoints.negotiation``): JSON (orjson; stored bytes are
sent as they are), YAML or protobuf, a ``meta.k8s.io`` Table (``as=Table``, printed by
``proxy.printers``, as kubectl asks for every ``get``), or PartialObjectMetadata[List].
Lists are encoded item by item by the format's encoder (:func:`list_encoder`,
``proxy.endpoints.encoders``) and streamed in bounded steps; watch events by
:func:`watch_encoder`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from aiohttp import web

from proxy import apierrors
from proxy.endpoints import encoders, protobuf, watchlist
from proxy.endpoints.media_types import AcceptedFormat
from proxy.endpoints.negotiation import (
    JSON_TYPE,
    PROTOBUF_TYPE,
    YAML_TYPE,
    prefers_protobuf,
    response_format,
)
from proxy.printers import table
from proxy.printers.columns import TablePrinter
from proxy.registry.resources import ResourceInfo
from proxy.request.utf8 import valid_utf8
from storage.interfaces import JSONObject, StoredObject

__all__ = [
    "WatchEncoder",
    "converted_object",
    "discovery_response",
    "dump_json",
    "encoded_ahead",
    "json_response",
    "list_encoder",
    "object_response",
    "preferred_response",
    "raw_json_response",
    "status_response",
    "watch_encoder",
]


def status_response(request: web.Request, err: apierrors.StatusError) -> web.Response:
    """A Status error, as protobuf when the client prefers it (as upstream's negotiated
    error writer), else JSON."""
    media_type = PROTOBUF_TYPE if prefers_protobuf(request) else JSON_TYPE
    return json_response(err.body, err.code, headers=err.headers, media_type=media_type)


def preferred_response(request: web.Request, obj: JSONObject, code: int = 200) -> web.Response:
    """An object made here (a review's answer), as protobuf when the client prefers it
    and the schema has its kind, else JSON."""
    media_type = PROTOBUF_TYPE if prefers_protobuf(request) else JSON_TYPE
    return json_response(obj, code, media_type=media_type)


def discovery_response(request: web.Request, document: JSONObject) -> web.Response:
    """A discovery document (APIVersions, APIGroupList, APIGroup, APIResourceList), as
    protobuf when the client prefers it (as upstream), else JSON."""
    if not prefers_protobuf(request):
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
            printer=_printer(resource),
        )
    except table.TableError as e:
        raise apierrors.bad_request(str(e)) from None


def _printer(resource: ResourceInfo) -> TablePrinter | None:
    """A custom kind's columns (its served version's); None: the built-in table's."""
    return resource.kind_schema.printer if resource.kind_schema is not None else None


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
                printer=_printer(resource),
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


def encoded_ahead(
    fmt: AcceptedFormat, resource: ResourceInfo, request: web.Request
) -> encoders.EncodedAhead | None:
    """For a LIST asked as a JSON Table: its rows, printed as storage reads the list
    (``encoders.EncodedAhead``); None for any other format, and for bad Table options
    (their 400 comes from ``list_encoder`` once the list is read, as before)."""
    if fmt.format != "table" or fmt.media_type != JSON_TYPE:
        return None
    try:
        convertor = _table_convertor(fmt, resource, request)
    except apierrors.StatusError:
        return None
    return encoders.EncodedAhead(convertor.row_json)


WatchEncoder = Callable[[str, bytes], bytes]


def watch_encoder(
    fmt: AcceptedFormat, resource: ResourceInfo, request: web.Request, *, watch_list: bool = False
) -> WatchEncoder:
    """For one watch stream: ``encode(event_type, data)`` → the event's ``object`` in
    ``fmt`` (JSON bytes). Tables carry their column definitions on the first printed
    event only (kube's watchEmbeddedEncoder); ERROR passes through, and so does a
    BOOKMARK except as PartialObjectMetadata (upstream transforms every event's object).
    ``watch_list``: the request is a WatchList, so its initial-events-end BOOKMARK
    carries the list blueprint (``proxy.endpoints.watchlist``)."""
    tables = table.TableWatchEncoder(
        resource,
        include_object=request.query.get("includeObject", "Metadata"),
        table_version=fmt.version,
        printer=_printer(resource),
    )
    partial = fmt.format in ("partial", "partial-list")
    list_blueprint = watchlist.blueprint(fmt, resource) if watch_list else None

    def encode(event_type: str, data: bytes) -> bytes:
        if list_blueprint is not None and event_type == "BOOKMARK":
            data = watchlist.with_blueprint(data, list_blueprint)
        if fmt.media_type == PROTOBUF_TYPE:
            return _protobuf_event_object(fmt, event_type, data)
        if event_type == "ERROR" or fmt.format in ("json", "yaml"):
            return data
        if partial:
            return orjson.dumps(table.as_partial_object_metadata(orjson.loads(data), fmt.version))
        if event_type == "BOOKMARK":
            return data
        try:
            event = tables.encode(event_type, orjson.loads(data), _now())
        except table.TableError as e:
            raise apierrors.bad_request(str(e)) from None
        return orjson.dumps(event["object"])

    return encode


def _protobuf_event_object(fmt: AcceptedFormat, event_type: str, data: bytes) -> bytes:
    """The enveloped object of one protobuf watch event (ERROR: a Status; a version
    with members protobuf cannot carry is sent without them, logged)."""
    if fmt.format == "protobuf" or event_type == "ERROR":
        encoded = protobuf.object_bytes(data)
        return encoded or protobuf.encode_lossy(orjson.loads(data))
    partial = table.as_partial_object_metadata(orjson.loads(data), fmt.version)
    return protobuf.encode_lossy(partial)


def dump_json(obj: Any) -> bytes:
    return _dumps(obj)


def _dumps(obj: Any) -> bytes:
    """JSON; a string from the request that is not UTF-8 (a header byte kept as a lone
    surrogate, in a Status message) is written with U+FFFD, as Go's encoder does."""
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return orjson.dumps(valid_utf8(obj))


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
        body = _dumps(obj)
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
