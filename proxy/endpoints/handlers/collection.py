"""Collection verbs: LIST (streamed), WATCH (chunked events), DELETECOLLECTION.

A LIST response is written as it is assembled, never built whole: the list header,
then the items' stored JSON bytes (already final, resourceVersion set) joined by
commas in chunks of about 256 KiB, then ``]}``. Peak memory is the storage result plus
one chunk, not a second copy of the whole list. Tables, PartialObjectMetadataLists and
YAML are converted item by item in the same chunks (``proxy.endpoints.encoders``; a
JSON Table read from etcd has its rows printed page by page while etcd reads the next
page, ``encoders.EncodedAhead``, and is joined from them); each
chunk is at most a few milliseconds of work, and the handler yields to the event loop
after each one, so a 50 MB conversion never stalls other requests. As protobuf: each
item's message is made first (at most once per version, ``protobuf.stored_bytes``), in
the same bounded steps, then the List's envelope and ListMeta and the items' bytes.

A WATCH response is HTTP 200 with chunked encoding; each event is one line
``{"type":"ADDED","object":<stored bytes>}`` written and flushed on its own (as protobuf:
one length-prefixed ``WatchEvent`` frame). The stream
ends cleanly (no ERROR event) at the watch's timeout, when the storage closes the
watch, or at server shutdown; a client that goes away cancels the handler, which stops
the storage watch. A watch is long-running: --request-timeout never cuts it. Once its
headers are out nothing else is written: a storage error while it runs becomes one
ERROR event carrying its Status, then the end (as upstream's watchers report errors);
an event that cannot be encoded ends the stream (upstream's ``WatchServer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

import orjson
from aiohttp import web

from proxy import apierrors
from proxy.endpoints import (
    compression,
    decoding,
    encoders,
    metrics,
    negotiation,
    protobuf,
    responsewriters,
    yaml_worker,
)
from proxy.endpoints.context import APIContext
from proxy.endpoints.handlers.delete_options import parse_delete_options
from proxy.endpoints.large_lists import expected_bytes, large_list_slot
from proxy.registry.storage_factory import ResourceStorage
from proxy.registry.store import Store, interpret_storage_error
from proxy.request.audit_context import RESPONSE_CHUNKS
from proxy.request.list_options import (
    parse_list_query,
    to_list_options,
    validate_list_query,
    watch_timeout,
)
from proxy.request.request_info import RequestInfo
from storage import errors as serr
from storage.interfaces import ListOptions, ListResult, StoredObject
from storage.steps import Steps

__all__ = ["delete_collection", "list_objects", "watch_objects", "write_list"]

log = logging.getLogger("watchcache.proxy")


def _namespace(info: RequestInfo, store: Store) -> str:
    return info.namespace if store.resource.namespaced else ""


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
    ahead: encoders.EncodedAhead | None = None,
) -> web.StreamResponse:
    """Stream ``items`` as the resource's List (JSON, YAML or protobuf), a Table or a
    PartialObjectMetadataList, as negotiated (see the module docstring); ``ahead``: the
    items' pieces, if encoded while storage read them. Bad Table
    options are a 400 before anything is written. The response is started by
    ``prepare`` (``responsewriter`` records it): an error after that ends the
    connection, it never becomes a Status."""
    fmt = negotiation.response_format(request, is_list=True, resource=rs.resource)
    encoder = responsewriters.list_encoder(fmt, rs.resource, metadata, request)
    pieces = ahead.pieces_for(items) if ahead is not None else None
    if pieces is not None and isinstance(encoder, encoders.ListEncoder):
        chunks = encoders.joined_chunks(encoder, pieces)
        return await _stream(request, headers, fmt.content_type, chunks)
    if isinstance(encoder, encoders.ListEncoder) and compression.accepts_gzip(request):
        kept = compressed_list(encoder, items)  # each version compressed at most once
        if kept is not None:
            return await _stream(request, headers, fmt.content_type, kept, compressed=True)
    if isinstance(encoder, encoders.ProtobufListEncoder):
        encoded: list[bytes] = []
        for _ in encoders.encode_items(encoder.item, items, encoded):
            await asyncio.sleep(0)  # a bounded step is done: let other requests run
        if len(encoded) == len(items) and all(encoded):
            body = encoders.protobuf_body(encoder, encoded)
            return await _stream(request, headers, protobuf.MEDIA_TYPE, body, length=body.size)
        # members protobuf cannot carry: the list goes as JSON, as one object would
        fallback = encoders.list_chunks(encoder.fallback, items)
        return await _stream(request, headers, negotiation.JSON_TYPE, fallback)
    if encoder.json_item is not None and len(items) >= yaml_worker.MIN_ITEMS:
        # a large YAML list: its items are written by a child process, off the loop
        yaml_chunks = yaml_worker.list_chunks(encoder, items)
        return await _stream(request, headers, fmt.content_type, yaml_chunks)
    chunks = encoders.list_chunks(encoder, items)
    return await _stream(request, headers, fmt.content_type, chunks)


def compressed_list(
    encoder: encoders.ListEncoder, items: Sequence[StoredObject]
) -> Iterator[bytes] | None:
    """The gzip body of a list that joins stored bytes and is over the threshold, from
    each version's kept segment (``compression.gzip_joined_list``); None otherwise."""
    if not encoder.joins_stored or not items:
        return None
    size = len(encoder.head) + len(encoder.tail) + sum(len(i.data) + 1 for i in items)
    if size <= compression.GZIP_THRESHOLD:
        return None
    return compression.gzip_joined_list(
        encoder.head, items, encoder.separator, encoder.tail,
        chunk_bytes=encoders.CHUNK_BYTES // 4, step_seconds=encoders.STEP_SECONDS,
    )  # fmt: skip


