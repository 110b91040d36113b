"""The C protobuf decoder (``_cdecode``, built from ``_cdecode.c`` at install) and the
tables it interprets, compiled from the message plans.

``codegen`` is the Python decoder; the C one must answer exactly as it does or not at
all: ``decode(data, report)`` returns the same JSON object (and appends the same
``Report`` entries) or None, and then the caller runs the Python decoder, which gives the
answer or the error. The C side takes only canonical, well-formed data; anything else —
malformed, hostile, or merely unusual — goes to Python (see the C file's header).

When the extension is not importable (a build without a compiler), the Python decoder
serves alone and ``status()`` says why; the server logs it once and
``/debug/watchcache`` shows it (``protobufDecoder``).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Protocol

import orjson

from storage.protobuf import converter
from storage.protobuf.converter import Report
from storage.protobuf.plans import BOOL, BYTES, INT32, INT64, MAP, MESSAGE, STRING, Message

log = logging.getLogger(__name__)

_cdecode: Any
try:
    from storage.protobuf import _cdecode  # type: ignore[attr-defined,no-redef,unused-ignore]

    _IMPORT_ERROR = ""
except ImportError as err:  # built without a C compiler: the Python decoder serves
    _cdecode = None
    _IMPORT_ERROR = str(err)

# WATCHCACHE_PROTOBUF_DECODER=python turns the C decoder off (a comparison, a suspicion)
_ENV = "WATCHCACHE_PROTOBUF_DECODER"

# modes and flags as _cdecode.c numbers them
_MODES = {None: 0, "time": 1, "microtime": 2, "quantity": 3, "intorstring": 4, "raw": 5}
_CALLBACK = 6
_UNIONS = {"schema_or_bool": 7, "schema_or_array": 8, "schema_or_strings": 9}
_REPEATED, _POINTER, _OMITEMPTY, _INLINE = 1, 2, 4, 8
_MV_STRING, _MV_QUANTITY, _MV_MESSAGE, _MV_SCALAR, _MV_REFERENCE = range(5)


class NativeDecoder(Protocol):
    """``_cdecode.Decoder``: None means "ask the Python decoder"."""

    def decode(self, data: bytes, report: Report | None) -> dict[str, Any] | None: ...

    def decode_or_fallback(self, data: bytes, report: Report | None = None) -> dict[str, Any]:
        """``decode``, and what it defers answered by ``fallback``."""
        ...

    def decode_raw(self, index: int, api_version: str, kind: str, raw: bytes,
                   report: Report | None) -> dict[str, Any] | None: ...  # fmt: skip


def status() -> str:
    """``"C"`` when the extension serves, else ``"Python: <why>"``."""
    if os.environ.get(_ENV) == "python":
        return f"Python: {_ENV}=python"
    if _cdecode is None:
        return f"Python: the C extension storage.protobuf._cdecode is missing ({_IMPORT_ERROR})"
    return "C"


class Fallback(Protocol):
    """``Serializer.decode``'s signature: (data, report=None) → the JSON object."""

    def __call__(self, data: bytes, report: Report | None = None, /) -> dict[str, Any]: ...


def build(
    messages: dict[str, Message],
    kinds: dict[tuple[str, str, str], Message],
    decoders: Any,
    fallback: Fallback,
) -> tuple[NativeDecoder | None, dict[str, int]]:
    """The C decoder over ``messages`` (None when it is unavailable, see ``status``) and
    each message's index in its tables. ``kinds``: (group, version, kind) → message;
    ``decoders``: the Python decoders by message name (codegen's table), which the C
    side calls for the rare messages it leaves to Python; ``fallback``: the Python
    decoder of enveloped values (``decode_or_fallback``)."""
    index = {name: i for i, name in enumerate(messages)}
    if status() != "C":
        log.warning("protobuf values are decoded by the Python decoder, %s", status())
        return None, index
    table = [_message(msg, index) for msg in messages.values()]
    by_key: dict[bytes, tuple[int, str, str]] = {}
    for (group, version, kind), msg in kinds.items():
        api_version = f"{group}/{version}" if group else version
        by_key[f"{api_version}\0{kind}".encode()] = (index[msg.name], api_version, kind)
    decoder: NativeDecoder = _cdecode.Decoder(table, by_key, decoders, Report, orjson.loads,
                                              converter.decode, messages, fallback)  # fmt: skip
    return decoder, index


def _message(msg: Message, index: dict[str, int]) -> tuple[str, int, int, tuple[Any, ...]]:
    mode = _MODES.get(msg.special, _UNIONS.get(msg.special or "", _CALLBACK))
    schema = -1  # a union's JSONSchemaProps: OrBool's field 2, the others' field 1
    if msg.special in _UNIONS:
        schema = index[msg.by_number[2 if msg.special == "schema_or_bool" else 1].type_name]
    fields: list[tuple[Any, ...]] = []
    for f in msg.fields:
        flags = ((_REPEATED if f.repeated else 0) | (_POINTER if f.pointer else 0)
                 | (_OMITEMPTY if f.omitempty else 0) | (_INLINE if f.inline else 0))  # fmt: skip
        sub, map_mode, map_kind = index.get(f.type_name, -1), _MV_STRING, STRING
        if f.kind == MAP:
            map_mode, sub, map_kind = _map_value(f.map_value, index)
            if map_mode < 0:  # a map whose values only Python decodes
                mode, map_mode = _CALLBACK, _MV_STRING
        fields.append((f.number, f.kind, f.wire_type, flags, sub, map_mode, map_kind, f.json))
    return msg.name, mode, schema, tuple(fields)


def _map_value(value: Any, index: dict[str, int]) -> tuple[int, int, int]:
    """(mode, message index, kind) of a map's values as codegen._emit picks its helper;
    special message values other than Quantity are the interpreter's (converter.decode,
    called from C); mode -1: left to Python (double values)."""
    if value is None or value.kind == STRING:
        return _MV_STRING, -1, STRING
    if value.kind == MESSAGE and value.message is not None:
        if value.message.special is None:
            return _MV_MESSAGE, index[value.type_name], MESSAGE
        if value.message.special == "quantity":
            return _MV_QUANTITY, index[value.type_name], MESSAGE
        return _MV_REFERENCE, index[value.type_name], MESSAGE
    if value.kind in (BYTES, INT32, INT64, BOOL):
        return _MV_SCALAR, -1, value.kind
    return -1, -1, value.kind
