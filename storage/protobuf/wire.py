"""Protobuf wire primitives: base-128 varints (negative ints as 10-byte two's complement,
as Go writes int32/int64)."""

from __future__ import annotations

_U64 = (1 << 64) - 1


class WireError(ValueError):
    """Bytes that are not a valid protobuf encoding."""


def varint(value: int) -> bytes:
    """The varint encoding of ``value`` (taken modulo 2**64)."""
    value &= _U64
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it); WireError if truncated or longer than 64 bits."""
    try:
        byte = data[pos]
        if byte < 0x80:
            return byte, pos + 1
        result, shift = byte & 0x7F, 7
        while True:
            pos += 1
            byte = data[pos]
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result, pos + 1
            shift += 7
            if shift > 63:
                raise WireError("varint overflow")
    except IndexError:
        raise WireError("unexpected EOF") from None


def last_fields(data: bytes, pos: int = 0) -> dict[int, bytes | int]:
    """The fields of a flat message from ``pos`` on, by number (the last occurrence
    wins): varints as ints, length-delimited fields as bytes. WireError if malformed or
    another wire type appears (the small messages read this way use only these two)."""
    out: dict[int, bytes | int] = {}
    end = len(data)
    while pos < end:
        key, pos = read_varint(data, pos)
        if key & 7 == 2:
            size, pos = read_varint(data, pos)
            if pos + size > end:
                raise WireError("unexpected EOF")
            out[key >> 3] = data[pos : pos + size]
            pos += size
        elif key & 7 == 0:
            out[key >> 3], pos = read_varint(data, pos)
        else:
            raise WireError(f"illegal wireType {key & 7}")
    return out


def int_field(fields: dict[int, bytes | int], number: int) -> int:
    """Field ``number`` of ``last_fields`` as a varint (0 when absent)."""
    value = fields.get(number, 0)
    if not isinstance(value, int):
        raise WireError(f"field {number}: expected a varint")
    return value


def bytes_field(fields: dict[int, bytes | int], number: int) -> bytes:
    """Field ``number`` of ``last_fields`` as bytes (empty when absent)."""
    value = fields.get(number, b"")
    if not isinstance(value, bytes):
        raise WireError(f"field {number}: expected a length-delimited field")
    return value
