"""Response body encoders, one per format, and LIST bodies produced in bounded steps.

A LIST of 10,000 pods is ~50 MB of JSON. Converting it whole (to a Table, a
PartialObjectMetadataList or YAML) holds the event loop for seconds (YAML: tens of
seconds) while every other request, ``/readyz`` included, waits. So a list is encoded
as a :class:`ListEncoder`: a head, one piece per item, a separator and a tail, such
that ``head + separator.join(pieces) + tail`` is byte for byte the encoding of the
whole document. :func:`list_chunks` produces that body in steps of at most about
``CHUNK_BYTES`` bytes or ``STEP_SECONDS`` of work (a step ends after the item that
crosses either bound), and its caller gives the loop back between steps
(``write_list`` in :mod:`proxy.endpoints.handlers.collection` writes each step as it
comes). The budget the project holds: no loop step over ~20 ms at 10,000 pods.

- JSON: the items' stored bytes as they are (final, resourceVersion set), joined.
- Table: each version's row is printed once and kept with the version
  (:mod:`proxy.printers.row_template`); a request renders its ages and joins bytes.
  A Table read from etcd has its rows rendered page by page as storage reads the
  list (:class:`EncodedAhead`, a ``storage.interfaces.PageSink``), while etcd reads
  the next page; the body is joined from those rows once the list is read (its
  errors, a corrupt value or a compaction, are still a Status: nothing is written
  before the last page is in).
- PartialObjectMetadataList: each item's ``metadata`` sliced from its stored bytes
  (located once per version); the document's last key (``rows``/``items``) is left
  open.
- YAML (the resource's List, a Table or a PartialObjectMetadataList): libyaml's C
  emitter (``yaml.CSafeDumper``) where PyYAML has it, the pure Python one otherwise.
  Each item is dumped as a one-element block sequence, which is exactly the text of
  that item inside the whole document's last key (block sequences under a mapping key
  are not indented; an item's own lines are). Objects decoded from JSON share no
  nodes, so no anchors or aliases can depend on the other items. Each item is also
  given as JSON (``json_item``): a large list's items are written by a child process
  from those bytes (:mod:`proxy.endpoints.yaml_worker`), the same text off the loop.
- Protobuf (the resource's List, a PartialObjectMetadataList): a
  :class:`ProtobufListEncoder`. The envelope carries the length of the whole body, so
  every item's message is made first, in bounded steps (:func:`encode_items`; an
  object version's List entry is made at most once and kept on it, see
  ``proxy.endpoints.protobuf.stored_item``), then the list is joined from those
  bytes as they are (:func:`protobuf_chunks`). An item protobuf cannot carry sends the whole
  list as the encoder's JSON ``fallback``.

A new format adds an encoder here and a branch in
:func:`proxy.endpoints.responsewriters.list_encoder`.
"""

from __future__ import annotations

import asyncio
import operator
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar, Unpack

import orjson

from proxy.endpoints import protobuf
from proxy.endpoints.yaml_encoding import dump_yaml
from proxy.printers.row_template import metadata_json
from proxy.printers.table import (
    TableConvertor,
    as_partial_object_metadata,
    partial_object_metadata_list_header,
)
from storage.interfaces import StoredObject

__all__ = [
    "CHUNK_BYTES",
    "STEP_SECONDS",
    "EncodedAhead",
    "ListEncoder",
    "ProtobufListEncoder",
    "dump_yaml",
    "encode_items",
    "joined_chunks",
    "json_list",
    "list_chunks",
    "partial_object_metadata_list",
    "partial_object_metadata_protobuf_list",
    "protobuf_body",
    "protobuf_chunks",
    "protobuf_list",
    "table_list",
    "yaml_list",
]

T = TypeVar("T")

CHUNK_BYTES = 256 * 1024  # bytes per write: peak memory is the storage result + one chunk
STEP_SECONDS = 0.005  # work per loop step, well inside the ~20 ms budget


@dataclass(frozen=True)
class ListEncoder:
    """How one list response is encoded, item by item.

    ``item`` turns one item (its stored version) into its piece of the body; ``empty``
    is the whole body of a list without items, when that is not ``head + tail``.
    ``json_item``, for YAML: the item as JSON, whose ``yaml_encoding.dump_items`` is
    ``item``'s piece (so the piece can be made off the loop, from bytes).
    """

    head: bytes
    item: Callable[[StoredObject], bytes]
    tail: bytes
    separator: bytes = b","
    empty: bytes | None = None
    joins_stored: bool = False  # ``item`` is the stored bytes: pieces may be kept per version
    json_item: Callable[[StoredObject], bytes] | None = None


class Chunking(TypedDict, total=False):
    """How a list body is cut (:func:`joined_chunks`' keywords)."""

    chunk_bytes: int
    step_seconds: float
    clock: Callable[[], float]


