"""The JSON codec between objects and etcd values (upstream ``storage/etcd3/store.go``
and ``storage/value``), serializing once.

Write: ``encode(obj)`` drops ``metadata.resourceVersion`` and ``metadata.selfLink`` (as
kube-apiserver's versioner does before storage) and produces the *canonical* encoding:
``apiVersion``, ``kind``, ``metadata`` first, then the other top-level fields in
sorted order, and every nested object with sorted keys. Equal objects therefore encode
to equal bytes whatever their key order, which is what lets an update that changes
nothing be recognised by a byte comparison and skipped.

Read: ``decode(key, value, rv)`` returns a ``StoredObject`` whose ``data`` carries
``metadata.resourceVersion = rv``. A value that starts with the canonical head
(``{"apiVersion":...,"kind":...,"metadata":{``, an order no other Kubernetes writer
uses: Go's encoders put ``kind`` first) and ends with ``}`` is trusted to be this
codec's own output — which never holds ``metadata.resourceVersion`` — and the
resourceVersion is spliced into the bytes right after ``"metadata":{``: no parse, no
re-encode (about 1 µs against 9 µs for a 2.8 KB pod). The dict is then decoded lazily,
only if someone asks for ``StoredObject.obj``. Anything else (kube-apiserver's own
JSON, hand-written values) is parsed, modified and re-encoded.

Every decode goes through ``decode_object``, the one function that turns a value into a
dict, and every failure is ``CorruptObject`` (kube-apiserver's corrupt-object error): a
value that is neither a JSON object, a YAML mapping nor a ``k8s\\0`` protobuf envelope
the schema decodes.

Media types (kube-apiserver's ``--storage-media-type``): a storage's :class:`Codec`
picks what it writes; protobuf (``k8s\x00`` + ``runtime.Unknown``, see
``storage.protobuf``) and YAML are additions to the JSON path above, chosen by the value's
first bytes on read whatever the setting, so a store written half in one and half in
another (or by kube-apiserver itself) reads back. ``StoredObject.data`` stays JSON; a
version read from a protobuf value remembers that value (``STORED_PROTOBUF``) so a
protobuf answer starts from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from storage import known_versions, media_types
from storage.errors import CorruptObject
from storage.interfaces import JSONObject, StoredObject

_SORT = orjson.OPT_SORT_KEYS
_LEADING = ("apiVersion", "kind", "metadata")
_DROPPED_META = ("resourceVersion", "selfLink")

# kube-apiserver's protobuf envelope (runtime.Unknown behind a 4-byte magic)
PROTOBUF_MAGIC = media_types.MAGIC

# Matches the head of a canonical encoding: apiVersion and kind strings (JSON escapes
# allowed), then the opening brace of metadata. Inside a JSON string every '"' is
# escaped, so this cannot match text inside a value.
_CANONICAL_HEAD = re.compile(
    rb'\{"apiVersion":"(?:[^"\\]|\\.)*","kind":"(?:[^"\\]|\\.)*","metadata":\{'
)


@dataclass(frozen=True)
class Codec:
    """What one resource's storage writes (kube-apiserver's ``--storage-media-type``,
    chosen per resource by the storage factory): ``application/json`` (this module's
    canonical encoding, the default), ``application/yaml`` or
    ``application/vnd.kubernetes.protobuf``. Reads do not depend on it: a value's first
    bytes say how it decodes. Each storage holds its own, so two servers in one process
    may store differently."""

    other: media_types.Encoder | None = None  # None: JSON, this module's own encoding

    @property
    def media_type(self) -> str:
        return self.other.media_type if self.other is not None else media_types.JSON

    def encode(self, obj: JSONObject) -> bytes:
        """The storage bytes of ``obj`` in this codec's media type (not modified;
        resourceVersion and selfLink are left out); TypeError for values JSON cannot
        represent."""
        if self.other is not None:
            return self.other(obj, _encode_json)
        return _encode_json(obj)


JSON_CODEC = Codec()


def codec_for(media_type: str) -> Codec:
    """The codec writing ``media_type``; ValueError for an unknown one,
    SchemaUnavailable if protobuf's schema cannot be loaded."""
    return Codec(media_types.encoder(media_type))


