"""A Table row kept with its object version: cells printed once, ages per request.

``kubectl get`` asks for a Table on every call. Printing a row means decoding the
object and running its kind's printer; for 10,000 cached pods that is seconds, where
the JSON LIST only joins stored bytes. So a version's row is printed once, at
``SYMBOLIC_NOW`` (:mod:`proxy.printers.duration`): every duration up to "now" (AGE,
``RESTARTS 3 (5m ago)``, a running job's DURATION) becomes a mark carrying its start
time, and the row is kept, encoded, as a :class:`RowTemplate` with the version (like
the version's protobuf bytes, ``StoredObject.derived``). A request renders each mark at
its own ``now`` and joins bytes: the row is
``{"cells":[...],"conditions":[...],"object":`` then the row's object (``null``, the
version's JSON, or its PartialObjectMetadata, whose ``metadata`` is sliced out of the
stored JSON where it appears there verbatim) then ``}``: byte for byte what
``orjson.dumps(TableConvertor.row(obj))`` gives for orjson-encoded objects.

An object whose JSON already contains the mark's text (a NUL followed by ``age:``)
is printed directly, never templated, so no user text can pose as an age.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping

import orjson

from proxy.printers.columns import JSON, Printer, object_meta
from proxy.printers.duration import AGE_MARK, SYMBOLIC_NOW, human_duration
from storage.interfaces import StoredObject

__all__ = ["RowTemplate", "metadata_json", "render_age", "template_of"]

_MARK = orjson.dumps(AGE_MARK)[1:-1]  # the mark as it appears inside encoded JSON
_NUL = orjson.dumps("\0")[1:-1]
_METADATA_KEY = b'"metadata":'


class RowTemplate:
    """One version's encoded row without its object: ``parts`` alternates encoded
    bytes and the start (epoch microseconds) of a duration up to now, beginning and
    ending with bytes. ``metadata``: where the version's ``metadata`` JSON is in its
    stored bytes (``start << 32 | end``, found with the row: what
    :func:`metadata_json` finds, without a lookup of its own per request), or that
    JSON when the stored bytes do not hold it verbatim."""

    __slots__ = ("metadata", "parts")

    def __init__(self, parts: tuple[bytes | int, ...], metadata: int | bytes = b""):
        self.parts = parts
        self.metadata = metadata

    def head(self, age: Callable[[int], bytes]) -> bytes:
        """``{"cells":[...],...,"object":`` with each age rendered by ``age`` (from
        its start)."""
        parts = self.parts
        if len(parts) == 1:
            return parts[0]  # type: ignore[return-value]
        if len(parts) == 3:  # one age (a pod's, most kinds'): no loop
            return parts[0] + age(parts[1]) + parts[2]  # type: ignore[operator,arg-type,return-value]
        return b"".join(p if isinstance(p, bytes) else age(p) for p in parts)

    def metadata_of(self, data: bytes) -> bytes:
        """The version's ``metadata`` JSON (``data``: its stored bytes)."""
        where = self.metadata
        if isinstance(where, bytes):
            return where
        return data[where >> 32 : where & 0xFFFFFFFF]


def render_age(now_us: int, start_us: int) -> bytes:
    """A duration from ``start_us`` to ``now_us`` as the row prints it."""
    return human_duration(dt.timedelta(microseconds=now_us - start_us)).encode()


_UNTEMPLATED = RowTemplate((b"",))  # kept for a version printed directly


def template_of(stored: StoredObject, key: str, printer: Printer) -> RowTemplate | None:
    """The version's row template for ``printer`` (kept with the version under
    ``key``, made at most once), or None when the object cannot be templated."""
    found = stored.derived(key, lambda s: _make(s, printer))
    return found if found is not _UNTEMPLATED else None


def _make(stored: StoredObject, printer: Printer) -> RowTemplate:
    if _MARK in stored.data:  # searched once per version, with the row (not per request)
        return _UNTEMPLATED
    obj = stored.decoded()
    cells, conditions = printer(obj, SYMBOLIC_NOW)
    row: dict[str, JSON] = {"cells": cells}
    if conditions:
        row["conditions"] = conditions
    encoded = orjson.dumps(row)[:-1] + b',"object":'
    where = _metadata(stored.data, object_meta(obj))
    metadata = where if isinstance(where, bytes) else where[0] << 32 | where[1]
    return RowTemplate(_split(encoded), metadata)


def _split(encoded: bytes) -> tuple[bytes | int, ...]:
    pieces = encoded.split(_MARK)
    parts: list[bytes | int] = [pieces[0]]
    for piece in pieces[1:]:
        start, _, rest = piece.partition(_NUL)
        parts += [int(start), rest]
    return tuple(parts)


def metadata_json(stored: StoredObject) -> bytes:
    """The version's ``metadata`` as JSON (what a PartialObjectMetadata carries): where
    it appears verbatim in the stored bytes (found once per version, kept as offsets),
    else its own encoding."""
    where = stored.derived("metadata-json", lambda s: _metadata(s.data, object_meta(s.decoded())))
    if isinstance(where, bytes):
        return where
    return stored.data[where[0] : where[1]]


def _metadata(data: bytes, meta: Mapping[str, JSON]) -> tuple[int, int] | bytes:
    encoded = orjson.dumps(dict(meta))
    at = data.find(_METADATA_KEY + encoded)
    if at < 0:  # not stored as orjson writes it (another encoder): keep a copy
        return encoded
    start = at + len(_METADATA_KEY)
    return (start, start + len(encoded))