def list_chunks(
    encoder: ListEncoder, items: Iterable[StoredObject], **chunking: Unpack[Chunking]
) -> Iterator[bytes]:
    """The body of the list of ``items`` (stored versions) in pieces; producing each
    piece takes at most ``step_seconds`` (by ``clock``) plus one item's work, and a
    piece holds at most about ``chunk_bytes`` plus one item. The time between pieces
    (the caller's writes) is not counted. Errors of ``encoder.item`` propagate."""
    return joined_chunks(encoder, map(encoder.item, items), **chunking)


def joined_chunks(
    encoder: ListEncoder,
    pieces: Iterable[bytes],
    *,
    chunk_bytes: int = CHUNK_BYTES,
    step_seconds: float = STEP_SECONDS,
    clock: Callable[[], float] = time.perf_counter,
) -> Iterator[bytes]:
    """:func:`list_chunks`' body from the items' ``pieces`` (made as they are iterated,
    or already made: :class:`EncodedAhead`'s)."""
    buffer: list[bytes] = []
    size = 0
    started = clock()
    seen = False
    for piece in pieces:
        if seen:
            buffer.append(encoder.separator)
        else:
            buffer.append(encoder.head)
            seen = True
        buffer.append(piece)
        size += len(piece)
        if size >= chunk_bytes or clock() - started >= step_seconds:
            yield b"".join(buffer)
            buffer, size = [], 0
            started = clock()
    if not seen:
        yield encoder.head + encoder.tail if encoder.empty is None else encoder.empty
        return
    buffer.append(encoder.tail)
    yield b"".join(buffer)


class EncodedAhead:
    """Encodes a list's items with ``item`` as storage reads them (a
    ``storage.interfaces.PageSink``): each page in steps of at most ``step_seconds``,
    giving the loop back between steps. ``pieces_for`` tells whether what was encoded
    is the response's list: only when it took exactly those items (a list served from
    the cache, or transformed after storage, is encoded when written, as any other).
    An item that fails to encode stops it: the list is then encoded when written, where
    that error surfaces as it always has (never inside storage's read)."""

    def __init__(
        self, item: Callable[[StoredObject], bytes], *, step_seconds: float = STEP_SECONDS
    ) -> None:
        self._item = item
        self._step = step_seconds
        self._taken: list[StoredObject] = []
        self._pieces: list[bytes] = []
        self._failed = False

    async def take(self, items: Sequence[StoredObject]) -> None:
        if self._failed:
            return
        try:
            for _ in encode_items(self._item, items, self._pieces, step_seconds=self._step):
                await asyncio.sleep(0)  # a bounded step is done: let other requests run
        except Exception:
            self._failed = True
            return
        self._taken.extend(items)

    def restart(self) -> None:
        self._taken.clear()
        self._pieces.clear()
        self._failed = False

    def pieces_for(self, items: Sequence[StoredObject]) -> list[bytes] | None:
        """The pieces of ``items`` if they are what was taken (the same versions, in
        order, each encoded), else None."""
        taken, pieces = self._taken, self._pieces
        if self._failed or not len(taken) == len(pieces) == len(items):
            return None
        return pieces if all(map(operator.is_, taken, items)) else None


def _open(document: dict[str, Any], key: str) -> bytes:
    """``document`` as JSON with a last key ``key`` whose array is left open."""
    return orjson.dumps(document)[:-1] + b',"' + key.encode() + b'":['


def json_list(list_kind: str, api_version: str, metadata: dict[str, Any]) -> ListEncoder:
    """The resource's own List, from the items' stored bytes (no re-encoding)."""
    head = {"kind": list_kind, "apiVersion": api_version, "metadata": metadata}
    return ListEncoder(_open(head, "items"), _as_is, b"]}", joins_stored=True)


def _as_is(stored: StoredObject) -> bytes:
    return stored.data


def table_list(
    convertor: TableConvertor, metadata: dict[str, Any], yaml_media: bool = False
) -> ListEncoder:
    """A ``meta.k8s.io`` Table, one row per item (``metadata`` is the Table's), as JSON
    (each version's row printed once and kept with it: ``TableConvertor.row_json``) or
    (``yaml_media``) YAML."""

    def row(stored: StoredObject) -> Any:
        return convertor.row(stored.decoded())

    header = convertor.header(metadata)
    if yaml_media:
        return _yaml_document(header, "rows", row, convertor.row_json)
    return ListEncoder(_open(header, "rows"), convertor.row_json, b"]}")


def partial_object_metadata_list(
    metadata: dict[str, Any], version: str, yaml_media: bool = False
) -> ListEncoder:
    """A PartialObjectMetadataList (``meta.k8s.io/<version>``) of the items, as JSON or
    (``yaml_media``) YAML."""

    def item(stored: StoredObject) -> dict[str, Any]:
        return as_partial_object_metadata(stored.decoded(), version)

    header = partial_object_metadata_list_header(metadata, version)
    head = b'{"kind":"PartialObjectMetadata","apiVersion":"' + header["apiVersion"].encode()

    def sliced(stored: StoredObject) -> bytes:  # the stored metadata, found once a version
        return b"".join((head, b'","metadata":', metadata_json(stored), b"}"))

    if yaml_media:
        return _yaml_document(header, "items", item, sliced)
    return ListEncoder(_open(header, "items"), sliced, b"]}")


