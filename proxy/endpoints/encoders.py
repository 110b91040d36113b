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
- Table, PartialObjectMetadataList: each item decoded, converted and encoded on its
  own (``orjson``); the document's last key (``rows``/``items``) is left open.
- YAML: libyaml's C emitter (``yaml.CSafeDumper``) where PyYAML has it, the pure
  Python one otherwise. Each item is dumped as a one-element block sequence, which is
  exactly the text of that item inside the whole list's ``items:`` (block sequences
  under a mapping key are not indented; an item's own lines are). Objects decoded
  from JSON share no nodes, so no anchors or aliases can depend on the other items.

Other formats (protobuf) add an encoder here and a branch in
:func:`proxy.endpoints.negotiation.list_encoder`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import yaml

from proxy.printers.table import (
    TableConvertor,
    as_partial_object_metadata,
    partial_object_metadata_list_header,
)

__all__ = [
    "CHUNK_BYTES",
    "STEP_SECONDS",
    "ListEncoder",
    "dump_yaml",
    "json_list",
    "list_chunks",
    "partial_object_metadata_list",
    "table_list",
    "yaml_list",
]

CHUNK_BYTES = 256 * 1024  # bytes per write: peak memory is the storage result + one chunk
STEP_SECONDS = 0.005  # work per loop step, well inside the ~20 ms budget

# libyaml's emitter is ~5x faster than PyYAML's; both give the same text for the
# objects an API server stores (they differ only in how they wrap long escaped strings)
_YAML_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(obj: Any) -> bytes:
    """``obj`` as a YAML document (block style, keys in the object's order)."""
    text: str = yaml.dump(obj, Dumper=_YAML_DUMPER, sort_keys=False)
    return text.encode()


@dataclass(frozen=True)
class ListEncoder:
    """How one list response is encoded, item by item.

    ``item`` turns one item's stored JSON bytes into its piece of the body; ``empty``
    is the whole body of a list without items, when that is not ``head + tail``.
    """

    head: bytes
    item: Callable[[bytes], bytes]
    tail: bytes
    separator: bytes = b","
    empty: bytes | None = None


def list_chunks(
    encoder: ListEncoder,
    items: Iterable[bytes],
    *,
    chunk_bytes: int = CHUNK_BYTES,
    step_seconds: float = STEP_SECONDS,
    clock: Callable[[], float] = time.perf_counter,
) -> Iterator[bytes]:
    """The body of the list of ``items`` (stored JSON bytes) in pieces; producing each
    piece takes at most ``step_seconds`` (by ``clock``) plus one item's work, and a
    piece holds at most about ``chunk_bytes`` plus one item. The time between pieces
    (the caller's writes) is not counted. Errors of ``encoder.item`` propagate."""
    buffer: list[bytes] = []
    size = 0
    started = clock()
    seen = False
    for data in items:
        if seen:
            buffer.append(encoder.separator)
        else:
            buffer.append(encoder.head)
            seen = True
        piece = encoder.item(data)
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


def _open(document: dict[str, Any], key: str) -> bytes:
    """``document`` as JSON with a last key ``key`` whose array is left open."""
    return orjson.dumps(document)[:-1] + b',"' + key.encode() + b'":['


def json_list(list_kind: str, api_version: str, metadata: dict[str, Any]) -> ListEncoder:
    """The resource's own List, from the items' stored bytes (no re-encoding)."""
    head = {"kind": list_kind, "apiVersion": api_version, "metadata": metadata}
    return ListEncoder(_open(head, "items"), _as_is, b"]}")


def _as_is(data: bytes) -> bytes:
    return data


def table_list(convertor: TableConvertor, metadata: dict[str, Any]) -> ListEncoder:
    """A ``meta.k8s.io`` Table, one row per item (``metadata`` is the Table's)."""

    def row(data: bytes) -> bytes:
        return orjson.dumps(convertor.row(orjson.loads(data)))

    return ListEncoder(_open(convertor.header(metadata), "rows"), row, b"]}")


def partial_object_metadata_list(metadata: dict[str, Any], version: str) -> ListEncoder:
    """A PartialObjectMetadataList (``meta.k8s.io/<version>``) of the items."""

    def item(data: bytes) -> bytes:
        return orjson.dumps(as_partial_object_metadata(orjson.loads(data), version))

    header = partial_object_metadata_list_header(metadata, version)
    return ListEncoder(_open(header, "items"), item, b"]}")


def yaml_list(list_kind: str, api_version: str, metadata: dict[str, Any]) -> ListEncoder:
    """The resource's own List as one YAML document, as ``dump_yaml`` of the whole list
    would write it."""
    head = {"kind": list_kind, "apiVersion": api_version, "metadata": metadata}

    def item(data: bytes) -> bytes:
        return dump_yaml([orjson.loads(data)])

    return ListEncoder(
        dump_yaml(head) + b"items:\n", item, b"", b"", dump_yaml({**head, "items": []})
    )
