"""Kubernetes JSON ⇄ protobuf wire bytes, driven by the message plans.

``encode(message, obj)`` writes what upstream's ``generated.pb.go`` Marshal writes for
the Go object that ``obj`` (the JSON form) decodes into: fields in number order, value
fields always (``""``, ``0``, ``false``, empty messages), pointer, slice, map and
``[]byte`` fields only when set, map entries sorted by key with both key and value,
negative ints as 10-byte varints, Time as seconds (nanos 0), MicroTime with microsecond
nanos, and the zero Time as an empty message.

``decode(message, data)`` gives the JSON that encoding/json would print for the Go
object: value scalars unless ``omitempty`` and zero, value structs always (so
``creationTimestamp: null``, ``status: {}``), nil slices/maps as null unless
``omitempty``, pointers only when present.

Both report what the schema (k8s.io/api 0.32) cannot carry instead of dropping it
silently: ``Report.unknown_json`` (JSON members without a proto field: newer API
fields) and ``Report.unknown_fields`` (wire fields without a JSON name: written by a
newer kube-apiserver). A JSON value of the wrong type raises ``ConversionError``.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
import struct
from typing import Any

import orjson

from storage.protobuf.plans import (
    BOOL,
    BYTES,
    DOUBLE,
    INT32,
    INT64,
    MAP,
    MESSAGE,
    STRING,
    Field,
    Message,
)
from storage.protobuf.wire import (
    WireError,
    bytes_field,
    int_field,
    last_fields,
    read_varint,
    varint,
)

_ZERO_TIME = -62135596800  # Go's time.Time{}.Unix(): 0001-01-01T00:00:00Z


class ConversionError(WireError):
    """A JSON value that its field cannot hold, or bytes that are not a valid message."""


class Report:
    """What a conversion could not carry (see the module docstring)."""

    __slots__ = ("unknown_fields", "unknown_json")

    def __init__(self) -> None:
        self.unknown_json: list[str] = []
        self.unknown_fields: list[str] = []


# ---------------------------------------------------------------- JSON -> wire


def encode(
    msg: Message, obj: Any, report: Report, path: str = "", *, inline: bool = False
) -> bytes:
    """The wire bytes of ``msg`` for the JSON value ``obj`` (no tag, no length);
    ``inline``: ``obj`` is the parent's object, whose other members are not ours."""
    if msg.special is not None:
        return _encode_special(msg, obj, path, report)
    if obj is None:
        obj = {}
    if not isinstance(obj, dict):
        raise ConversionError(f"{path or '.'}: expected an object, got {_json_type(obj)}")
    parts: list[bytes] = []
    for field in msg.fields:
        if field.inline:
            assert field.message is not None
            body = encode(field.message, obj, report, path, inline=True)
            parts += (field.tag, varint(len(body)), body)
            continue
        value = obj.get(field.json)
        if value is None:
            if field.pointer or field.repeated or field.kind in (MAP, BYTES):
                continue
            value = _ZEROS.get(field.kind)
        where = f"{path}.{field.json}"
        if field.kind == MAP:
            _encode_map(field, value, parts, report, where)
        elif field.repeated:
            if not isinstance(value, list):
                raise ConversionError(f"{where}: expected an array, got {_json_type(value)}")
            for i, item in enumerate(value):
                _encode_value(field, item, parts, report, f"{where}[{i}]")
        else:
            _encode_value(field, value, parts, report, where)
    if not inline and not msg.json_names.issuperset(obj):
        report.unknown_json += (f"{path}.{k}" for k in obj if k not in msg.json_names)
    return b"".join(parts)


_ZEROS: dict[int, Any] = {STRING: "", BOOL: False, INT32: 0, INT64: 0, DOUBLE: 0, MESSAGE: None}


def _encode_value(field: Field, value: Any, parts: list[bytes], report: Report, where: str) -> None:
    kind = field.kind
    if kind == STRING:
        if not isinstance(value, str):
            raise ConversionError(f"{where}: expected a string, got {_json_type(value)}")
        data = value.encode()
        parts += (field.tag, varint(len(data)), data)
    elif kind == MESSAGE:
        assert field.message is not None
        body = encode(field.message, value, report, where)
        parts += (field.tag, varint(len(body)), body)
    elif kind in (INT32, INT64):
        parts += (field.tag, varint(_integer(value, where)))
    elif kind == BOOL:
        if not isinstance(value, bool):
            raise ConversionError(f"{where}: expected a boolean, got {_json_type(value)}")
        parts += (field.tag, b"\x01" if value else b"\x00")
    elif kind == DOUBLE:
        parts += (field.tag, pack_double(value, where))
    else:  # BYTES
        data = _base64(value, where)
        parts += (field.tag, varint(len(data)), data)


