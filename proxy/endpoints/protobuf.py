"""``application/vnd.kubernetes.protobuf`` at the front door: request bodies in, objects,
lists, Status errors and watch frames out (``storage.protobuf`` does the conversion).

Request bodies: ``decode_body`` reads the ``k8s\\x00`` + ``runtime.Unknown`` envelope,
defaults an empty apiVersion/kind from the endpoint (as upstream's decoder does), and
turns every failure into kube-apiserver's 400 wording (``the object provided is
unrecognized (must be of type X): ...`` before the kind is known, ``K in version "v"
cannot be handled as a X: ...`` after). A resource the schema has no message for
(custom resources, kinds newer than k8s.io/api 0.32) answers 415 listing JSON and YAML,
as upstream does for custom resources. Wire fields the schema does not know are not
dropped silently: each becomes a ``Warning`` header.

Responses: ``encode_object`` gives the enveloped bytes of a JSON object (``None`` when
the kind has no message or members protobuf would drop: the caller answers JSON);
``object_bytes`` / ``stored_bytes`` the same for an object version, made at most once
(serialize once) and, for a version read from a protobuf value, spliced from it;
``list_parts`` a List joined from those; ``watch_frame`` one length-prefixed
``WatchEvent`` frame.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson

from proxy import apierrors
from proxy.registry.resources import ResourceInfo
from storage.interfaces import StoredObject
from storage.media_types import STORED_PROTOBUF
from storage.protobuf.converter import ConversionError, Report
from storage.protobuf.errors import SchemaUnavailable
from storage.protobuf.serializer import (
    MAGIC,
    MEDIA_TYPE,
    NotRegistered,
    Serializer,
    frame,
    get_serializer,
    unwrap,
    with_resource_version,
)
from storage.protobuf.wire import read_varint, varint

__all__ = [
    "MEDIA_TYPE",
    "WATCH_MEDIA_TYPE",
    "decode_body",
    "decode_kind_body",
    "encode_lossy",
    "encode_object",
    "list_parts",
    "object_bytes",
    "serializer",
    "stored_bytes",
    "stored_item",
    "supports",
    "watch_frame",
]

WATCH_MEDIA_TYPE = MEDIA_TYPE + ";stream=watch"
_SCHEME = '"pkg/api/legacyscheme/scheme.go:30"'  # upstream names its scheme in the error
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
LIST_META = f"{META}.ListMeta"
log = logging.getLogger(__name__)
JSON = dict[str, Any]


def serializer() -> Serializer | None:
    """The protobuf serializer, or None when the schema is unavailable (logged once)."""
    try:
        return get_serializer()
    except SchemaUnavailable as err:
        _log_unavailable(str(err))
        return None


_logged: set[str] = set()


def _log_unavailable(message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        log.warning("protobuf: %s", message)


def supports(resource: ResourceInfo) -> bool:
    """Whether ``resource`` can be read and written as protobuf here."""
    s = serializer()
    return s is not None and s.knows(resource.api_version, resource.kind)


def decode_body(
    body: bytes,
    resource: ResourceInfo,
    accepted: Sequence[str],
    warnings: list[str] | None,
    summarize: Callable[[bytes], str],
) -> JSON:
    """The JSON object of a protobuf create/update body for ``resource`` (see the module
    docstring for errors; ``summarize`` previews a body as apimachinery does). A body of
    another kind is refused here, with upstream's conversion error."""
    target = (resource.group, resource.api_version, resource.kind)
    return decode_kind_body(body, target, accepted, warnings, summarize)


def decode_kind_body(
    body: bytes,
    target: tuple[str, str, str],
    accepted: Sequence[str],
    warnings: list[str] | None,
    summarize: Callable[[bytes], str],
) -> JSON:
    """``decode_body`` for an endpoint that takes one kind but is no resource of the
    registry (a subresource's own kind, e.g. ``serviceaccounts/token``'s TokenRequest):
    ``target`` is its (group, apiVersion, kind)."""
    group, target_version, target_kind = target
    s = serializer()
    if s is None or not s.knows(target_version, target_kind):
        raise apierrors.unsupported_media_type(MEDIA_TYPE, accepted)
    unrecognized = f"the object provided is unrecognized (must be of type {target_kind})"
    if not body:
        raise apierrors.bad_request(f"{unrecognized}: empty data (<empty>)")
    if body == MAGIC:
        raise apierrors.bad_request(f"{unrecognized}: empty body ({summarize(body)})")
    try:
        envelope = unwrap(body)
    except ConversionError as err:
        raise apierrors.bad_request(f"{unrecognized}: {err} ({summarize(body)})") from None
    api_version = envelope.api_version or target_version
    kind = envelope.kind or target_kind
    version = api_version.rsplit("/", 1)[-1]
    cannot = f'{kind} in version "{version}" cannot be handled as a {target_kind}'
    report = Report()
    try:
        obj = s.decode_raw(api_version, kind, envelope.raw, report)
    except NotRegistered as err:
        raise apierrors.bad_request(f"{cannot}: {err} in scheme {_SCHEME}") from None
    except ConversionError as err:
        raise apierrors.bad_request(f"{cannot}: {err}") from None
    if kind != target_kind:
        internal = group.split(".", 1)[0] if group else "core"
        raise apierrors.bad_request(
            f"{cannot}: converting ({version}.{kind}) to ({internal}.{target_kind}): "
            "unknown conversion"
        )
    if report.unknown_fields and warnings is not None:
        warnings.append(
            "protobuf fields unknown to this server's schema (k8s.io/api "
            f"{_schema_version(s)}) were ignored: {', '.join(sorted(set(report.unknown_fields)))}"
        )
    return obj


