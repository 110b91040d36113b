"""The C protobuf decoder against the Python one (its reference), differentially: it is
built and in use, and for every input — each kind's fixtures, random objects of every
kind the schema knows, and those bytes truncated, bit-flipped, given huge lengths,
nested deeply, or garbage — it answers exactly as the Python decoder does (the same
JSON, value types, key order and report entries) or defers (None) to it; it never
answers where the Python decoder raises, and it answers every fixture itself."""

from __future__ import annotations

import math
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest

from lab import bench_decode
from storage.protobuf import native
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
from storage.protobuf.serializer import Serializer, get_serializer, unwrap, wrap
from storage.protobuf.wire import varint
from tests.unit.storage.test_protobuf import OBJECTS

Outcome = tuple[str, Any, list[str]]


@pytest.fixture(scope="module")
def pb() -> Serializer:
    return get_serializer()


def same(a: Any, b: Any, path: str = "") -> None:
    """Equal as JSON values *and* types and key order (``==`` has 1 == 1.0 == True)."""
    assert type(a) is type(b), f"{path}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} vs {list(b)}"
        for key in a:
            same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or (a == b and str(a) == str(b)), path
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def python(pb: Serializer, data: bytes) -> Outcome:
    report = Report()
    try:
        return "ok", pb.decode_python(data, report), report.unknown_fields
    except RecursionError:
        return "error", "RecursionError", []
    except Exception as err:  # whatever it raises, the C side must have deferred
        return "error", type(err).__name__, []


def check(pb: Serializer, data: bytes, *, must_answer: bool = False) -> bool:
    """The C decoder agrees with the Python one on ``data``; True if it answered."""
    assert pb.native is not None
    report = Report()
    report.unknown_fields.append("before")  # kept, never taken back past it
    got = pb.native.decode(data, report)
    want = python(pb, data)
    if got is None:
        assert report.unknown_fields == ["before"], "a deferral left report entries"
        assert not must_answer, f"deferred on well-formed data: {want}"
        return False
    assert want[0] == "ok", f"the C decoder answered where Python raised {want[1]}"
    same(got, want[1])
    assert report.unknown_fields == ["before", *want[2]]
    return True


def test_the_c_decoder_is_built_and_in_use(pb: Serializer) -> None:
    """No silent fallback: CI and `make venv` build the extension, the server uses it."""
    assert native.status() == "C"
    assert pb.native is not None
    pod = bench_decode.values()["pod"]
    assert pb.native.decode(pb.encode(pod), None) == pod


