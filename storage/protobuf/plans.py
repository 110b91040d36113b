"""Per-message conversion plans, compiled once from the descriptors and the Go facts.

A ``Message`` lists its ``Field``s in field-number order (the order upstream's
``generated.pb.go`` writes them); each field knows its JSON name, its wire kind, and the
Go facts that decide when it is written (``pointer``) and when it appears in JSON
(``omitempty``). Messages whose Go type has its own JSON form get a ``special`` tag
(Time, MicroTime, Duration, Quantity, IntOrString, RawExtension, FieldsV1, and the
``+protobuf.nullable`` list wrappers).
"""

from __future__ import annotations

from typing import Any

from storage.protobuf import extensions
from storage.protobuf.schema import RawSchema
from storage.protobuf.wire import varint

STRING, BYTES, BOOL, INT32, INT64, MESSAGE, MAP, DOUBLE = range(8)

# FieldDescriptorProto.Type
_SCALARS = {9: STRING, 12: BYTES, 8: BOOL, 5: INT32, 3: INT64, 1: DOUBLE}
_MESSAGE_TYPE = 11
_REPEATED = 3

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
SPECIAL = {
    f"{_META}.Time": "time",
    f"{_META}.MicroTime": "microtime",
    f"{_META}.Duration": "duration",
    f"{_META}.FieldsV1": "raw",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "raw",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    **extensions.SPECIAL,
}


class Field:
    """One field of a message plan (see the module docstring)."""

    __slots__ = (
        "inline",
        "json",
        "kind",
        "map_value",
        "message",
        "number",
        "omitempty",
        "pointer",
        "repeated",
        "tag",
        "type_name",
        "wire_type",
    )

    def __init__(self, number: int, kind: int, wire_type: int) -> None:
        self.number = number
        self.kind = kind
        self.wire_type = wire_type
        self.tag = varint((number << 3) | wire_type)
        self.json = ""
        self.repeated = False
        self.pointer = False
        self.omitempty = True
        self.inline = False
        self.type_name = ""
        self.message: Message | None = None
        self.map_value: Field | None = None


class Message:
    """A message's plan: its fields by number, its JSON names (inline ones included)."""

    __slots__ = ("by_number", "fields", "json_names", "name", "special")

    def __init__(self, name: str, special: str | None) -> None:
        self.name = name
        self.special = special
        self.fields: list[Field] = []
        self.by_number: dict[int, Field] = {}
        self.json_names: frozenset[str] = frozenset()


def compile_plans(raw: RawSchema) -> dict[str, Message]:
    """Every message of the schema by full name (``k8s.io.api.core.v1.Pod``)."""
    messages: dict[str, Message] = {}
    pending: list[tuple[Message, Any, dict[str, Any]]] = []
    for file in raw.descriptors.file:
        structs = raw.packages.get(file.package, {}).get("structs", {})
        for desc in file.message_type:
            name = f"{file.package}.{desc.name}"
            special = SPECIAL.get(name) or ("list" if name in raw.wrappers else None)
            msg = Message(name, special)
            messages[name] = msg
            go_fields = {f["proto"]: f for f in structs.get(desc.name, [])}
            pending.append((msg, desc, go_fields))
    for msg, desc, go_fields in pending:
        _fill(msg, desc, go_fields, messages)
    for msg in messages.values():
        msg.json_names = frozenset(_json_names(msg))
    return messages


def _fill(msg: Message, desc: Any, go_fields: dict[str, Any], messages: dict[str, Message]) -> None:
    entries = {f"{msg.name}.{n.name}": n for n in desc.nested_type if n.options.map_entry}
    for fd in sorted(desc.field, key=lambda f: f.number):
        type_name = fd.type_name.lstrip(".")
        if type_name in entries:
            field = Field(fd.number, MAP, 2)
            value_fd = entries[type_name].field[1]
            field.map_value = _scalar_or_message(value_fd, messages)
        else:
            field = _scalar_or_message(fd, messages)
            field.repeated = fd.label == _REPEATED
        go = go_fields.get(fd.name) or _embedded(go_fields, type_name)
        field.json = fd.name
        if go is not None:
            field.json = go["json"] or fd.name
            field.omitempty = go["omitempty"]
            field.inline = go["inline"]
            field.pointer = go["pointer"]
        msg.fields.append(field)
        msg.by_number[field.number] = field


def _embedded(go_fields: dict[str, Any], type_name: str) -> Any:
    """The embedded Go struct whose protobuf tag names no field (``EphemeralContainer``'s
    ``EphemeralContainerCommon `json:",inline" protobuf:"bytes,1,req"```): matched by its
    type, the proto field's message; None when there is none."""
    embedded = go_fields.get("")
    if embedded and embedded["inline"] and type_name.rsplit(".", 1)[-1] == embedded["go_type"]:
        return embedded
    return None


def _scalar_or_message(fd: Any, messages: dict[str, Message]) -> Field:
    if fd.type == _MESSAGE_TYPE:
        field = Field(fd.number, MESSAGE, 2)
        field.type_name = fd.type_name.lstrip(".")
        field.message = messages[field.type_name]
        return field
    kind = _SCALARS[fd.type]
    return Field(fd.number, kind, 2 if kind in (STRING, BYTES) else 1 if kind == DOUBLE else 0)


def _json_names(msg: Message) -> set[str]:
    names: set[str] = set()
    for field in msg.fields:
        if field.inline and field.message is not None:
            names |= _json_names(field.message)
        else:
            names.add(field.json)
    return names
