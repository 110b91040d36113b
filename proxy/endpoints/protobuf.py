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

Responses: ``encode_object`` / ``encode_list`` / ``encode_status`` give enveloped bytes
for JSON objects (``None`` when the kind has no message: the caller answers JSON);
``watch_frame`` one length-prefixed ``WatchEvent`` frame.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from proxy import apierrors
from proxy.registry.resources import ResourceInfo
from storage.protobuf.converter import ConversionError, Report
from storage.protobuf.schema import SchemaUnavailable
from storage.protobuf.serializer import (
    MAGIC,
    MEDIA_TYPE,
    NotRegistered,
    Serializer,
    frame,
    get_serializer,
    unwrap,
    wrap,
)
from storage.protobuf.wire import varint

__all__ = [
    "MEDIA_TYPE",
    "WATCH_MEDIA_TYPE",
    "decode_body",
    "encode_list",
    "encode_object",
    "serializer",
    "supports",
    "watch_frame",
]

WATCH_MEDIA_TYPE = MEDIA_TYPE + ";stream=watch"
LIST_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta"
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
        log.warning("protobuf disabled: %s", message)


def supports(resource: ResourceInfo) -> bool:
    """Whether ``resource`` can be read and written as protobuf here."""
    s = serializer()
    return s is not None and s.knows(resource.api_version, resource.kind)


def decode_body(
    body: bytes, resource: ResourceInfo, accepted: Sequence[str], warnings: list[str] | None
) -> JSON:
    """The JSON object of a protobuf create/update body for ``resource`` (see the module
    docstring for errors); kind/apiVersion checks are the caller's (``check_kind``)."""
    s = serializer()
    if s is None or not s.knows(resource.api_version, resource.kind):
        raise apierrors.unsupported_media_type(MEDIA_TYPE, accepted)
    unrecognized = f"the object provided is unrecognized (must be of type {resource.kind})"
    if not body:
        raise apierrors.bad_request(f"{unrecognized}: empty data (<empty>)")
    try:
        envelope = unwrap(body)
    except ConversionError as err:
        raise apierrors.bad_request(f"{unrecognized}: {err} ({_summary(body)})") from None
    api_version = envelope.api_version or resource.api_version
    kind = envelope.kind or resource.kind
    version = api_version.rsplit("/", 1)[-1]
    cannot = f'{kind} in version "{version}" cannot be handled as a {resource.kind}'
    report = Report()
    try:
        obj = s.decode_raw(api_version, kind, envelope.raw, report)
    except NotRegistered as err:
        raise apierrors.bad_request(f"{cannot}: {err}") from None
    except ConversionError as err:
        raise apierrors.bad_request(f"{cannot}: {err}") from None
    if report.unknown_fields and warnings is not None:
        warnings.append(
            "protobuf fields unknown to this server's schema (k8s.io/api "
            f"{_schema_version(s)}) were ignored: {', '.join(sorted(set(report.unknown_fields)))}"
        )
    return obj


def _schema_version(s: Serializer) -> str:
    version = s.raw.debian_versions.get("golang-k8s-api-dev", "")
    return version.split("-", 1)[0]


def _summary(data: bytes, max_length: int = 30) -> str:
    # apimachinery's summarizeData: hex for binary bodies
    return data[:max_length].hex() + (" ..." if len(data) > max_length else "")


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


def encode_list(
    api_version: str, list_kind: str, metadata: JSON, items: Iterable[bytes], s: Serializer
) -> bytes:
    """A list from already-enveloped items: each item's ``raw`` becomes one ``items``
    entry (field 2) after the ListMeta (field 1), inside the list kind's envelope."""
    meta = s.encode_message(LIST_META, metadata)
    parts = [b"\x0a", varint(len(meta)), meta]
    for item in items:
        raw = unwrap(item).raw
        parts += (b"\x12", varint(len(raw)), raw)
    return wrap(api_version, list_kind, b"".join(parts))


def watch_frame(event_type: str, object_bytes: bytes) -> bytes:
    """One frame of a ``;stream=watch`` response: 4-byte length, then ``k8s\\x00`` +
    Unknown{v1 WatchEvent, raw = WatchEvent{type, object: RawExtension{raw =
    object_bytes}}} (``object_bytes`` is itself enveloped)."""
    kind = event_type.encode()
    ext = b"\x0a" + varint(len(object_bytes)) + object_bytes
    event = b"\x0a" + varint(len(kind)) + kind + b"\x12" + varint(len(ext)) + ext
    return frame(wrap("v1", "WatchEvent", event))


def is_protobuf(data: bytes) -> bool:
    return data.startswith(MAGIC)
