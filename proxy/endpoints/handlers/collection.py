"""Collection verbs: LIST (streamed), WATCH (chunked events), DELETECOLLECTION.

A LIST response is written as it is assembled, never built whole: the list header,
then the items' stored JSON bytes (already final, resourceVersion set) joined by
commas in chunks of about 256 KiB, then ``]}``. Peak memory is the storage result plus
one chunk, not a second copy of the whole list. Tables, PartialObjectMetadataLists and
YAML are converted item by item in the same chunks (``proxy.endpoints.encoders``); each
chunk is at most a few milliseconds of work, and the handler yields to the event loop
after each one, so a 50 MB conversion never stalls other requests.

A WATCH response is HTTP 200 with chunked encoding; each event is one line
``{"type":"ADDED","object":<stored bytes>}`` written and flushed on its own. The stream
ends cleanly (no ERROR event) at the watch's timeout, when the storage closes the
watch, or at server shutdown; a client that goes away cancels the handler, which stops
the storage watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from proxy import apierrors
from proxy.endpoints import encoders, metrics, negotiation
from proxy.endpoints.handlers.delete_options import parse_delete_options
from proxy.endpoints.handlers.list_options import (
    parse_list_query,
    to_list_options,
    validate_list_query,
    watch_timeout,
)
from proxy.endpoints.request_info import RequestInfo
from proxy.registry.dry_run import DryRunStore
from proxy.registry.storage_factory import ResourceStorage
from proxy.server.context import APIContext
from storage.interfaces import Interface, ListOptions, ListResult, Preconditions, StoredObject

__all__ = ["delete_collection", "list_objects", "watch_objects", "write_list"]

log = logging.getLogger("watchcache.proxy")

# request key of a LIST response whose headers are out: an error can no longer be a Status
STREAMING = "watchcache_streaming_response"


def _namespace(info: RequestInfo, rs: ResourceStorage) -> str:
    return info.namespace if rs.resource.namespaced else ""


def list_metadata(result: ListResult) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining_item_count is not None:
        meta["remainingItemCount"] = result.remaining_item_count
    return meta


def cost_headers(result: ListResult) -> dict[str, str]:
    """The per-request cost of a LIST: where it was served from, and how many objects
    storage fetched versus how many the response carries (a full scan shows here)."""
    return {
        "X-Watchcache-Served-From": result.served_from,
        "X-Watchcache-Objects-Fetched": str(result.fetched),
        "X-Watchcache-Objects-Returned": str(len(result.items)),
    }


async def write_list(
    request: web.Request,
    rs: ResourceStorage,
    items: Sequence[StoredObject],
    metadata: dict[str, Any],
    headers: dict[str, str],
) -> web.StreamResponse:
    """Stream ``items`` as the resource's List, a Table, a PartialObjectMetadataList or
    YAML, as negotiated (see the module docstring). Bad Table options are a 400 before
    anything is written."""
    fmt = negotiation.response_format(request, is_list=True)
    encoder = negotiation.list_encoder(fmt, rs.resource, metadata, request)
    response = web.StreamResponse(status=200, headers=headers)
    response.headers["Content-Type"] = fmt.content_type
    response.enable_chunked_encoding()
    await response.prepare(request)
    request[STREAMING] = response
    for chunk in encoders.list_chunks(encoder, (item.data for item in items)):
        await response.write(chunk)
        await asyncio.sleep(0)  # a bounded step is done: let other requests run
    await response.write_eof()
    return response


def _list_options(request: web.Request, info: RequestInfo, rs: ResourceStorage) -> ListOptions:
    query = parse_list_query(request.query, watch=info.verb == "watch")
    validate_list_query(query)
    return to_list_options(query, rs.resource.plural, rs.get_attrs, info.name)


async def list_objects(
    request: web.Request, ctx: APIContext, info: RequestInfo, rs: ResourceStorage
) -> web.StreamResponse:
    negotiation.response_format(request, is_list=True)  # 406 before any storage work
    opts = _list_options(request, info, rs)
    with apierrors.storage_errors(rs.resource.qualified):
        result = await rs.store.get_list(rs.list_key(_namespace(info, rs)), opts)
    metrics.observe_list(request, info, result)
    return await write_list(request, rs, result.items, list_metadata(result), cost_headers(result))


def _event_line(event_type: str, data: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + data + b"}\n"


async def watch_objects(
    request: web.Request, ctx: APIContext, info: RequestInfo, rs: ResourceStorage
) -> web.StreamResponse:
    fmt = negotiation.response_format(request, is_list=True)
    query = parse_list_query(request.query, watch=True)
    validate_list_query(query)
    duration = watch_timeout(query, ctx.settings.min_request_timeout)
    opts = dataclasses.replace(
        to_list_options(query, rs.resource.plural, rs.get_attrs, info.name),
        timeout_seconds=duration,
        # the kind of a streaming list's k8s.io/initial-events-end BOOKMARK
        bookmark_kind=(rs.resource.api_version, rs.resource.kind),
    )
    with apierrors.storage_errors(rs.resource.qualified):
        watcher = await rs.store.watch(rs.list_key(_namespace(info, rs)), opts)
    ctx.watchers.add(watcher)
    encode = negotiation.watch_encoder(fmt, rs.resource, request)
    try:
        response = web.StreamResponse(status=200)
        response.headers["Content-Type"] = fmt.content_type
        response.enable_chunked_encoding()
        await response.prepare(request)
        with (
            metrics.track_long_running(info),
            contextlib.suppress(TimeoutError, ConnectionResetError),
        ):
            async with asyncio.timeout(duration):
                async for event in watcher:
                    data = encode(event.type, event.data)
                    await response.write(_event_line(event.type, data))
                    metrics.observe_watch_event(info)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response
    finally:
        ctx.watchers.discard(watcher)
        await watcher.stop()


async def delete_collection(
    request: web.Request, ctx: APIContext, info: RequestInfo, rs: ResourceStorage
) -> web.StreamResponse:
    """Delete every object the selectors match (read from etcd, newest); the response is
    the List of deleted objects, each with its deletion revision."""
    negotiation.response_format(request, is_list=True)
    body = await negotiation.read_body(request, ctx.settings.max_request_body_bytes)
    delete_opts = parse_delete_options(request.query, body, negotiation.media_type_of(request))
    writer: Interface | DryRunStore = DryRunStore(rs.store) if delete_opts.dry_run else rs.store
    query = parse_list_query(request.query)
    validate_list_query(query)
    opts = to_list_options(query, rs.resource.plural, rs.get_attrs)
    with apierrors.storage_errors(rs.resource.qualified):
        result = await rs.store.get_list(rs.list_key(_namespace(info, rs)), opts)
    deleted: list[StoredObject] = []
    last_rv = result.resource_version
    for item in result.items:
        meta = item.obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        try:
            with apierrors.storage_errors(rs.resource.qualified, name):
                gone = await writer.delete(item.key, Preconditions(uid=meta.get("uid")))
        except apierrors.StatusError as e:
            if e.code in (404, 409):  # deleted or replaced meanwhile: not ours to delete
                continue
            raise
        deleted.append(gone)
        last_rv = max(last_rv, gone.resource_version)
    return await write_list(
        request, rs, deleted, {"resourceVersion": str(last_rv)}, cost_headers(result)
    )