def test_without_the_extension_the_python_decoder_serves(
    pb: Serializer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pod = bench_decode.values()["pod"]
    monkeypatch.setenv("WATCHCACHE_PROTOBUF_DECODER", "python")
    assert native.status() == "Python: WATCHCACHE_PROTOBUF_DECODER=python"
    alone = Serializer(pb.raw)
    assert alone.native is None and alone.decode(pb.encode(pod)) == pod
    monkeypatch.delenv("WATCHCACHE_PROTOBUF_DECODER")
    monkeypatch.setattr(native, "_cdecode", None)  # as a build without a compiler
    monkeypatch.setattr(native, "_IMPORT_ERROR", "No module named '_cdecode'")
    assert native.status().startswith("Python: the C extension storage.protobuf._cdecode")
    alone = Serializer(pb.raw)
    assert alone.native is None and alone.decode(pb.encode(pod)) == pod


FIXTURES = [(name, make) for name, make in OBJECTS] + [
    (name, lambda obj=obj: obj) for name, obj in bench_decode.values().items()
]


@pytest.mark.parametrize(("name", "make"), FIXTURES, ids=[n for n, _ in FIXTURES])
def test_every_fixture_decodes_in_c_as_in_python(pb: Serializer, name: str, make: Any) -> None:
    data = pb.encode(make())
    assert check(pb, data, must_answer=True)
    body = pb.decode(data)
    envelope = unwrap(data)  # decode_raw: the message without its envelope
    assert pb.native is not None
    index = pb._index[pb.message(body["apiVersion"], body["kind"]).name]
    same(pb.native.decode_raw(index, body["apiVersion"], body["kind"], envelope.raw, None), body)
    same(pb.decode_raw(body["apiVersion"], body["kind"], envelope.raw), body)


_HUGE = [b"\xff\xff\xff\xff\x0f", b"\xff" * 9 + b"\x01", b"\xff" * 10, b"\x80" * 9 + b"\x02"]


def _mutations(data: bytes, rng: random.Random, count: int, *, every_cut: bool = True
               ) -> list[bytes]:  # fmt: skip
    cuts = range(len(data)) if every_cut else [rng.randrange(len(data))]
    out = [data[:n] for n in cuts]  # truncations
    for _ in range(count):
        b = bytearray(data)
        choice = rng.randrange(5)
        i = rng.randrange(4, len(b))
        if choice == 0:  # a bit flip
            b[i] ^= 1 << rng.randrange(8)
        elif choice == 1:  # a byte replaced
            b[i] = rng.randrange(256)
        elif choice == 2:  # a huge length (or varint) spliced in
            b[i : i + 1] = rng.choice(_HUGE)
        elif choice == 3:  # bytes cut out
            del b[i : i + rng.randrange(1, 8)]
        else:  # random bytes inserted
            b[i:i] = rng.randbytes(rng.randrange(1, 6))
        out.append(bytes(b))
    return out


@pytest.mark.parametrize(("name", "make"), FIXTURES, ids=[n for n, _ in FIXTURES])
def test_mutated_fixtures_are_answered_as_python_or_deferred(
    pb: Serializer, name: str, make: Any
) -> None:
    rng = random.Random(name)
    data = pb.encode(make())
    for mutated in _mutations(data, rng, 1500):
        check(pb, mutated)


# ---------------------------------------------------------------- random objects


class Generator:
    """Random well-formed (mostly) wire bytes of a message, from its plan: every field
    kind, packed ints, negative 10-byte varints, non-UTF-8 strings, unknown fields, and
    the special messages in their canonical and other shapes."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def message(self, msg: Message, depth: int) -> bytes:
        r = self.rng
        special = _SPECIALS.get(msg.special or "")
        if special is not None:
            return special(r)
        parts: list[bytes] = []
        for f in msg.fields:
            if depth >= 3 and f.kind in (MESSAGE, MAP):
                continue  # bounded: JSONSchemaProps holds itself
            if r.random() < 0.4:
                parts += self.field(f, depth)
        if r.random() < 0.05:  # an unknown field, of every wire type
            parts.append(r.choice([b"\xf8\x07\x05", b"\xfa\x07\x02hi", b"\xfd\x07abcd",
                                   b"\xf9\x07" + bytes(8)]))  # fmt: skip
        if r.random() < 0.3:
            r.shuffle(parts)  # out of order is still valid
        return b"".join(parts)

    def field(self, f: Field, depth: int) -> list[bytes]:
        r = self.rng
        count = r.choice([1, 1, 2]) if f.repeated or f.kind == MAP else 1
        if f.repeated and f.kind in (INT32, INT64, BOOL) and r.random() < 0.3:
            body = b"".join(varint(self.int(f.kind)) for _ in range(r.randrange(0, 4)))
            return [varint((f.number << 3) | 2), varint(len(body)), body]
        out: list[bytes] = []
        for _ in range(count):
            out.append(f.tag)
            out.append(self.value(f, depth))
        return out

    def value(self, f: Field, depth: int) -> bytes:
        r = self.rng
        if f.kind == MAP:
            assert f.map_value is not None
            key = self.string()
            entry = b"\x0a" + varint(len(key)) + key
            if r.random() < 0.9:
                entry += b"\x12" if f.map_value.wire_type == 2 else b"\x10"
                entry += self.value(f.map_value, depth + 1)
            if r.random() < 0.1:  # a field maps have not: codegen and converter differ
                entry += r.choice([b"\x1a\x01z", b"\x18\x01", b"\x12\x00"])
            return varint(len(entry)) + entry
        if f.kind == MESSAGE:
            assert f.message is not None
            body = self.message(f.message, depth + 1)
            return varint(len(body)) + body
        if f.kind in (STRING, BYTES):
            data = self.string()
            return varint(len(data)) + data
        if f.kind == DOUBLE:
            return struct.pack("<d", r.choice([0.0, -0.0, 1.0, 2.5, 1e21, -3.0, math.inf,
                                               math.nan, 123456789.0]))  # fmt: skip
        return varint(self.int(f.kind))

    def int(self, kind: int) -> int:
        r = self.rng
        if kind == BOOL:
            return r.choice([0, 1, 1, 2])
        return r.choice([0, 1, 127, 128, 300, -1, -(2**31), 2**31 - 1, 2**32, 2**63 - 1,
                         -(2**63), r.randrange(2**64)])  # fmt: skip

    def string(self) -> bytes:
        r = self.rng
        return r.choice([b"", b"a", b"name-1", "ünïcode".encode(), b"\xff\xfe", b"x" * 200,
                         b"\xed\xa0\x80"])  # fmt: skip


def _time(r: random.Random) -> bytes:
    seconds = r.choice([0, 1_700_000_000, -62135596800, -1, 253402300799, 253402300800, 2**63])
    shape = r.randrange(4)
    if shape == 0:
        return b""
    if shape == 1:
        return b"\x08" + varint(seconds)
    if shape == 2:
        return b"\x08" + varint(seconds) + b"\x10" + varint(r.choice([0, 5000, 999999999, 2**40]))
    return b"\x10\x01\x08" + varint(seconds)  # the other order: Python's general path


_QUANTITIES = [b"", b"\x0a\x00", b"\x0a\x03100", b"\x0a\x02\xff\xfe", b"\x0a\x0250\x0a\x011",
               b"\x08\x01"]
_INT_OR_STRINGS = [b"\x08\x00\x10\x50\x1a\x00", b"\x08\x01\x10\x00\x1a\x04http",
                   b"\x10" + varint(-5), b"", b"\x08\x01", b"\x08\x02\x10\x07",
                   b"\x1a\x01\xff\x08\x01"]
_RAWS = [b"", b"\x0a\x02{}", b'\x0a\x09{"a":[1]}', b"\x0a\x03{x}", b"\x0a\x011", b"\x12\x00"]
_SPECIALS: dict[str, Callable[[random.Random], bytes]] = {
    "time": _time,
    "microtime": _time,
    "quantity": lambda r: r.choice(_QUANTITIES),
    "intorstring": lambda r: r.choice(_INT_OR_STRINGS),
    "raw": lambda r: r.choice(_RAWS),
    "duration": lambda r: b"\x08" + varint(r.choice([0, 10**9, 3_723_000_000_000, -1500])),
    "list": lambda r: r.choice([b"", b"\x0a\x01a\x0a\x02bc"]),
}


def test_random_objects_of_every_kind(pb: Serializer) -> None:
    """Every kind the schema knows, random (mostly well-formed) bytes, then mutated."""
    rng = random.Random(25)
    gen = Generator(rng)
    answered = 0
    kinds = sorted(pb._kinds.items())
    for (group, version, kind), msg in kinds:
        api_version = f"{group}/{version}" if group else version
        for _ in range(6):
            data = wrap(api_version, kind, gen.message(msg, 0))
            answered += check(pb, data)
            for mutated in _mutations(data, rng, 3, every_cut=False):
                check(pb, mutated)
    assert answered > 3 * len(kinds)  # the fast path is the common one


_EXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."


def _tag(msg: str, json: str) -> bytes:
    field = next(f for f in get_serializer().messages[_EXT + msg].fields if f.json == json)
    return field.tag


def _ld(tag: bytes, body: bytes) -> bytes:
    return tag + varint(len(body)) + body


def _nested_schema(depth: int) -> bytes:
    """A CustomResourceDefinition whose openAPIV3Schema nests ``depth`` schemas through
    ``properties`` (a map of JSONSchemaProps, which the C side walks itself)."""
    schema = _ld(_tag("JSONSchemaProps", "type"), b"object")
    for _ in range(depth):
        entry = _ld(b"\x0a", b"a") + _ld(b"\x12", schema)
        schema = _ld(_tag("JSONSchemaProps", "properties"), entry)
    validation = _ld(_tag("CustomResourceValidation", "openAPIV3Schema"), schema)
    version = _ld(b"\x0a", b"v1") + b"\x10\x01\x18\x01"
    version += _ld(_tag("CustomResourceDefinitionVersion", "schema"), validation)
    spec = _ld(b"\x0a", b"a.b") + _ld(_tag("CustomResourceDefinitionSpec", "versions"), version)
    return _ld(_tag("CustomResourceDefinition", "spec"), spec)


@pytest.mark.parametrize("depth", [3, 40, 90, 96, 97, 98, 99, 400, 3000])
def test_deep_nesting_is_answered_or_deferred_never_a_crash(pb: Serializer, depth: int) -> None:
    data = wrap("apiextensions.k8s.io/v1", "CustomResourceDefinition", _nested_schema(depth))
    answered = check(pb, data)
    # the C side nests 100 messages at most, then leaves it to Python (which, deeper
    # still, runs out of its own recursion limit: a RecursionError, not a crash)
    if depth <= 90:
        assert answered
    if depth >= 400:
        assert not answered
    if depth >= 3000:  # past Python's stack too: a conversion error (a 400), not a crash
        with pytest.raises(ConversionError, match="nested too deeply"):
            pb.decode(data)


def test_hostile_lengths_and_garbage(pb: Serializer) -> None:
    rng = random.Random(7)
    head = wrap("v1", "Pod", b"")[:-6]
    for tail in [b"\x12\xff\xff\xff\xff\x0f", b"\x12" + b"\xff" * 10, b"\x0a\x80",
                 b"\x12\x05\x0a\xff\xff\xff\x7f"] + [rng.randbytes(rng.randrange(1, 300))
                                                      for _ in range(2000)]:  # fmt: skip
        check(pb, head + tail)
        check(pb, b"k8s\x00" + tail)
        check(pb, tail)