def decode_options(body: bytes, kind: str) -> JSON:
    """A protobuf options body (``DeleteOptions``, a meta.k8s.io kind, as client-go's
    typed clients send it) as JSON; ValueError if it is not one."""
    s = serializer()
    if s is None:
        raise ValueError(f"{MEDIA_TYPE} is not available on this server")
    try:
        envelope = unwrap(body)
        msg = s.messages[f"{META}.{envelope.kind or kind}"]
        return s.compiler.decoder(msg)(envelope.raw, Report())  # type: ignore[no-any-return]
    except (ConversionError, KeyError, IndexError) as err:
        raise ValueError(f"not a protobuf {kind}: {err}") from None


def _schema_version(s: Serializer) -> str:
    version = s.raw.debian_versions.get("golang-k8s-api-dev", "")
    return version.split("-", 1)[0]


def encode_lossy(obj: JSON) -> bytes:
    """``obj`` as protobuf even if members the schema lacks must be left out (a watch
    stream cannot switch to JSON midway); what is left out is logged once."""
    s = serializer()
    assert s is not None  # the stream was only negotiated as protobuf with a schema
    report = Report()
    data = s.encode(obj, report)
    if report.unknown_json:
        _log_unavailable(
            f"{obj.get('apiVersion')}/{obj.get('kind')}: sent as protobuf without "
            f"{', '.join(report.unknown_json)} (no field in the schema)"
        )
    return data


def encode_object(obj: JSON, s: Serializer | None = None) -> bytes | None:
    """The enveloped bytes of ``obj``, or None when it cannot be protobuf (no schema,
    a kind the schema lacks, or members the schema would drop: JSON keeps them)."""
    s = s or serializer()
    if s is None:
        return None
    report = Report()
    try:
        data = s.encode(obj, report)
    except (NotRegistered, ConversionError):
        return None
    return None if report.unknown_json else data


# Serialize once: the protobuf form of a JSON object version, keyed by the identity of
# its bytes (the cache hands the same bytes object to every GET and every watcher of
# that version; the entry holds the bytes, so the id cannot be reused meanwhile).
_ONCE_SIZE = 4096
_once: OrderedDict[int, tuple[bytes, bytes]] = OrderedDict()


def object_bytes(data: bytes) -> bytes:
    """The enveloped protobuf of the JSON object ``data``, made at most once while it is
    among the last few thousand asked for; ``b""`` when it cannot be protobuf."""
    key = id(data)
    hit = _once.get(key)
    if hit is not None and hit[0] is data:
        _once.move_to_end(key)
        return hit[1]
    encoded = encode_object(orjson.loads(data)) or b""
    _once[key] = (data, encoded)
    if len(_once) > _ONCE_SIZE:
        _once.popitem(last=False)
    return encoded


def stored_bytes(stored: StoredObject) -> bytes:
    """``object_bytes`` of a version, from what the version keeps (``stored_item``):
    its envelope's head (shared by every version of its kind) + its ``items`` entry +
    the envelope's empty trailer; ``b""`` when it cannot be protobuf."""
    entry = stored_item(stored)
    head = stored.remembered(_HEAD)
    if not entry or head is None:
        return b""
    return b"".join((head, entry, _TRAILER))


_ITEM = MEDIA_TYPE + ";item"  # a version's List entry (kept)
_HEAD = MEDIA_TYPE + ";head"  # its envelope's magic and typeMeta (one object per kind)
_heads: dict[bytes, bytes] = {}


def stored_item(stored: StoredObject) -> bytes:
    """The version as an entry of a protobuf List's ``items`` (``0x12``, length, the
    object's message), made at most once and kept with the version (serialize once: a
    LIST from the cache joins these bytes as they are, with no Python work per item).
    The envelope's head is kept beside it, the same object for all versions of a
    kind. A version read from a protobuf value starts from that value (its
    resourceVersion spliced in), so a protobuf LIST from etcd encodes nothing;
    ``b""`` when the version cannot be protobuf."""
    return stored.encoded(_ITEM, _encode_item)


def _encode_item(stored: StoredObject) -> bytes:
    enveloped = _encode_stored(stored)
    if not enveloped:
        return b""
    size, pos = read_varint(enveloped, len(MAGIC) + 1)
    head = enveloped[: pos + size]
    if enveloped.endswith(_TRAILER):
        entry = enveloped[len(head) : -len(_TRAILER)]
    else:  # not upstream's layout (a contentType of its own): the message, re-enveloped
        raw = raw_message(enveloped)
        entry = b"\x12" + varint(len(raw)) + raw
    stored.remember(_HEAD, _heads.setdefault(head, head))
    return entry