def _encode_map(field: Field, value: Any, parts: list[bytes], report: Report, where: str) -> None:
    if not isinstance(value, dict):
        raise ConversionError(f"{where}: expected an object, got {_json_type(value)}")
    value_field = field.map_value
    assert value_field is not None
    for key in sorted(value):
        item = value[key]
        entry: list[bytes] = []
        encoded_key = key.encode()
        entry += (b"\x0a", varint(len(encoded_key)), encoded_key)
        if item is not None or value_field.kind != BYTES:
            if item is None:
                item = _ZEROS.get(value_field.kind)
            _encode_value(value_field, item, entry, report, f"{where}[{key}]")
        body = b"".join(entry)
        parts += (field.tag, varint(len(body)), body)


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConversionError(f"{where}: expected a number, got {_json_type(value)}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ConversionError(f"{where}: expected an integer, got {value}")
        return int(value)
    return value


def pack_double(value: Any, where: str) -> bytes:
    """A float64 field's 8 little-endian bytes (wire type 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConversionError(f"{where}: expected a number, got {_json_type(value)}")
    return struct.pack("<d", value)


def unpack_double(raw: bytes) -> float | int:
    """A float64 as encoding/json prints it: integral values without a fraction."""
    value: float = struct.unpack("<d", raw)[0]
    return int(value) if value.is_integer() and abs(value) < 1e21 else value


def _base64(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise ConversionError(f"{where}: expected a base64 string, got {_json_type(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as err:
        raise ConversionError(f"{where}: illegal base64 data: {err}") from None


def _encode_special(msg: Message, value: Any, where: str, report: Report) -> bytes:
    special = msg.special
    if special is not None and special.startswith("schema_or_"):
        return _encode_union(msg, value, where, report)
    if special in ("time", "microtime"):
        if value is None:
            return b""
        seconds, micros = _parse_time(value, where)
        nanos = micros * 1000 if special == "microtime" else 0
        return b"\x08" + varint(seconds) + b"\x10" + varint(nanos)
    if special == "quantity":
        text = _quantity_text(value, where)
        data = text.encode()
        return b"\x0a" + varint(len(data)) + data
    if special == "intorstring":
        if value is None:
            value = 0
        if isinstance(value, str):
            data = value.encode()
            return b"\x08\x01\x10\x00\x1a" + varint(len(data)) + data
        return b"\x08\x00\x10" + varint(_integer(value, where)) + b"\x1a\x00"
    if special == "duration":
        return b"\x08" + varint(parse_duration(value or "0s", where))
    if special == "raw":
        if value is None:
            return b""
        data = orjson.dumps(value)
        return b"\x0a" + varint(len(data)) + data
    # "list": a named Go slice, JSON is the bare list
    if value is None:
        return b""
    if not isinstance(value, list):
        raise ConversionError(f"{where}: expected an array, got {_json_type(value)}")
    parts: list[bytes] = []
    for item in value:
        if not isinstance(item, str):
            raise ConversionError(f"{where}: expected a string, got {_json_type(item)}")
        data = item.encode()
        parts += (b"\x0a", varint(len(data)), data)
    return b"".join(parts)


def _quantity_text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConversionError(f"{where}: expected a quantity, got {_json_type(value)}")
    return str(value) if isinstance(value, int) or not value.is_integer() else str(int(value))


def _parse_time(value: Any, where: str) -> tuple[int, int]:
    if not isinstance(value, str):
        raise ConversionError(f"{where}: expected an RFC 3339 time, got {_json_type(value)}")
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise ConversionError(f"{where}: not an RFC 3339 time: {value!r}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    delta = parsed - _EPOCH
    return delta.days * 86400 + delta.seconds, delta.microseconds


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 10**6, "s": 10**9,
          "m": 60 * 10**9, "h": 3600 * 10**9}  # fmt: skip
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: Any, where: str = "") -> int:
    """Go's time.ParseDuration: ``"1h2m3.5s"`` → nanoseconds."""
    if not isinstance(text, str):
        raise ConversionError(f"{where}: expected a duration string, got {_json_type(text)}")
    body = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    if body == "0":
        return 0
    total, pos = 0, 0
    for match in _DURATION_PART.finditer(body):
        if match.start() != pos:
            break
        pos = match.end()
        number, unit = match.groups()
        whole, _, frac = number.partition(".")
        scale = _UNITS[unit]
        total += int(whole or 0) * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
    if pos != len(body) or not body:
        raise ConversionError(f"{where}: time: invalid duration {text!r}")
    return sign * total


def format_duration(nanos: int) -> str:
    """Go's time.Duration.String()."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if n < 10**9:
        for unit, scale in (("ms", 10**6), ("µs", 1000), ("ns", 1)):
            if n >= scale:
                return sign + _decimal(n, scale) + unit
    hours, rest = divmod(n, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = _decimal(rest, 10**9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _decimal(value: int, scale: int) -> str:
    whole, frac = divmod(value, scale)
    if not frac:
        return str(whole)
    digits = len(str(scale)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "null" if value is None else "number"
    )


# ---------------------------------------------------------------- wire -> JSON


def decode(msg: Message, data: bytes, report: Report) -> Any:
    """The JSON value encoding/json prints for ``msg`` decoded from ``data``."""
    if msg.special is not None:
        return _decode_special(msg, data, report)
    values: dict[int, Any] = {}
    pos, end = 0, len(data)
    by_number = msg.by_number
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        field = by_number.get(number)
        if wire_type == 0:
            raw, pos = read_varint(data, pos)
            value: Any = raw
        elif wire_type == 2:
            size, pos = read_varint(data, pos)
            if pos + size > end:
                raise ConversionError("unexpected EOF")
            value = data[pos : pos + size]
            pos += size
        elif wire_type == 5:
            value, pos = data[pos : pos + 4], pos + 4
        elif wire_type == 1:
            value, pos = data[pos : pos + 8], pos + 8
        else:
            raise ConversionError(f"proto: {msg.name}: illegal wireType {wire_type}")
        if field is None:
            report.unknown_fields.append(f"{msg.name}#{number}")
            continue
        if wire_type != field.wire_type:
            if field.repeated and wire_type == 2 and field.kind in (BOOL, INT32, INT64):
                values.setdefault(number, []).extend(_packed(value))
                continue
            raise ConversionError(
                f"proto: wrong wireType = {wire_type} for field {field.json or number}"
            )
        if field.kind == MAP or field.repeated:
            values.setdefault(number, []).append(value)
        elif field.kind == MESSAGE and number in values:
            values[number] += value  # a repeated occurrence merges (concatenation merges)
        else:
            values[number] = value
    if pos > end:
        raise ConversionError("unexpected EOF")
    return _to_json(msg, values, report)


def _packed(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        value, pos = read_varint(data, pos)
        out.append(value)
    return out


def _to_json(msg: Message, values: dict[int, Any], report: Report) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in msg.fields:
        raw = values.get(field.number)
        if field.inline:
            assert field.message is not None
            out.update(decode(field.message, raw or b"", report))
            continue
        if raw is None:
            if field.pointer:
                continue
            if field.repeated or field.kind in (MAP, BYTES):
                if not field.omitempty:
                    out[field.json] = None
                continue
            if field.kind == MESSAGE:
                assert field.message is not None
                out[field.json] = decode(field.message, b"", report)
                continue
            if not field.omitempty:
                out[field.json] = _ZEROS[field.kind]
            continue
        if field.kind == MAP:
            out[field.json] = _decode_map(field, raw, report)
        elif field.repeated:
            out[field.json] = [_scalar(field, item, report) for item in raw]
        else:
            value = _scalar(field, raw, report)
            if field.omitempty and not field.pointer and field.kind != MESSAGE and not value:
                continue
            out[field.json] = value
    return out


def _scalar(field: Field, raw: Any, report: Report) -> Any:
    kind = field.kind
    if kind == STRING:
        return bytes(raw).decode("utf-8", "replace")
    if kind == MESSAGE:
        assert field.message is not None
        return decode(field.message, raw, report)
    if kind == INT64:
        return raw - (1 << 64) if raw >> 63 else raw
    if kind == INT32:
        raw &= 0xFFFFFFFF
        return raw - (1 << 32) if raw >> 31 else raw
    if kind == BOOL:
        return bool(raw)
    if kind == DOUBLE:
        return unpack_double(raw)
    return base64.b64encode(raw).decode()


def _decode_map(field: Field, entries: list[bytes], report: Report) -> dict[str, Any]:
    value_field = field.map_value
    assert value_field is not None
    out: dict[str, Any] = {}
    for entry in entries:
        key, value, pos = "", None, 0
        while pos < len(entry):
            tag, pos = read_varint(entry, pos)
            if tag & 7 == 2:
                size, pos = read_varint(entry, pos)
                chunk: Any = entry[pos : pos + size]
                pos += size
            else:
                chunk, pos = read_varint(entry, pos)
            if tag >> 3 == 1:
                key = bytes(chunk).decode("utf-8", "replace")
            else:
                value = chunk
        delimited = value_field.kind in (STRING, BYTES, MESSAGE)
        if value is None:
            value = b"" if delimited else 0
        elif delimited != (not isinstance(value, int)):
            raise ConversionError(f"proto: wrong wireType for the values of {field.json}")
        out[key] = _scalar(value_field, value, report)
    return out


def _decode_special(msg: Message, data: bytes, report: Report) -> Any:
    special = msg.special
    if special is not None and special.startswith("schema_or_"):
        return _decode_union(msg, data, report)
    if special == "list":
        return [bytes(v).decode("utf-8", "replace") for v in _repeated(data, 1)]
    fields = last_fields(data)
    if special == "quantity":
        return bytes_field(fields, 1).decode() or "0"
    if special in ("time", "microtime"):
        seconds = _signed64(int_field(fields, 1))
        nanos = int_field(fields, 2) if special == "microtime" else 0
        if not data or (seconds == _ZERO_TIME and not nanos):
            return None
        return _format_time(seconds, nanos // 1000 if special == "microtime" else None)
    if special == "intorstring":
        if int_field(fields, 1) == 1:
            return bytes_field(fields, 3).decode("utf-8", "replace")
        raw = int_field(fields, 2) & 0xFFFFFFFF
        return raw - (1 << 32) if raw >> 31 else raw
    if special == "duration":
        return format_duration(_signed64(int_field(fields, 1)))
    # "raw": RawExtension / FieldsV1 carry JSON bytes
    if 1 not in fields:
        return None
    try:
        return orjson.loads(bytes_field(fields, 1))
    except orjson.JSONDecodeError:
        report.unknown_fields.append(f"{msg.name}: raw bytes that are not JSON")
        return None


def _repeated(data: bytes, number: int) -> list[bytes]:
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        tag, pos = read_varint(data, pos)
        size, pos = read_varint(data, pos)
        if tag >> 3 == number:
            out.append(data[pos : pos + size])
        pos += size
    return out


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


def _format_time(seconds: int, micros: int | None) -> str:
    moment = _EPOCH + dt.timedelta(seconds=seconds)
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    return f"{text}.{micros:06d}Z" if micros is not None else text + "Z"


# ------------------------------------------- apiextensions v1's JSONSchemaPropsOr* unions
# Upstream's marshal.go: OrBool is a boolean or a schema (a schema means allows=true),
# OrArray a schema or an array of schemas, OrStringArray a schema or an array of
# strings. On the wire each is a plain message of its two fields.


def _encode_union(msg: Message, value: Any, where: str, report: Report) -> bytes:
    special, fields = msg.special, msg.by_number
    parts: list[bytes] = []
    if special == "schema_or_bool":
        if isinstance(value, bool) or value is None:
            return b"\x08" + (b"\x01" if value else b"\x00")
        parts.append(b"\x08\x01")  # a schema allows
        _encode_value(fields[2], value, parts, report, where)
        return b"".join(parts)
    if isinstance(value, list):  # OrArray's schemas, OrStringArray's strings
        for i, item in enumerate(value):
            _encode_value(fields[2], item, parts, report, f"{where}[{i}]")
    elif value is not None:
        _encode_value(fields[1], value, parts, report, where)
    return b"".join(parts)


def _decode_union(msg: Message, data: bytes, report: Report) -> Any:
    plain = decode_fields(msg, data, report)
    if msg.special == "schema_or_bool":
        return plain.get(2) if 2 in plain else bool(plain.get(1))
    if plain.get(2):
        return plain[2]
    return plain.get(1)


def decode_fields(msg: Message, data: bytes, report: Report) -> dict[int, Any]:
    """``msg``'s fields by number, each as its JSON value (a union's parts)."""
    plain = Message(msg.name, None)
    plain.fields = msg.fields
    plain.by_number = msg.by_number
    body = decode(plain, data, report)
    return {f.number: body[f.json] for f in msg.fields if f.json in body}