def partial_object_metadata_protobuf_list(
    metadata: dict[str, Any], version: str
) -> ProtobufListEncoder:
    """A PartialObjectMetadataList as protobuf; as JSON if an item cannot be protobuf."""

    def message(stored: StoredObject) -> bytes:
        partial = as_partial_object_metadata(orjson.loads(stored.data), version)
        return protobuf.item_of(protobuf.encode_object(partial) or b"")

    header = partial_object_metadata_list_header(metadata, version)
    fallback = partial_object_metadata_list(metadata, version)
    return ProtobufListEncoder(
        header["apiVersion"], header["kind"], header["metadata"], message, fallback
    )


def yaml_list(list_kind: str, api_version: str, metadata: dict[str, Any]) -> ListEncoder:
    """The resource's own List as one YAML document, as ``dump_yaml`` of the whole list
    would write it."""
    head = {"kind": list_kind, "apiVersion": api_version, "metadata": metadata}
    return _yaml_document(head, "items", StoredObject.decoded, _as_is)


def _yaml_document(
    head: dict[str, Any],
    key: str,
    item: Callable[[StoredObject], Any],
    json_item: Callable[[StoredObject], bytes],
) -> ListEncoder:
    """``head`` with a last key ``key`` listing ``item`` of each item, as ``dump_yaml``
    of the whole document would write it; ``json_item`` is the same item as JSON."""

    def piece(stored: StoredObject) -> bytes:
        return dump_yaml([item(stored)])

    empty = dump_yaml({**head, key: []})
    start = dump_yaml(head) + key.encode() + b":\n"
    return ListEncoder(start, piece, b"", b"", empty, json_item=json_item)


@dataclass(frozen=True)
class ProtobufListEncoder:
    """How one list response is encoded as protobuf: the List ``list_kind`` of
    ``api_version`` with ListMeta ``metadata``, each item from ``item``: its entry of
    the List's ``items`` (``proxy.endpoints.protobuf.stored_item``), ``b""`` if it
    cannot be protobuf. ``fallback`` encodes the list
    as JSON when an item cannot be protobuf (a single object goes as JSON likewise)."""

    api_version: str
    list_kind: str
    metadata: dict[str, Any]
    item: Callable[[StoredObject], bytes]
    fallback: ListEncoder


def protobuf_list(
    list_kind: str, api_version: str, metadata: dict[str, Any]
) -> ProtobufListEncoder:
    """The resource's own List as protobuf, from each version's remembered protobuf
    bytes (serialize once); JSON (the stored bytes) if an item cannot be protobuf."""
    fallback = json_list(list_kind, api_version, metadata)
    return ProtobufListEncoder(api_version, list_kind, metadata, protobuf.stored_item, fallback)


def encode_items(
    encode: Callable[[T], bytes],
    items: Iterable[T],
    out: list[bytes],
    *,
    step_seconds: float = STEP_SECONDS,
    clock: Callable[[], float] = time.perf_counter,
) -> Iterator[None]:
    """Append ``encode(item)`` of each item to ``out``, yielding after each step of at
    most ``step_seconds`` (by ``clock``) plus one item's work: the caller gives the loop
    back on each. Stops after the first item that encodes to ``b""`` (the list cannot be
    sent this way; ``len(out) < len(items)`` or ``out[-1] == b""`` tells)."""
    started = clock()
    for item in items:
        encoded = encode(item)
        out.append(encoded)
        if not encoded:
            return
        if clock() - started >= step_seconds:
            yield
            started = clock()


def protobuf_chunks(
    encoder: ProtobufListEncoder, encoded: Sequence[bytes], *, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[bytes]:
    """The protobuf List of the items' ``encoded`` entries (``encoder.item``'s, from
    :func:`encode_items`), in pieces of about ``chunk_bytes``: the entries are joined
    as they are, never parsed again."""
    body = protobuf_body(encoder, encoded, chunk_bytes=chunk_bytes)
    buffer: list[bytes] = []
    size = 0
    for part in body:
        buffer.append(part)
        size += len(part)
        if size >= chunk_bytes:
            yield b"".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield b"".join(buffer)


def protobuf_body(
    encoder: ProtobufListEncoder, encoded: Sequence[bytes], *, chunk_bytes: int = CHUNK_BYTES
) -> protobuf.ListBody:
    """:func:`protobuf_chunks`' body with its ``size`` known before the first byte (a
    Content-Length: clients read a body of known length faster than a chunked one).
    Iterated, its pieces are the envelope's head, runs of about ``chunk_bytes`` of
    entries, and the trailer."""
    serializer = protobuf.serializer()
    assert serializer is not None  # protobuf is negotiated only with a schema
    return protobuf.entry_parts(
        encoder.api_version, encoder.list_kind, encoder.metadata, encoded, serializer,
        chunk_bytes,
    )  # fmt: skip
