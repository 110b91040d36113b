"""Kubernetes' protobuf serializer: ``k8s\\x00`` + ``runtime.Unknown`` around an object.

``runtime.Unknown`` is ``{typeMeta{apiVersion, kind} = 1, raw = 2, contentEncoding = 3,
contentType = 4}``; ``raw`` holds the object's message (``k8s.io.api.core.v1.Pod``),
which has no apiVersion/kind of its own. kube-apiserver writes this to etcd, answers
``application/vnd.kubernetes.protobuf`` with it, and frames watch events as a 4-byte
big-endian length, then ``WatchEvent{type, object: RawExtension{raw = <the object,
envelope included>}}`` without an envelope of its own.

``Serializer`` is the schema's front: ``encode(obj)`` / ``decode(data)`` for any kind
the schema knows (built-in API types, ``meta.k8s.io`` types such as Status and
WatchEvent; not custom resources, which upstream serves as JSON only).
"""

from __future__ import annotations

import struct
import threading
from typing import Any

from storage.protobuf import native
from storage.protobuf.codegen import Compiler
from storage.protobuf.converter import ConversionError, Report
from storage.protobuf.plans import Message, compile_plans
from storage.protobuf.schema import RawSchema, load_raw
from storage.protobuf.wire import WireError, bytes_field, last_fields, read_varint, varint

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
# kinds that meta.k8s.io/v1 defines but that are served with apiVersion "v1" as well
_META_KINDS = ("Status", "WatchEvent", "APIVersions", "APIGroupList", "APIGroup",
               "APIResourceList", "List", "DeleteOptions")  # fmt: skip


class NotRegistered(KeyError):
    """The schema has no message for this apiVersion/kind (a custom resource, a kind
    newer than the schema): kube's ``no kind "X" is registered for version "v"``."""

    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(kind)
        self.api_version = api_version
        self.kind = kind

    def __str__(self) -> str:
        return f'no kind "{self.kind}" is registered for version "{self.api_version}"'


class Unknown:
    """A decoded envelope."""

    __slots__ = ("api_version", "content_encoding", "content_type", "kind", "raw")

    def __init__(
        self, api_version: str, kind: str, raw: bytes, content_encoding: str, content_type: str
    ) -> None:
        self.api_version = api_version
        self.kind = kind
        self.raw = raw
        self.content_encoding = content_encoding
        self.content_type = content_type


def wrap(api_version: str, kind: str, raw: bytes) -> bytes:
    """``k8s\\x00`` + Unknown, as upstream writes it (empty contentEncoding/Type)."""
    av, kd = api_version.encode(), kind.encode()
    type_meta = b"\x0a" + varint(len(av)) + av + b"\x12" + varint(len(kd)) + kd
    return b"".join(
        (MAGIC, b"\x0a", varint(len(type_meta)), type_meta, b"\x12", varint(len(raw)), raw,
         b"\x1a\x00\x22\x00")
    )  # fmt: skip


def unwrap(data: bytes) -> Unknown:
    """The envelope of ``data``; ConversionError without the magic or if malformed."""
    if not data.startswith(MAGIC):
        raise ConversionError("provided data does not appear to be a protobuf message, "
                              f"expected prefix [{' '.join(map(str, MAGIC))}]")  # fmt: skip
    try:
        fields = last_fields(data, len(MAGIC))
        type_meta = last_fields(bytes_field(fields, 1))
        return Unknown(
            _text(type_meta, 1),
            _text(type_meta, 2),
            bytes_field(fields, 2),
            _text(fields, 3),
            _text(fields, 4),
        )
    except WireError as err:
        raise ConversionError(str(err)) from None


def _text(fields: dict[int, bytes | int], number: int) -> str:
    return bytes_field(fields, number).decode("utf-8", "replace")


def with_resource_version(value: bytes, resource_version: int) -> bytes | None:
    """``value`` (an enveloped object whose first field is its ObjectMeta, as every
    stored object) with ``metadata.resourceVersion`` set, in the bytes upstream writes
    for the same object; None if ``value`` is not laid out so (the caller encodes)."""
    try:
        pos = len(MAGIC)
        if not value.startswith(MAGIC) or value[pos] != 0x0A:
            return None
        size, pos = read_varint(value, pos + 1)
        head_end = pos + size  # end of typeMeta
        if value[head_end] != 0x12:
            return None
        raw_size, raw_start = read_varint(value, head_end + 1)
        raw_end = raw_start + raw_size
        if raw_start >= raw_end or value[raw_start] != 0x0A:
            return None
        meta_size, meta_start = read_varint(value, raw_start + 1)
        meta_end = meta_start + meta_size
        # ObjectMeta fields in number order: resourceVersion (6) goes before the first
        # field numbered above 6, replacing an empty or old one
        pos = cut = meta_start
        cut_end = meta_start
        while pos < meta_end:
            tag, after = read_varint(value, pos)
            if tag >> 3 > 6:
                break
            if tag & 7 == 2:
                length, after = read_varint(value, after)
                after += length
            elif tag & 7 == 0:
                _, after = read_varint(value, after)
            else:
                return None
            if tag == 0x32:
                cut, cut_end = pos, after
                break
            pos = cut = cut_end = after
    except IndexError:
        return None
    rv = str(resource_version).encode()
    meta = b"".join((value[meta_start:cut], b"\x32", varint(len(rv)), rv, value[cut_end:meta_end]))
    raw = b"\x0a" + varint(len(meta)) + meta + value[meta_end:raw_end]
    return b"".join((value[:head_end], b"\x12", varint(len(raw)), raw, value[raw_end:]))


def frame(data: bytes) -> bytes:
    """One length-delimited frame (watch streams): 4-byte big-endian length + data."""
    return struct.pack(">I", len(data)) + data


