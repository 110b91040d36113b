"""Straight-line Python per message: the converter's rules, compiled for speed.

``storage.protobuf.converter`` states the conversion rules once, as an interpreter over
the plans; it is the reference. This module writes, on first use of each message, one
decode and one encode function with the plan unrolled into straight-line code (what
upstream's ``generated.pb.go`` is to reflection), which is several times faster: a pod
decodes in a fraction of the interpreter's time. Both must agree exactly; the unit tests
compare them on realistic objects. Special messages (Time, Quantity, ...) and maps with
message values reuse the interpreter's functions.

``decoder(msg)(data, report)`` → JSON value; ``encoder(msg)(obj, report, path,
inline)`` → wire bytes. Errors are the interpreter's (``ConversionError``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

import orjson

from storage.protobuf import converter as ref
from storage.protobuf import wire
from storage.protobuf.converter import ConversionError, Report
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
from storage.protobuf.wire import WireError, read_varint, varint

Decoder = Callable[[bytes, Report], Any]
Encoder = Callable[[Any, Report, str, bool], bytes]

_SMALL = [bytes((i,)) for i in range(128)]


def _vi(value: int) -> bytes:
    return _SMALL[value] if 0 <= value < 128 else varint(value)


def _other(data: bytes, pos: int, tag: int, end: int, report: Report, msg: Message) -> int:
    """A field the generated loop does not expect: unknown (skipped, reported), packed
    ints, or a wrong wire type (ConversionError)."""
    number, wire_type = tag >> 3, tag & 7
    if number in msg.by_number:
        raise ConversionError(f"proto: wrong wireType = {wire_type} for field {number}")
    if wire_type == 0:
        _, pos = read_varint(data, pos)
    elif wire_type == 2:
        size, pos = read_varint(data, pos)
        pos += size
    elif wire_type in (1, 5):
        pos += 8 if wire_type == 1 else 4
    else:
        raise ConversionError(f"proto: {msg.name}: illegal wireType {wire_type}")
    if pos > end:
        raise ConversionError("unexpected EOF")
    report.unknown_fields.append(f"{msg.name}#{number}")
    return pos


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >> 31 else x


def _i64(x: int) -> int:
    return x - (1 << 64) if x >> 63 else x


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def _time(data: bytes, report: Report) -> str | None:
    """Time: ``{seconds = 1, nanos = 2}``, RFC 3339 in JSON (nanos dropped, as Go).
    Remembered by wire bytes: the objects of a cluster share few distinct seconds (a
    pod's conditions, its containers' start), and formatting one costs ~1 µs."""
    text = _times.get(data)
    if text is not None:
        return text
    if not data:
        return None
    if data[0] != 0x08:
        return ref._decode_special(_TIME, data, report)  # type: ignore[no-any-return]
    seconds, end = read_varint(data, 1)
    if seconds >> 63:
        seconds -= 1 << 64
    if seconds == ref._ZERO_TIME:
        return None
    text = _format_seconds(seconds)
    if end == len(data):  # nanos (dropped) would make a new key per value: not kept
        if len(_times) >= _TIMES_KEPT:
            _times.clear()
        _times[data] = text
    return text


_TIMES_KEPT = 8192
_times: dict[bytes, str] = {}
_days: dict[int, str] = {}


def _format_seconds(seconds: int) -> str:
    """``converter._format_time(seconds, None)``, the date made once per day."""
    day, rest = divmod(seconds, 86400)
    date = _days.get(day)
    if date is None:
        date = ref._format_time(day * 86400, None)[:10]
        if len(_days) >= _TIMES_KEPT:
            _days.clear()
        _days[day] = date
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{date}T{hours:02d}:{minutes:02d}:{secs:02d}Z"


def _raw(data: bytes, report: Report) -> Any:
    """FieldsV1, RawExtension: ``{raw = 1}`` holding JSON (managedFields carry two)."""
    if len(data) > 2 and data[0] == 0x0A:
        size, pos = read_varint(data, 1)
        if pos + size == len(data):
            try:
                return orjson.loads(data[pos:])
            except orjson.JSONDecodeError:
                pass  # the interpreter reports it
    return ref._decode_special(_RAW, data, report)


def _map_sq(entries: list[bytes], report: Report) -> dict[str, str]:
    """A map of Quantity values (a container's requests and limits)."""
    out: dict[str, str] = {}
    for entry in entries:
        fields = _entry(entry)
        key = fields.get(1, b"").decode("utf-8", "replace")
        out[key] = _quantity(fields.get(2, b""), report)
    return out


def _quantity(data: bytes, report: Report) -> str:
    if len(data) > 1 and data[0] == 0x0A and data[1] < 128 and len(data) == 2 + data[1]:
        return data[2:].decode() or "0"
    return ref._decode_special(_QUANTITY, data, report)  # type: ignore[no-any-return]


_TIME = Message("k8s.io.apimachinery.pkg.apis.meta.v1.Time", "time")
_QUANTITY = Message("k8s.io.apimachinery.pkg.api.resource.Quantity", "quantity")
_RAW = Message("k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1", "raw")
_FAST_SPECIAL: dict[str, Decoder] = {"time": _time, "quantity": _quantity, "raw": _raw}


def _map_ss(entries: list[bytes]) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in entries:
        fields = _entry(entry)
        key, value = fields.get(1, b""), fields.get(2, b"")
        out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


def _map_msg(entries: list[bytes], dec: Decoder, report: Report) -> dict[str, Any]:
    """A map of message values (a JSONSchemaProps' properties), compiled decoder each."""
    out: dict[str, Any] = {}
    for entry in entries:
        fields = _entry(entry)
        out[fields.get(1, b"").decode("utf-8", "replace")] = dec(fields.get(2, b""), report)
    return out


def _enc_map_msg(tag: bytes, value: Any, enc: Encoder, report: Report, where: str) -> bytes:
    """The entries of a map of message values, keys sorted (generated.pb.go's order)."""
    if type(value) is not dict:
        raise ConversionError(f"{where}: expected an object, got {ref._json_type(value)}")
    parts: list[bytes] = []
    for key in sorted(value):
        k = key.encode()
        body = enc(value[key], report, f"{where}[{key}]", False)
        entry = b"\x0a" + _vi(len(k)) + k + b"\x12" + _vi(len(body)) + body
        parts += (tag, _vi(len(entry)), entry)
    return b"".join(parts)


def _entry(entry: bytes) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    pos, end = 0, len(entry)
    while pos < end:
        tag = entry[pos]
        if tag < 128:  # one-byte tags and lengths inline (keys, label values)
            pos += 1
        else:
            tag, pos = read_varint(entry, pos)
        if tag & 7 != 2:
            raise ConversionError("proto: map entry: unexpected wire type")
        size = entry[pos] if pos < end else 128  # 128: read_varint says EOF
        if size < 128:
            pos += 1
        else:
            size, pos = read_varint(entry, pos)
        out[tag >> 3] = entry[pos : pos + size]
        pos += size
    return out


def _bad(path: str, name: str, want: str, value: Any) -> ConversionError:
    return ConversionError(f"{path}.{name}: expected {want}, got {ref._json_type(value)}")


def _int(value: Any, path: str, name: str) -> int:
    if type(value) is int:
        return value
    return ref._integer(value, f"{path}.{name}")


def _unb64(value: Any, path: str, name: str) -> bytes:
    if not isinstance(value, str):
        raise _bad(path, name, "a base64 string", value)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as err:
        raise ConversionError(f"{path}.{name}: illegal base64 data: {err}") from None


class _Table(dict[str, Any]):
    """Compiled functions by message name, compiled on first lookup."""

    def __init__(self, messages: dict[str, Message], make: Callable[[Message], Any]) -> None:
        super().__init__()
        self.messages = messages
        self.make = make

    def __missing__(self, name: str) -> Any:
        fn = self.make(self.messages[name])
        self[name] = fn
        return fn


class Compiler:
    """Decoders and encoders for the messages of one schema."""

    def __init__(self, messages: dict[str, Message]) -> None:
        self.decoders = _Table(messages, self._decoder)
        self.encoders = _Table(messages, self._encoder)

    def decoder(self, msg: Message) -> Decoder:
        fn: Decoder = self.decoders[msg.name]
        return fn

    def encoder(self, msg: Message) -> Encoder:
        fn: Encoder = self.encoders[msg.name]
        return fn

    # ------------------------------------------------------------------ decode

    def _decoder(self, msg: Message) -> Decoder:
        if msg.special in _FAST_SPECIAL:
            return _FAST_SPECIAL[msg.special]
        if msg.special is not None and msg.special.startswith("schema_or_"):
            return self._union_decoder(msg)
        if msg.special is not None:
            return lambda data, report: ref._decode_special(msg, data, report)
        env: dict[str, Any] = {
            "rv": read_varint, "CE": ConversionError, "other": _other, "MSG": msg,
            "D": self.decoders, "packed": ref._packed, "i32": _i32, "i64": _i64,
            "b64": _b64, "f64": ref.unpack_double, "map_ss": _map_ss, "map_sq": _map_sq,
            "ref_map": ref._decode_map, "map_msg": _map_msg,
        }  # fmt: skip
        lines = [
            "def dec(data, report):",
            "    end = len(data)",
            "    pos = 0",
            *(f"    v{f.number} = None" for f in msg.fields),
            "    while pos < end:",
            "        t = data[pos]",
            "        if t < 128:",
            "            pos += 1",
            "        elif data[pos + 1] < 128:  # field numbers 16-2047",
            "            t = (t & 127) | (data[pos + 1] << 7)",
            "            pos += 2",
            "        else:",
            "            t, pos = rv(data, pos)",
        ]
        cases = sorted(case for f in msg.fields for case in _parse_cases(f))
        lines += _dispatch(cases, "        ")
        lines.append("    out = {}")
        for f in msg.fields:
            env[f"F{f.number}"] = f
            lines += ("    " + line for line in _emit(f))
        lines.append("    return out")
        decode: Decoder = _compile(lines, env, "dec", msg.name)
        return decode

    # ------------------------------------------------------------------ encode

    def _encoder(self, msg: Message) -> Encoder:
        if msg.special is not None and msg.special.startswith("schema_or_"):
            return self._union_encoder(msg)
        if msg.special is not None:

            def special(obj: Any, report: Report, path: str, inline: bool = False) -> bytes:
                return ref._encode_special(msg, obj, path, report)

            return special
        env: dict[str, Any] = {
            "E": self.encoders, "vi": _vi, "CE": ConversionError, "bad": _bad, "int_": _int,
            "unb64": _unb64, "NAMES": msg.json_names, "ref_map": ref._encode_map,
            "json_type": ref._json_type, "d64": ref.pack_double, "enc_map_msg": _enc_map_msg,
        }  # fmt: skip
        lines = [
            "def enc(obj, report, path, inline=False):",
            "    if obj is None:",
            "        obj = {}",
            "    elif type(obj) is not dict:",
            "        raise CE(f\"{path or '.'}: expected an object, got {json_type(obj)}\")",
            "    p = []",
            "    ap = p.append",
        ]
        for f in msg.fields:
            env[f"F{f.number}"] = f
            env[f"T{f.number}"] = f.tag
            lines += ("    " + line for line in _encode_field(f))
        lines += [
            "    if not inline and not NAMES.issuperset(obj):",
            "        report.unknown_json.extend(f'{path}.{k}' for k in obj if k not in NAMES)",
            "    return b''.join(p)",
        ]
        encode: Encoder = _compile(lines, env, "enc", msg.name)
        return encode

    # -------------------------------- JSONSchemaPropsOr* (see converter._encode_union)

    def _union_encoder(self, msg: Message) -> Encoder:
        schema_type = msg.by_number[1 if msg.special != "schema_or_bool" else 2].type_name
        encoders, special = self.encoders, msg.special

        def enc(obj: Any, report: Report, path: str, inline: bool = False) -> bytes:
            schema: Encoder = encoders[schema_type]
            if special == "schema_or_bool":
                if obj is None or type(obj) is bool:
                    return b"\x08\x01" if obj else b"\x08\x00"
                body = schema(obj, report, path, False)
                return b"\x08\x01\x12" + _vi(len(body)) + body
            if type(obj) is list:
                parts: list[bytes] = []
                for i, item in enumerate(obj):
                    if special == "schema_or_strings":
                        if type(item) is not str:
                            got = ref._json_type(item)
                            raise ConversionError(f"{path}[{i}]: expected a string, got {got}")
                        data = item.encode()
                    else:
                        data = schema(item, report, f"{path}[{i}]", False)
                    parts += (b"\x12", _vi(len(data)), data)
                return b"".join(parts)
            if obj is None:
                return b""
            body = schema(obj, report, path, False)
            return b"\x0a" + _vi(len(body)) + body

        return enc

    def _union_decoder(self, msg: Message) -> Decoder:
        schema_type = msg.by_number[1 if msg.special != "schema_or_bool" else 2].type_name
        decoders, special = self.decoders, msg.special

        def dec(data: bytes, report: Report) -> Any:
            schema: Decoder = decoders[schema_type]
            if special == "schema_or_bool":
                fields = wire.last_fields(data)
                if 2 in fields:
                    return schema(wire.bytes_field(fields, 2), report)
                return bool(wire.int_field(fields, 1))
            items = ref._repeated(data, 2)
            if items:
                if special == "schema_or_strings":
                    return [bytes(i).decode("utf-8", "replace") for i in items]
                return [schema(bytes(i), report) for i in items]
            fields = wire.last_fields(data)
            return schema(wire.bytes_field(fields, 1), report) if 1 in fields else None

        return dec


def _compile(lines: list[str], env: dict[str, Any], name: str, msg_name: str) -> Any:
    code = compile("\n".join(lines) + "\n", f"<protobuf {name} {msg_name}>", "exec")
    exec(code, env)
    return env[name]


_LEN = [
    "b = data[pos]",
    "if b < 128:",
    "    n = b",
    "    pos += 1",
    "elif data[pos + 1] < 128:",  # 128 to 16 KiB
    "    n = (b & 127) | (data[pos + 1] << 7)",
    "    pos += 2",
    "else:",
    "    n, pos = rv(data, pos)",
    "e = pos + n",
    "if e > end:",
    "    raise CE('unexpected EOF')",
    "c = data[pos:e]",
    "pos = e",
]
_VAR = [
    "b = data[pos]",
    "if b < 128:",
    "    c = b",
    "    pos += 1",
    "else:",
    "    c, pos = rv(data, pos)",
]


_FIXED64 = [
    "if pos + 8 > end:",
    "    raise CE('unexpected EOF')",
    "c = data[pos:pos + 8]",
    "pos += 8",
]

_CHAIN = 6  # cases tested one after the other; more are split in halves first


def _dispatch(cases: list[tuple[int, list[str]]], indent: str) -> list[str]:
    """Statements running the case whose tag is ``t`` (``cases`` sorted by tag), else
    ``other``: a binary search over the tags down to short ``if``/``elif`` chains, so
    that a field late in a big message (PodSpec has 40) costs a few comparisons."""
    if len(cases) > _CHAIN:
        mid = len(cases) // 2
        return [
            f"{indent}if t < {cases[mid][0]}:",
            *_dispatch(cases[:mid], indent + "    "),
            f"{indent}else:",
            *_dispatch(cases[mid:], indent + "    "),
        ]
    lines: list[str] = []
    for i, (tag, body) in enumerate(cases):
        lines.append(f"{indent}{'elif' if i else 'if'} t == {tag}:")
        lines += (f"{indent}    {line}" for line in body)
    lines += [f"{indent}else:" if cases else f"{indent}if True:",
              f"{indent}    pos = other(data, pos, t, end, report, MSG)"]  # fmt: skip
    return lines


def _parse_cases(f: Field) -> list[tuple[int, list[str]]]:
    """(tag, statements) reading one occurrence of ``f`` into ``v<number>``."""
    v = f"v{f.number}"
    length_delimited = f.kind in (STRING, BYTES, MESSAGE, MAP)
    read = _LEN if length_delimited else _FIXED64 if f.kind == DOUBLE else _VAR
    tag = (f.number << 3) | f.wire_type
    if f.kind == MAP or f.repeated:
        cases = [(tag, [*read, f"if {v} is None:", f"    {v} = [c]", "else:",
                        f"    {v}.append(c)"])]  # fmt: skip
        if not length_delimited:  # packed repeated ints, which Go also accepts
            cases.append(((f.number << 3) | 2, [*_LEN, f"{v} = ({v} or []) + packed(c)"]))
        return cases
    if f.kind == MESSAGE:  # a repeated occurrence merges: concatenated messages merge
        return [(tag, [*read, f"{v} = c if {v} is None else {v} + c"])]
    return [(tag, [*read, f"{v} = c"])]


_CONVERT = {STRING: "{}.decode('utf-8', 'replace')", BYTES: "b64({})", INT32: "i32({})",
            INT64: "i64({})", BOOL: "bool({})", DOUBLE: "f64({})"}  # fmt: skip
_ZERO = {STRING: '""', INT32: "0", INT64: "0", BOOL: "False", DOUBLE: "0"}


def _emit(f: Field) -> list[str]:
    """Statements putting ``f``'s JSON into ``out`` (encoding/json's rules)."""
    v, j = f"v{f.number}", repr(f.json)
    if f.kind == MESSAGE and not f.repeated:
        sub = f"D[{f.type_name!r}]"
        if f.inline:
            return [f"out.update({sub}({v} if {v} is not None else b'', report))"]
        if f.pointer:
            return [f"if {v} is not None:", f"    out[{j}] = {sub}({v}, report)"]
        return [f"out[{j}] = {sub}({v} if {v} is not None else b'', report)"]
    if f.kind == MAP:
        value = f.map_value
        value_kind = value.kind if value is not None else STRING
        conv = f"map_ss({v})" if value_kind == STRING else f"ref_map(F{f.number}, {v}, report)"
        if value is not None and value.message is not None and value.message.special is None:
            conv = f"map_msg({v}, D[{value.type_name!r}], report)"
        if value is not None and value.message is not None and value.message.special == "quantity":
            conv = f"map_sq({v}, report)"
    elif f.repeated:
        item = (
            f"D[{f.type_name!r}](c, report)" if f.kind == MESSAGE else _CONVERT[f.kind].format("c")
        )
        conv = f"[{item} for c in {v}]"
    else:
        conv = _CONVERT[f.kind].format(v)
    if f.pointer:
        return [f"if {v} is not None:", f"    out[{j}] = {conv}"]
    if f.repeated or f.kind in (MAP, BYTES):
        absent = [] if f.omitempty else ["else:", f"    out[{j}] = None"]
        present = f"if {v}:" if f.omitempty else f"if {v} is not None:"
        return [present, f"    out[{j}] = {conv}", *absent]
    if f.omitempty:  # a zero scalar is left out (0, "", false)
        return [f"if {v}:", f"    x = {conv}", "    if x:", f"        out[{j}] = x"]
    return [f"out[{j}] = {conv} if {v} is not None else {_ZERO[f.kind]}"]


def _encode_field(f: Field) -> list[str]:
    """Statements appending ``f``'s wire bytes for ``obj`` to ``p``."""
    n, j = f.number, repr(f.json)
    if f.inline:
        return [f"b = E[{f.type_name!r}](obj, report, path, True)", f"ap(T{n} + vi(len(b)) + b)"]
    lines = [f"v = obj.get({j})"]
    if f.kind == MAP:
        value = f.map_value
        if value is not None and value.message is not None and value.message.special is None:
            enc = f"E[{value.type_name!r}]"
            return [*lines, "if v is not None:",
                    f"    ap(enc_map_msg(T{n}, v, {enc}, report, path + '.' + {j}))"]  # fmt: skip
        return [*lines, "if v is not None:", f"    ref_map(F{n}, v, p, report, path + '.' + {j})"]
    if f.repeated:
        return [
            *lines,
            "if v is not None:",
            "    if type(v) is not list:",
            f"        raise bad(path, {j}, 'an array', v)",
            "    for c in v:",
            *("        " + line for line in _encode_one(f, "c")),
        ]
    if f.pointer or f.kind == BYTES:
        return [*lines, "if v is not None:", *("    " + line for line in _encode_one(f, "v"))]
    if f.kind == MESSAGE:
        return [*lines, *_encode_one(f, "v")]  # None encodes the zero message
    zero = {STRING: "b'\\x00'", INT32: "b'\\x00'", INT64: "b'\\x00'", BOOL: "b'\\x00'",
            DOUBLE: "bytes(8)"}[f.kind]  # fmt: skip
    return [*lines, "if v is None:", f"    ap(T{n} + {zero})", "else:",
            *("    " + line for line in _encode_one(f, "v"))]  # fmt: skip


def _encode_one(f: Field, v: str) -> list[str]:
    n, j = f.number, repr(f.json)
    if f.kind == STRING:
        return [
            f"if type({v}) is not str:",
            f"    raise bad(path, {j}, 'a string', {v})",
            f"b = {v}.encode()",
            f"ap(T{n} + vi(len(b)) + b)",
        ]
    if f.kind in (INT32, INT64):
        return [f"ap(T{n} + vi(int_({v}, path, {j})))"]
    if f.kind == BOOL:
        return [
            f"if type({v}) is not bool:",
            f"    raise bad(path, {j}, 'a boolean', {v})",
            f"ap(T{n} + (b'\\x01' if {v} else b'\\x00'))",
        ]
    if f.kind == BYTES:
        return [f"b = unb64({v}, path, {j})", f"ap(T{n} + vi(len(b)) + b)"]
    if f.kind == DOUBLE:
        return [f"ap(T{n} + d64({v}, path + '.' + {j}))"]
    return [
        f"b = E[{f.type_name!r}]({v}, report, path + '.' + {j})",
        f"ap(T{n} + vi(len(b)) + b)",
    ]


__all__ = ["Compiler", "Decoder", "Encoder", "WireError"]