async def _stream(
    request: web.Request,
    headers: dict[str, str],
    content_type: str,
    chunks: Iterable[bytes] | AsyncIterator[bytes],
    compressed: bool = False,
    length: int | None = None,
) -> web.StreamResponse:
    """A response of ``chunks``, each written as it is produced; the handler yields to
    the loop after each one (producing one is a bounded step). Gzip when the client
    accepts it and the body is over the threshold (``compressed``: ``chunks`` already
    are); otherwise of Content-Length ``length`` when known (a protobuf List), chunked
    when not."""
    body = chunks if isinstance(chunks, AsyncIterator) else _steps(chunks)
    if not compressed and compression.accepts_gzip(request):
        compressed, body = await compression.compress_if_large(body)
    response = web.StreamResponse(status=200, headers=headers)
    response.headers["Content-Type"] = content_type
    if compressed:
        compression.mark_compressed(response)
    if length is None or compressed:
        response.enable_chunked_encoding()
    else:
        response.content_length = length
    await response.prepare(request)
    audited = request.get(RESPONSE_CHUNKS)  # the audit's responseObject (RequestResponse)
    async for chunk in body:
        if audited is not None:
            audited.append(chunk)
        await response.write(chunk)
        await asyncio.sleep(0)  # a bounded step is done: let other requests run
    await response.write_eof()
    return response