class Serializer:
    """Encodes and decodes objects of the kinds the schema knows (thread-safe, stateless)."""

    def __init__(self, raw: RawSchema) -> None:
        self.raw = raw
        self.messages = compile_plans(raw)
        self.compiler = Compiler(self.messages)
        self._kinds: dict[tuple[str, str, str], Message] = {}
        for package, facts in raw.packages.items():
            group = facts["group"]
            if group is None:
                continue
            version = package.rsplit(".", 1)[1]
            prefix = package + "."
            for name, msg in self.messages.items():
                if name.startswith(prefix) and "." not in name[len(prefix) :]:
                    self._kinds[(group, version, name[len(prefix) :])] = msg
        for kind in _META_KINDS:
            self._kinds[("", "v1", kind)] = self.messages[f"{_META}.{kind}"]
        for msg in self._kinds.values():
            # a kind's Go struct inlines TypeMeta, which protobuf leaves out (the envelope
            # carries it): apiVersion/kind members, e.g. of list items, are not lost data
            msg.json_names = msg.json_names | {"apiVersion", "kind"}
        # the C decoder answers what it can, exactly as the Python one would (native.py)
        self.native, self._index = native.build(
            self.messages, self._kinds, self.compiler.decoders, self.decode_python
        )
        # the C method itself when there is one: no Python frame on the fast path
        self.decode: native.Fallback = (
            self.decode_python if self.native is None else self.native.decode_or_fallback
        )

    def _encode(self, msg: Message, obj: dict[str, Any], report: Report) -> bytes:
        return self.compiler.encoder(msg)(obj, report, "", False)

    def message(self, api_version: str, kind: str) -> Message:
        """The plan for ``apiVersion``/``kind``; NotRegistered if the schema lacks it."""
        group, _, version = api_version.rpartition("/")
        msg = self._kinds.get((group, version, kind))
        if msg is None:
            raise NotRegistered(api_version, kind)
        return msg

    def knows(self, api_version: str, kind: str) -> bool:
        group, _, version = api_version.rpartition("/")
        return (group, version, kind) in self._kinds

    def encode(self, obj: dict[str, Any], report: Report | None = None) -> bytes:
        """``k8s\\x00`` + Unknown around ``obj`` (its apiVersion and kind pick the
        message). NotRegistered, ConversionError; unknown members go to ``report``."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            raise ConversionError("Object 'Kind' is missing")
        msg = self.message(api_version, kind)
        report = report if report is not None else Report()
        body = obj
        if "apiVersion" in obj or "kind" in obj:
            body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        return wrap(api_version, kind, self._encode(msg, body, report))

    def encode_raw(self, api_version: str, kind: str, obj: dict[str, Any],
                   report: Report | None = None) -> bytes:  # fmt: skip
        """The message bytes of ``obj`` without the envelope."""
        report = report if report is not None else Report()
        return self._encode(self.message(api_version, kind), obj, report)

    def encode_message(self, name: str, obj: dict[str, Any]) -> bytes:
        """The bytes of message ``name`` (a full proto name) for ``obj``, no envelope."""
        return self._encode(self.messages[name], obj, Report())

    def decode_python(self, data: bytes, report: Report | None = None) -> dict[str, Any]:
        """The JSON object of an enveloped value (apiVersion and kind first).
        ConversionError (bad magic, malformed), NotRegistered. By the Python decoder
        alone (the reference of the C one); ``decode(data, report=None)`` is the same
        function, by the C decoder when it is built."""
        unknown = unwrap(data)
        if unknown.content_encoding or unknown.content_type not in ("", MEDIA_TYPE):
            raise ConversionError(
                f"unsupported envelope content {unknown.content_type!r}"
                f"/{unknown.content_encoding!r}"
            )
        return self._decode_raw(self.message(unknown.api_version, unknown.kind),
                                unknown.api_version, unknown.kind, unknown.raw, report)

    def decode_raw(self, api_version: str, kind: str, raw: bytes,
                   report: Report | None = None) -> dict[str, Any]:  # fmt: skip
        """The JSON object of ``raw``, a message of ``kind`` (no envelope)."""
        msg = self.message(api_version, kind)
        if self.native is not None and type(raw) is bytes:
            obj = self.native.decode_raw(self._index[msg.name], api_version, kind, raw, report)
            if obj is not None:
                return obj
        return self._decode_raw(msg, api_version, kind, raw, report)

    def _decode_raw(self, msg: Message, api_version: str, kind: str, raw: bytes,
                    report: Report | None) -> dict[str, Any]:  # fmt: skip
        report = report if report is not None else Report()
        try:
            body = self.compiler.decoder(msg)(raw, report)
        except WireError as err:
            raise ConversionError(str(err)) from None
        except IndexError:
            raise ConversionError("unexpected EOF") from None
        except (ValueError, OverflowError) as err:
            # well-formed wire data holding what JSON cannot: a string field that is not
            # UTF-8 (UnicodeDecodeError), a Time out of range
            raise ConversionError(f"invalid value: {err}") from None
        except RecursionError:
            # messages nested past the interpreter's stack (a JSONSchemaProps in itself,
            # thousands deep): a bad body, as encoding/json's "exceeded max depth"
            raise ConversionError("invalid value: messages nested too deeply") from None
        return {"apiVersion": api_version, "kind": kind, **body}


_lock = threading.Lock()
_serializer: Serializer | None = None


def get_serializer() -> Serializer:
    """The process's serializer, built on first use (SchemaUnavailable if it cannot be)."""
    global _serializer
    with _lock:
        if _serializer is None:
            _serializer = Serializer(load_raw())
        return _serializer
