"""Storage media types besides the codec's own JSON: protobuf and YAML.

Write (``encoder``): kube-apiserver's ``--storage-media-type``. Protobuf writes what
kube-apiserver writes (``k8s\\x00`` + ``runtime.Unknown``), except where protobuf would
lose something, where the object is written as JSON instead (reads accept both): kinds
the schema has no message for (custom resources — upstream stores them as JSON too),
and objects with members the k8s.io/api 0.32 schema has no field for (API fields newer
than the schema). Each such fallback is logged once per kind and reason.

Read (``storage.codec.decode_object``, the one decoder, calls ``canonical_json`` or
``decode_yaml``): a value that starts with ``k8s\\x00`` is protobuf, anything else not
starting with ``{`` is tried as YAML. Wire fields the schema does not know (written by a
newer kube-apiserver) cannot appear in the JSON view: they are logged once per field.
Failures are ``CorruptObject`` naming the key and the value's revision (a value that is
not valid protobuf for the schema, or protobuf with no schema to read it).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable

import orjson
import yaml

from storage import known_versions
from storage.errors import CorruptObject
from storage.interfaces import STORED_VALUE, JSONObject
from storage.protobuf.converter import ConversionError, Report
from storage.protobuf.errors import SchemaUnavailable
from storage.protobuf.serializer import MAGIC, NotRegistered, Serializer, get_serializer

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
MEDIA_TYPES = (JSON, YAML, PROTOBUF)
# the name under which a StoredObject read from a protobuf value keeps that value
STORED_PROTOBUF = STORED_VALUE  # PROTOBUF + ";stored"
__all__ = ["MAGIC", "MEDIA_TYPES", "PROTOBUF", "STORED_PROTOBUF", "Encoder", "canonical_json",
           "decode_yaml", "encoder"]  # fmt: skip
_DROPPED_META = ("resourceVersion", "selfLink")

log = logging.getLogger(__name__)
_logged: set[str] = set()


def _log_once(message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        log.warning("%s", message)


JSONEncoder = Callable[[JSONObject], bytes]


class Encoder:
    """Writes one media type; ``encoder(obj, encode_json)`` → the stored bytes."""

    media_type = JSON

    def __call__(self, obj: JSONObject, encode_json: JSONEncoder) -> bytes:
        return encode_json(obj)


class YAMLEncoder(Encoder):
    media_type = YAML

    def __call__(self, obj: JSONObject, encode_json: JSONEncoder) -> bytes:
        canonical = orjson.loads(encode_json(obj))  # same order and omissions as JSON
        return yaml.safe_dump(canonical, sort_keys=False).encode()


# Served in protobuf but stored as JSON, as kube-apiserver does: the apiextensions and
# aggregator servers set their storage codec to a JSON LegacyCodec whatever
# --storage-media-type says.
JSON_STORED_GROUPS = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})


class ProtobufEncoder(Encoder):
    media_type = PROTOBUF

    def __init__(self, serializer: Serializer) -> None:
        self.serializer = serializer

    def __call__(self, obj: JSONObject, encode_json: JSONEncoder) -> bytes:
        meta = obj.get("metadata")
        body = obj
        if isinstance(meta, dict) and any(k in meta for k in _DROPPED_META):
            body = dict(obj)
            body["metadata"] = {k: v for k, v in meta.items() if k not in _DROPPED_META}
        report = Report()
        api_version = obj.get("apiVersion")
        kind = f"{api_version}/{obj.get('kind')}"
        if isinstance(api_version, str) and api_version.partition("/")[0] in JSON_STORED_GROUPS:
            return encode_json(obj)
        try:
            data = self.serializer.encode(body, report)
        except NotRegistered:
            return encode_json(obj)  # custom resources: JSON, as upstream
        except ConversionError as err:
            _log_once(f"{kind} stored as JSON: not representable in protobuf ({err})")
            return encode_json(obj)
        if report.unknown_json:
            _log_once(
                f"{kind} stored as JSON: the protobuf schema has no field for "
                f"{', '.join(report.unknown_json)}"
            )
            return encode_json(obj)
        return data


def encoder(media_type: str) -> Encoder | None:
    """The encoder for ``media_type`` (None for JSON, the codec's own); ValueError for
    an unknown one, SchemaUnavailable when protobuf's schema cannot be loaded."""
    if media_type == JSON:
        return None
    if media_type == YAML:
        return YAMLEncoder()
    if media_type == PROTOBUF:
        return ProtobufEncoder(get_serializer())
    raise ValueError(f"unsupported storage media type {media_type!r}: one of {MEDIA_TYPES}")


# Decoded once per stored value: a protobuf value's canonical JSON, keyed by the value's
# bytes (a key's value at one mod_revision never changes), least recently used first
# out past DECODED_CACHE_BYTES. Python decodes protobuf ~10x slower than orjson parses
# JSON; with this, re-reading an unchanged object (an uncached LIST, a re-list) costs a
# hash and a splice, as the JSON path does.
DECODED_CACHE_BYTES = 128 * 1024 * 1024
_decoded: OrderedDict[bytes, bytes] = OrderedDict()
_decoded_bytes = 0


def canonical_json(
    key: str, value: bytes, encode_json: JSONEncoder, resource_version: int = 0
) -> bytes:
    """The canonical JSON (``encode_json``) of the protobuf ``value`` stored at ``key``
    (mod_revision ``resource_version``), decoded at most once while it stays in the
    cache; CorruptObject if it is not protobuf the schema decodes."""
    global _decoded_bytes
    found = _decoded.get(value)
    if found is not None:
        _decoded.move_to_end(value)
        return found
    found = encode_json(_decode_protobuf(key, value, resource_version))
    if known_versions.holds_prefix(key):
        return found  # a watch cache keeps this version: no second copy here
    _decoded[value] = found
    _decoded_bytes += len(value) + len(found)
    while _decoded_bytes > DECODED_CACHE_BYTES and _decoded:
        old_value, old_json = _decoded.popitem(last=False)
        _decoded_bytes -= len(old_value) + len(old_json)
    return found


def decode_yaml(key: str, value: bytes, resource_version: int = 0) -> JSONObject:
    """The object in the YAML ``value``; CorruptObject if it is not a YAML mapping."""
    try:
        obj = yaml.safe_load(value)
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as err:
        raise CorruptObject(key, str(err), resource_version) from err
    if not isinstance(obj, dict):
        raise CorruptObject(key, f"not an object: {type(obj).__name__}", resource_version)
    return obj


def _decode_protobuf(key: str, value: bytes, resource_version: int) -> JSONObject:
    try:
        serializer = get_serializer()
    except SchemaUnavailable as err:
        raise CorruptObject(key, f"protobuf schema unavailable: {err}", resource_version) from err
    report = Report()
    try:
        obj = serializer.decode(value, report)
    except (ConversionError, NotRegistered) as err:
        raise CorruptObject(key, str(err), resource_version) from err
    if report.unknown_fields:
        _log_once(
            f"protobuf fields unknown to the k8s.io/api 0.32 schema are not shown "
            f"(first at {key}): {', '.join(sorted(set(report.unknown_fields)))}"
        )
    return obj