def _encode_stored(stored: StoredObject) -> bytes:
    source = stored.remembered(STORED_PROTOBUF)
    if source is not None:
        stored.forget(STORED_PROTOBUF)  # the answer replaces it (the cache keeps one copy)
        spliced = with_resource_version(source, stored.resource_version)
        if spliced is not None:
            return spliced
    return encode_object(orjson.loads(stored.data)) or b""


def item_of(enveloped: bytes) -> bytes:
    """The ``items`` entry of one enveloped object (``b""`` stays ``b""``)."""
    return bytes(item_entries([enveloped])[0]) if enveloped else b""


def raw_message(enveloped: bytes) -> memoryview:
    """The object message inside an envelope this module made (no copy)."""
    pos = len(MAGIC) + 1
    size, pos = read_varint(enveloped, pos)
    pos += size + 1  # typeMeta, then raw's tag
    size, pos = read_varint(enveloped, pos)
    return memoryview(enveloped)[pos : pos + size]


def list_parts(
    api_version: str,
    list_kind: str,
    metadata: JSON,
    items: Sequence[bytes],
    s: Serializer,
    chunk_bytes: int = 256 * 1024,
) -> Iterator[bytes]:
    """The enveloped list of already-enveloped ``items``, in pieces to stream: the list
    message is ListMeta (field 1), then each item's message as ``items`` (field 2).

    An item's envelope holds ``0x12, length, message`` — exactly its ``items`` entry —
    right after its typeMeta, which is the same for every item of a list: each entry
    is one slice of the item's bytes (no parsing past the first item)."""
    entries = item_entries(items)
    return iter(entry_parts(api_version, list_kind, metadata, entries, s, chunk_bytes))


def entry_parts(
    api_version: str,
    list_kind: str,
    metadata: JSON,
    entries: Sequence[bytes | memoryview],
    s: Serializer,
    chunk_bytes: int = 256 * 1024,
) -> ListBody:
    """``list_parts`` from the items' ``items`` entries (``stored_item``), in runs of
    about ``chunk_bytes``, with its size known before the first byte."""
    return ListBody(api_version, list_kind, s.encode_message(LIST_META, metadata), entries,
                    chunk_bytes)  # fmt: skip


class ListBody:
    """A protobuf List's body: ``size`` bytes (a Content-Length), iterated as the
    envelope's head, runs of entries of about ``chunk_bytes`` and the trailer. Measuring
    and joining the entries are C loops over the list (a LIST of 10,000 cached pods
    costs ~6 ms here, copying bytes)."""

    def __init__(
        self,
        api_version: str,
        list_kind: str,
        list_meta: bytes,
        entries: Sequence[bytes | memoryview],
        chunk_bytes: int,
    ) -> None:
        total = sum(map(len, entries))
        body_size = 1 + len(varint(len(list_meta))) + len(list_meta) + total
        av, kd = api_version.encode(), list_kind.encode()
        type_meta = b"\x0a" + varint(len(av)) + av + b"\x12" + varint(len(kd)) + kd
        self.head = b"".join((MAGIC, b"\x0a", varint(len(type_meta)), type_meta, b"\x12",
                              varint(body_size), b"\x0a", varint(len(list_meta)),
                              list_meta))  # fmt: skip
        self.entries = entries
        self.run = max(1, chunk_bytes * len(entries) // total) if total else 1
        self.size = len(self.head) + total + len(_TRAILER)

    def __iter__(self) -> Iterator[bytes]:
        yield self.head
        entries, run = self.entries, self.run
        for start in range(0, len(entries), run):
            yield b"".join(entries[start : start + run])
        yield _TRAILER


_TRAILER = b"\x1a\x00\x22\x00"  # empty contentEncoding and contentType


def item_entries(items: Sequence[bytes]) -> list[memoryview | bytes]:
    """Each enveloped item's ``items`` entry (``0x12, length, message``): a slice of its
    bytes after the magic and typeMeta, which the items of one list share."""
    return list(_entries_one_by_one(items))


def _entries_one_by_one(items: Sequence[bytes]) -> Iterator[memoryview | bytes]:
    head = b""
    for item in items:
        if not (head and item.startswith(head) and item.endswith(_TRAILER)):
            raw = raw_message(item)
            yield b"\x12" + varint(len(raw)) + raw
            size, pos = read_varint(item, len(MAGIC) + 1)
            head = item[: pos + size]  # magic and typeMeta, shared by the next items
            continue
        yield memoryview(item)[len(head) : -len(_TRAILER)]


def watch_frame(event_type: str, object_bytes: bytes) -> bytes:
    """One frame of a ``;stream=watch`` response: 4-byte length, then the
    ``WatchEvent{type, object: RawExtension{raw = object_bytes}}`` message itself (no
    envelope: upstream frames events with its raw serializer), whose ``object_bytes``
    are enveloped (``k8s\\x00`` + Unknown)."""
    kind = event_type.encode()
    ext = b"\x0a" + varint(len(object_bytes)) + object_bytes
    return frame(b"\x0a" + varint(len(kind)) + kind + b"\x12" + varint(len(ext)) + ext)