def encode(obj: JSONObject) -> bytes:
    """The canonical JSON bytes of ``obj`` (what :data:`JSON_CODEC` writes)."""
    return _encode_json(obj)


def _encode_json(obj: JSONObject) -> bytes:
    """The canonical JSON bytes of ``obj`` (see the module docstring)."""
    parts: list[bytes] = []
    meta = obj.get("metadata")
    if isinstance(meta, dict) and any(k in meta for k in _DROPPED_META):
        meta = {k: v for k, v in meta.items() if k not in _DROPPED_META}
    for name in _LEADING:
        if name in obj:
            value = meta if name == "metadata" else obj[name]
            parts.append(_member(name, value))
    for name in sorted(k for k in obj if k not in _LEADING):
        parts.append(_member(name, obj[name]))
    return b"{" + b",".join(parts) + b"}"


def _member(name: str, value: Any) -> bytes:
    return orjson.dumps(name) + b":" + orjson.dumps(value, option=_SORT)


# a canonical value with fewer brackets than this cannot nest past orjson's 1024 levels
_SHALLOW_BRACKETS = 1000


def _reads_as_is(value: bytes) -> bool:
    """Whether canonical JSON bytes may be served without parsing them: valid UTF-8
    and too few brackets to nest past the decoders' depth (C-speed checks). Any other
    value is parsed (``decode_object``): repaired as Go reads it, or CorruptObject."""
    if value.count(b"{") + value.count(b"[") >= _SHALLOW_BRACKETS:
        return False
    if value.isascii():
        return True
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _decode_as_go(key: str, value: bytes, resource_version: int, err: Exception) -> Any:
    """A JSON value orjson refused, read as Go's decoder reads it: each invalid UTF-8
    sequence in a string as U+FFFD (kube-apiserver serves such a value, and deletes it,
    as any other). CorruptObject for what is still not JSON (truncated, nested past
    1024 levels: Go reads up to 10,000, docs/security.md)."""
    try:
        return orjson.loads(value.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        raise CorruptObject(key, str(err), resource_version) from err


def splice_resource_version(value: bytes, resource_version: int) -> bytes | None:
    """``value`` (as stored: no resourceVersion) with ``metadata.resourceVersion``
    spliced in, or None when ``value`` is not a canonical encoding (the caller falls back
    to decode-modify-encode)."""
    head = _CANONICAL_HEAD.match(value)
    if head is None or not value.endswith(b"}"):
        return None
    end = head.end()
    sep = b'"' if value[end] == 125 else b'",'  # 125: "}" — empty metadata
    rv = b'"resourceVersion":"%d' % resource_version
    return b"".join((value[:end], rv, sep, value[end:]))


def decode(
    key: str, value: bytes, resource_version: int, *, keep_obj: bool = False
) -> StoredObject:
    """The stored object at ``key`` with ``metadata.resourceVersion`` = ``resource_version``.

    Canonical values are spliced and their dict decoded lazily; with ``keep_obj`` the
    value is parsed now (the caller needs the dict, e.g. to match a selector) and the
    dict (resourceVersion set) is kept on the StoredObject. CorruptObject if a
    value that must be parsed is not a JSON object.
    """
    known = known_versions.find(key, resource_version)
    if known is not None:  # the version a watch cache holds: its bytes, decoded once
        if keep_obj:
            _ = known.obj  # the copy's own dict
        return known
    if value.startswith(PROTOBUF_MAGIC):  # protobuf: its canonical JSON, decoded once
        canonical = media_types.canonical_json(key, value, _encode_json, resource_version)
        stored = decode(key, canonical, resource_version, keep_obj=keep_obj)
        stored.remember(media_types.STORED_PROTOBUF, value)  # protobuf answers start here
        return stored
    data = splice_resource_version(value, resource_version) if _reads_as_is(value) else None
    if data is not None and not keep_obj:
        return StoredObject(key, data, resource_version)
    obj = decode_object(key, value, resource_version)
    _set_resource_version(key, obj, resource_version)
    if data is None:
        data = orjson.dumps(obj)
    return StoredObject(key, data, resource_version, obj)


def decode_object(key: str, value: bytes, resource_version: int = 0) -> JSONObject:
    """The stored dict as written (no resourceVersion). CorruptObject (naming ``key`` and
    the value's ``resource_version``) for anything that does not decode to an object:
    JSON, YAML, or protobuf (``k8s\\0``: decoded through its canonical JSON, at most once
    per value while it stays in ``media_types``' cache)."""
    if value.startswith(PROTOBUF_MAGIC):
        value = media_types.canonical_json(key, value, _encode_json, resource_version)
    elif not value.startswith(b"{"):
        return media_types.decode_yaml(key, value, resource_version)
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError as err:
        obj = _decode_as_go(key, value, resource_version, err)
    if not isinstance(obj, dict):
        raise CorruptObject(key, f"not a JSON object: {type(obj).__name__}", resource_version)
    return obj


def from_parsed(key: str, value: bytes, resource_version: int, obj: JSONObject) -> StoredObject:
    """The StoredObject for ``value`` already parsed into ``obj`` (by ``decode_object``;
    the dict is taken over and gets the resourceVersion)."""
    _set_resource_version(key, obj, resource_version)
    data = splice_resource_version(value, resource_version) if _reads_as_is(value) else None
    if data is None:
        data = orjson.dumps(obj)
    stored = StoredObject(key, data, resource_version, obj)
    if value.startswith(PROTOBUF_MAGIC):
        stored.remember(media_types.STORED_PROTOBUF, value)  # protobuf answers start here
    return stored


def mutable_copy(stored: StoredObject) -> JSONObject:
    """A private, mutable dict of ``stored`` (resourceVersion set); CorruptObject if its
    bytes do not parse."""
    return decode_object(stored.key, stored.data, stored.resource_version)


def with_resource_version(stored: StoredObject, resource_version: int) -> StoredObject:
    """``stored`` re-encoded with ``metadata.resourceVersion`` = ``resource_version`` (a
    DELETED event's last state carries the deletion revision): one decode and encode,
    paid once per such event and shared by every watcher."""
    obj = mutable_copy(stored)
    _set_resource_version(stored.key, obj, resource_version)
    return StoredObject(stored.key, orjson.dumps(obj), resource_version)


def _set_resource_version(key: str, obj: JSONObject, resource_version: int) -> None:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise CorruptObject(key, "metadata is not an object", resource_version)
    meta["resourceVersion"] = str(resource_version)
    meta.pop("selfLink", None)


def stored_from_encoded(
    key: str, encoded: bytes, resource_version: int, obj: JSONObject | None = None
) -> StoredObject:
    """A StoredObject from bytes this codec just encoded (no validation needed).

    ``obj``, if given, must be a dict the caller gives up; its resourceVersion is set.
    """
    if encoded.startswith(PROTOBUF_MAGIC):
        # the object as it reads back from protobuf (``obj`` may hold members protobuf
        # normalises: null pointers, fractional Time seconds), remembering the value
        canonical = media_types.canonical_json(key, encoded, _encode_json, resource_version)
        stored = stored_from_encoded(key, canonical, resource_version)
        stored.remember(media_types.STORED_PROTOBUF, encoded)
        return stored
    data = splice_resource_version(encoded, resource_version)
    if data is None:
        parsed = obj if obj is not None else decode_object(key, encoded, resource_version)
        _set_resource_version(key, parsed, resource_version)
        return StoredObject(key, orjson.dumps(parsed), resource_version, parsed)
    if obj is not None:
        _set_resource_version(key, obj, resource_version)
    return StoredObject(key, data, resource_version, obj)