async def _steps(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    """``chunks`` (each produced in a bounded step) as an async iterator."""
    for chunk in chunks:
        yield chunk


def _list_options(request: web.Request, info: RequestInfo, store: Store) -> ListOptions:
    query = parse_list_query(request.query, watch=info.is_watch)
    validate_list_query(query)
    return to_list_options(query, store.resource.plural, store.get_attrs, info.path_name)


async def list_objects(
    request: web.Request, ctx: APIContext, info: RequestInfo, store: Store
) -> web.StreamResponse:
    fmt = negotiation.response_format(request, is_list=True, resource=store.resource)  # 406
    opts = _list_options(request, info, store)
    namespace = _namespace(info, store)
    # a Table's rows are printed page by page while a list from etcd is still read
    ahead = responsewriters.encoded_ahead(fmt, store.resource, request)
    if ahead is not None:
        opts = dataclasses.replace(opts, sink=ahead)
    async with large_list_slot(expected_bytes(store.rs, namespace, opts)):
        result = await store.list(namespace, opts)
        metrics.observe_list(request, info, result)
        # a large list's reading (a B-tree range, its checks) and its encoder's first
        # chunk (a sum of sizes, a first gzip segment) are two steps, not one
        await Steps().split(len(result.items))
        return await write_list(
            request, store.rs, result.items, list_metadata(result), cost_headers(result),
            ahead,
        )  # fmt: skip


def _event_line(event_type: str, data: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + data + b"}\n"


async def watch_objects(
    request: web.Request, ctx: APIContext, info: RequestInfo, store: Store
) -> web.StreamResponse:
    query = parse_list_query(request.query, watch=True)
    validate_list_query(query)  # before negotiation, as upstream's ListResource
    # upstream's isListWatchRequest: a WatchList is never a Table (its
    # watchListEndpointRestrictions: the next media range, else 406, and client-go
    # falls back to a LIST); only its end bookmark carries the blueprint
    watch_list = bool(query.send_initial_events and query.allow_watch_bookmarks)
    fmt = negotiation.response_format(
        request, is_list=True, resource=store.resource, watch=True, table=not watch_list
    )
    as_protobuf = fmt.media_type == protobuf.MEDIA_TYPE
    frame = protobuf.watch_frame if as_protobuf else _event_line
    duration = watch_timeout(query, ctx.settings.min_request_timeout)
    opts = dataclasses.replace(
        to_list_options(query, store.resource.plural, store.get_attrs, info.path_name),
        timeout_seconds=duration,
        # the kind of a streaming list's k8s.io/initial-events-end BOOKMARK
        bookmark_kind=(store.resource.api_version, store.resource.kind),
    )
    watcher = await store.watch(_namespace(info, store), opts)
    ctx.watchers.add(watcher)
    encode = responsewriters.watch_encoder(fmt, store.resource, request, watch_list=watch_list)
    try:
        response = web.StreamResponse(status=200)
        response.headers["Content-Type"] = (
            protobuf.WATCH_MEDIA_TYPE if as_protobuf else fmt.content_type
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        with (
            metrics.track_long_running(info),
            contextlib.suppress(TimeoutError, ConnectionResetError),
        ):
            async with asyncio.timeout(duration):
                try:
                    async for event in watcher:
                        data = encode(event.type, event.data)
                        await response.write(frame(event.type, data))
                        metrics.observe_watch_event(info)
                except serr.StorageError as e:
                    # the headers are out: the error travels as the stream's last event
                    status = interpret_storage_error(e, "watch", store.resource)
                    data = encode("ERROR", orjson.dumps(status.body))
                    await response.write(frame("ERROR", data))
                except apierrors.StatusError as e:
                    # an event that cannot be encoded (Table conversion): upstream's watch
                    # server logs it and ends the stream
                    log.warning("watch %s: ending the stream: %s", request.path, e.message)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response
    finally:
        ctx.watchers.discard(watcher)
        await watcher.stop()


async def delete_collection(
    request: web.Request, ctx: APIContext, info: RequestInfo, store: Store
) -> web.StreamResponse:
    """Delete every object the selectors match (read from etcd, newest); the response is
    the List of deleted objects, each with its deletion revision."""
    negotiation.response_format(request, is_list=True, resource=store.resource)
    body = await decoding.read_body(request, ctx.settings.max_request_body_bytes)
    media_type = negotiation.body_media_type(request)
    delete_opts = await decoding.off_loop(
        body, media_type, parse_delete_options, request.query, body, media_type,
        collection=True, unsafe_delete_gate=ctx.storage_ctx.allow_unsafe_malformed_object_deletion,
    )  # fmt: skip
    query = parse_list_query(request.query)
    validate_list_query(query)
    opts = to_list_options(query, store.resource.plural, store.get_attrs)
    result, deleted = await store.delete_collection(
        _namespace(info, store), opts, dry_run=delete_opts.dry_run, options=delete_opts
    )
    last_rv = max([result.resource_version, *(d.resource_version for d in deleted)])
    return await write_list(
        request, store.rs, deleted, {"resourceVersion": str(last_rv)}, cost_headers(result)
    )
