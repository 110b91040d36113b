"""Protobuf request bodies of the review APIs and TokenRequest, decoded to their JSON
form. kubectl's typed clients (``auth can-i``, ``auth whoami``, ``create token``) send
these objects as ``application/vnd.kubernetes.protobuf``; this is the small decoder
they need until the server reads protobuf bodies in general.

The envelope is Kubernetes': ``k8s\\x00`` + runtime.Unknown {typeMeta 1 {apiVersion 1,
kind 2}, raw 2}; ``raw`` is the object, decoded with the field numbers of
``k8s.io/api/{authorization,authentication}/v1/generated.proto`` listed in ``SCHEMAS``
(metadata and status are skipped: a review's answer ignores them). ``ValueError`` for
a malformed body.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCHEMAS", "decode_review"]

MAGIC = b"k8s\x00"

# message -> field number -> (JSON name, type, repeated); type is "string", "int64", a
# message name, or "extra" (map<string, ExtraValue{repeated string items = 1}>)
Field = tuple[str, str, bool]
SCHEMAS: dict[str, dict[int, Field]] = {
    "AccessReview": {2: ("spec", "AccessReviewSpec", False)},
    "AccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes", False),
        2: ("nonResourceAttributes", "NonResourceAttributes", False),
        3: ("user", "string", False),
        4: ("groups", "string", True),
        5: ("extra", "extra", False),
        6: ("uid", "string", False),
    },
    "ResourceAttributes": {
        1: ("namespace", "string", False),
        2: ("verb", "string", False),
        3: ("group", "string", False),
        4: ("version", "string", False),
        5: ("resource", "string", False),
        6: ("subresource", "string", False),
        7: ("name", "string", False),
    },
    "NonResourceAttributes": {1: ("path", "string", False), 2: ("verb", "string", False)},
    "RulesReview": {2: ("spec", "RulesReviewSpec", False)},
    "RulesReviewSpec": {1: ("namespace", "string", False)},
    "SelfSubjectReview": {},
    "TokenRequest": {2: ("spec", "TokenRequestSpec", False)},
    "TokenRequestSpec": {
        1: ("audiences", "string", True),
        3: ("boundObjectRef", "BoundObjectReference", False),
        4: ("expirationSeconds", "int64", False),
    },
    "BoundObjectReference": {
        1: ("kind", "string", False),
        2: ("apiVersion", "string", False),
        3: ("name", "string", False),
        4: ("uid", "string", False),
    },
    "TokenReview": {2: ("spec", "TokenReviewSpec", False)},
    "TokenReviewSpec": {1: ("token", "string", False), 2: ("audiences", "string", True)},
}

# the kinds whose top-level message each schema decodes
TOP_LEVEL = {
    "SelfSubjectAccessReview": "AccessReview",
    "SubjectAccessReview": "AccessReview",
    "LocalSubjectAccessReview": "AccessReview",
    "SelfSubjectRulesReview": "RulesReview",
    "SelfSubjectReview": "SelfSubjectReview",
    "TokenRequest": "TokenRequest",
    "TokenReview": "TokenReview",
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, varint value or length-delimited bytes) in order."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _extra(entries: list[bytes]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for entry in entries:
        key, values = "", []
        for number, value in _fields(entry):
            if number == 1 and isinstance(value, bytes):
                key = value.decode()
            elif number == 2 and isinstance(value, bytes):
                values = [v.decode() for n, v in _fields(value) if n == 1 and isinstance(v, bytes)]
        out[key] = values
    return out


def _message(data: bytes, schema_name: str) -> dict[str, Any]:
    schema = SCHEMAS[schema_name]
    obj: dict[str, Any] = {}
    extra_entries: list[bytes] = []
    for number, value in _fields(data):
        spec = schema.get(number)
        if spec is None:
            continue
        name, type_, repeated = spec
        decoded: Any
        if type_ == "int64":
            if not isinstance(value, int):
                raise ValueError(f"{name}: expected a varint")
            decoded = value - (1 << 64) if value >= 1 << 63 else value
        elif not isinstance(value, bytes):
            raise ValueError(f"{name}: expected a length-delimited field")
        elif type_ == "extra":
            extra_entries.append(value)
            continue
        elif type_ == "string":
            decoded = value.decode()
        else:
            decoded = _message(value, type_)
        if repeated:
            obj.setdefault(name, []).append(decoded)
        else:
            obj[name] = decoded
    if extra_entries:
        obj["extra"] = _extra(extra_entries)
    return obj


def decode_review(body: bytes, kind: str, api_version: str) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded ``kind`` object."""
    if not body.startswith(MAGIC):
        raise ValueError("protobuf body without the k8s envelope")
    raw = b""
    for number, value in _fields(body[len(MAGIC) :]):
        if number == 2 and isinstance(value, bytes):
            raw = value
    obj = _message(raw, TOP_LEVEL[kind])
    return {"kind": kind, "apiVersion": api_version, "metadata": {}, **obj}
