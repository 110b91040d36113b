"""The JSON codec between objects and etcd values (SEMANTICS.md §1), serializing once.

Write: ``encode(obj)`` drops ``metadata.resourceVersion`` and ``metadata.selfLink`` (as
kube-apiserver's versioner does before storage) and produces the *canonical* encoding:
``apiVersion``, ``kind``, ``metadata`` first, then the other top-level fields in
sorted order, and every nested object with sorted keys. Equal objects therefore encode
to equal bytes whatever their key order, which is what lets an update that changes
nothing be recognised by a byte comparison and skipped.

Read: ``decode(key, value, rv)`` returns a ``StoredObject`` whose ``data`` carries
``metadata.resourceVersion = rv``. For canonical values (the ones this codec wrote) the
resourceVersion is spliced into the bytes right after ``"metadata":{`` — no re-encode;
anything else (written by another tool, or containing a ``resourceVersion`` key that
the splice would duplicate) takes the slow path, decode-modify-encode. Undecodable
values raise ``InternalStorageError``.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from storage.errors import InternalStorageError
from storage.interfaces import JSONObject, StoredObject

_SORT = orjson.OPT_SORT_KEYS
_LEADING = ("apiVersion", "kind", "metadata")
_DROPPED_META = ("resourceVersion", "selfLink")

# Matches the head of a canonical encoding: apiVersion and kind strings (JSON escapes
# allowed), then the opening brace of metadata. Inside a JSON string every '"' is
# escaped, so this cannot match text inside a value.
_CANONICAL_HEAD = re.compile(
    rb'\{"apiVersion":"(?:[^"\\]|\\.)*","kind":"(?:[^"\\]|\\.)*","metadata":\{'
)
_RV_KEY = b'"resourceVersion":'


def encode(obj: JSONObject) -> bytes:
    """The canonical storage bytes of ``obj`` (not modified; resourceVersion and selfLink
    are left out of the encoding). TypeError for values JSON cannot represent."""
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


def with_resource_version(value: bytes, resource_version: int) -> bytes | None:
    """``value`` with ``metadata.resourceVersion`` spliced in, or None when ``value`` is
    not a canonical encoding the splice is safe for (the caller falls back)."""
    head = _CANONICAL_HEAD.match(value)
    if head is None or _RV_KEY in value:
        return None
    end = head.end()
    rv = b'"resourceVersion":"' + str(resource_version).encode() + b'"'
    if value[end : end + 1] != b"}":
        rv += b","
    return value[:end] + rv + value[end:]


def decode(key: str, value: bytes, resource_version: int, *, keep_obj: bool = True) -> StoredObject:
    """The stored object at ``key`` with ``metadata.resourceVersion`` = ``resource_version``.

    The value is always parsed (a corrupt value must fail here, not in the middle of a
    streamed response); ``keep_obj`` keeps the parsed dict (with the resourceVersion
    set) on the StoredObject so that selectors and callers need not parse again.
    """
    obj = _loads(key, value)
    _set_resource_version(key, obj, resource_version)
    data = with_resource_version(value, resource_version)
    if data is None:
        data = orjson.dumps(obj)
    return StoredObject(key, data, resource_version, obj if keep_obj else None)


def decode_object(key: str, value: bytes) -> JSONObject:
    """The stored dict as written (no resourceVersion); InternalStorageError if corrupt."""
    return _loads(key, value)


def _loads(key: str, value: bytes) -> JSONObject:
    try:
        obj = orjson.loads(value)
    except orjson.JSONDecodeError as err:
        raise InternalStorageError(f"unable to decode object at {key}: {err}", key) from err
    if not isinstance(obj, dict):
        raise InternalStorageError(f"unable to decode object at {key}: not a JSON object", key)
    return obj


def _set_resource_version(key: str, obj: JSONObject, resource_version: int) -> None:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise InternalStorageError(f"unable to decode object at {key}: bad metadata", key)
    meta["resourceVersion"] = str(resource_version)
    meta.pop("selfLink", None)


def stored_from_encoded(
    key: str, encoded: bytes, resource_version: int, obj: JSONObject | None = None
) -> StoredObject:
    """A StoredObject from bytes this codec just encoded (no validation needed).

    ``obj``, if given, must be a dict the caller gives up; its resourceVersion is set.
    """
    data = with_resource_version(encoded, resource_version)
    if data is None:
        parsed = obj if obj is not None else _loads(key, encoded)
        _set_resource_version(key, parsed, resource_version)
        return StoredObject(key, orjson.dumps(parsed), resource_version, parsed)
    if obj is not None:
        _set_resource_version(key, obj, resource_version)
    return StoredObject(key, data, resource_version, obj)
