"""Field paths and sets of them, as sigs.k8s.io/structured-merge-diff's ``fieldpath``.

A :class:`PathElement` names one step into an object: a struct or map field
(``f:name``), an item of an associative list by its key fields (``k:{"name":"web"}``),
an item of a set by its value (``v:"a"``) or an item of an atomic list by its index
(``i:0``). A :class:`Set` is a tree of them: ``members`` are the paths owned at this
level, ``children`` the subtrees below.

Contract:
- elements order as upstream's ``PathElement.Compare``: fields, then keys, then values,
  then indexes; names bytewise; values numbers < strings < bools < lists < maps < null;
- :meth:`Set.to_fields_v1` yields upstream's FieldsV1 JSON object with its keys in the
  order upstream serializes them (``"."`` first when a path is both owned and has
  owned children); :func:`Set.from_fields_v1` reads it back (``ValueError`` on garbage);
- sets are values: operations return new sets and never share mutable subtrees with
  their operands (``insert`` mutates ``self`` only).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import orjson

__all__ = ["Path", "PathElement", "Set", "path_string"]

FIELD, KEY, VALUE, INDEX = 0, 1, 2, 3


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def value_order(value: Any) -> tuple[Any, ...]:
    """Sort key of a JSON value as upstream's ``value.Compare``."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, float(value) if not (isinstance(value, float) and math.isnan(value)) else 0.0)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, value_order(value[k])) for k in sorted(value)))
    return (5,)


class PathElement(NamedTuple):
    """One step of a path. ``text`` holds the name (field), the canonical JSON of the
    value (value) or of the key fields (key); ``pos`` the index of an atomic list item."""

    kind: int
    text: str
    pos: int = 0

    @staticmethod
    def field(name: str) -> PathElement:
        return PathElement(FIELD, name)

    @staticmethod
    def key(fields: Mapping[str, Any]) -> PathElement:
        return PathElement(KEY, _json(dict(sorted(fields.items()))))

    @staticmethod
    def value(value: Any) -> PathElement:
        return PathElement(VALUE, _json(value))

    @staticmethod
    def at(index: int) -> PathElement:
        return PathElement(INDEX, "", index)

    def order(self) -> tuple[Any, ...]:
        if self.kind == FIELD:
            return (FIELD, self.text)
        if self.kind == KEY:
            fields = orjson.loads(self.text)
            return (KEY, tuple((k, value_order(fields[k])) for k in fields))
        if self.kind == VALUE:
            return (VALUE, value_order(orjson.loads(self.text)))
        return (INDEX, self.pos)

    def encode(self) -> str:
        """The FieldsV1 key: ``f:name``, ``k:{...}``, ``v:...``, ``i:N``."""
        if self.kind == FIELD:
            return "f:" + self.text
        if self.kind == KEY:
            return "k:" + self.text
        if self.kind == VALUE:
            return "v:" + self.text
        return f"i:{self.pos}"

    @staticmethod
    def decode(text: str) -> PathElement:
        prefix, _, rest = text.partition(":")
        if prefix == "f" and _:
            return PathElement.field(rest)
        try:
            if prefix == "k":
                fields = orjson.loads(rest)
                if not isinstance(fields, dict) or not fields:
                    raise ValueError(f"key must be a non-empty JSON object: {text!r}")
                return PathElement.key(fields)
            if prefix == "v":
                return PathElement.value(orjson.loads(rest))
            if prefix == "i":
                return PathElement.at(int(rest))
        except (orjson.JSONDecodeError, ValueError) as e:
            raise ValueError(f"parsing path element {text!r}: {e}") from None
        raise ValueError(f"unknown path element type: {text!r}")

    def __str__(self) -> str:
        """As upstream prints it in conflict messages: ``.f``, ``[k=v,...]``, ``[=v]``, ``[0]``."""
        if self.kind == FIELD:
            return "." + self.text
        if self.kind == KEY:
            fields = orjson.loads(self.text)
            return "[" + ",".join(f"{k}={_json(v)}" for k, v in fields.items()) + "]"
        if self.kind == VALUE:
            return "[=" + self.text + "]"
        return f"[{self.pos}]"


Path = tuple[PathElement, ...]


def path_string(path: Path) -> str:
    return "".join(str(pe) for pe in path)


@functools.lru_cache(maxsize=8192)
def _order(pe: PathElement) -> tuple[Any, ...]:
    """:meth:`PathElement.order`, remembered: every encode sorts the same keys and
    values again, and a key's or value's order parses its JSON."""
    return pe.order()


def _sorted(elements: Iterator[PathElement] | set[PathElement]) -> list[PathElement]:
    return sorted(elements, key=_order)


class Set:
    """A set of paths, as a tree (upstream's ``fieldpath.Set``)."""

    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, Set] = {}

    @staticmethod
    def of(*paths: Path) -> Set:
        s = Set()
        for p in paths:
            s.insert(p)
        return s

    def insert(self, path: Path) -> None:
        """Add ``path`` (the empty path is never a member, as upstream)."""
        if not path:
            return
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:  # no throwaway Set per level: inserts are the hot path
                child = node.children[pe] = Set()
            node = child
        node.members.add(path[-1])

    def has(self, path: Path) -> bool:
        node: Set | None = self
        for pe in path[:-1]:
            node = node.children.get(pe) if node is not None else None
        return node is not None and bool(path) and path[-1] in node.members

    def empty(self) -> bool:
        return not self.members and all(c.empty() for c in self.children.values())

    def copy(self) -> Set:
        s = Set()
        s.members = set(self.members)
        s.children = {pe: c.copy() for pe, c in self.children.items()}
        return s

    def _pruned(self) -> Set:
        self.children = {pe: c for pe, c in self.children.items() if not c.empty()}
        return self

    def union(self, other: Set) -> Set:
        s = Set()
        s.members = self.members | other.members
        for pe in self.children.keys() | other.children.keys():
            a, b = self.children.get(pe), other.children.get(pe)
            s.children[pe] = a.union(b) if a and b else (a or b or Set()).copy()
        return s._pruned()

    def intersection(self, other: Set) -> Set:
        s = Set()
        s.members = self.members & other.members
        for pe in self.children.keys() & other.children.keys():
            s.children[pe] = self.children[pe].intersection(other.children[pe])
        return s._pruned()

    def difference(self, other: Set) -> Set:
        """Paths of ``self`` not in ``other`` (member by member, as upstream)."""
        s = Set()
        s.members = self.members - other.members
        for pe, c in self.children.items():
            o = other.children.get(pe)
            s.children[pe] = c.difference(o) if o else c.copy()
        return s._pruned()

    def recursive_difference(self, other: Set) -> Set:
        """Paths of ``self`` with neither themselves nor a prefix in ``other``."""
        s = Set()
        s.members = self.members - other.members
        for pe, c in self.children.items():
            if pe in other.members:
                continue
            o = other.children.get(pe)
            s.children[pe] = c.recursive_difference(o) if o else c.copy()
        return s._pruned()

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        """Every member path, in upstream's order (members and subtrees interleaved)."""
        for pe in _sorted(self.members | self.children.keys()):
            if pe in self.members:
                yield (*prefix, pe)
            child = self.children.get(pe)
            if child is not None:
                yield from child.paths((*prefix, pe))

    def leaves(self) -> Iterator[Path]:
        """Member paths with no owned path below them."""
        for p in self.paths():
            node: Set | None = self
            for pe in p:
                node = node.children.get(pe) if node is not None else None
            if node is None or node.empty():
                yield p

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Set):
            return NotImplemented
        a, b = self._normal(), other._normal()
        return a == b

    def _normal(self) -> tuple[frozenset[PathElement], frozenset[tuple[PathElement, Any]]]:
        kids = frozenset((pe, c._normal()) for pe, c in self.children.items() if not c.empty())
        return frozenset(self.members), kids

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Set({[path_string(p) for p in self.paths()]})"

    def to_fields_v1(self) -> dict[str, Any]:
        """The FieldsV1 object, keys in upstream's serialization order."""
        return self._emit(include_self=False)

    def _emit(self, include_self: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        live = {pe: c for pe, c in self.children.items() if not c.empty()}
        if include_self and (self.members or live):
            out["."] = {}
        for pe in _sorted(self.members | live.keys()):
            child = live.get(pe)
            out[pe.encode()] = {} if child is None else child._emit(pe in self.members)
        return out

    @staticmethod
    def from_fields_v1(doc: Any) -> Set:
        """The set a FieldsV1 object encodes; ``ValueError`` if it is not one."""
        if not isinstance(doc, dict):
            raise ValueError("FieldsV1 must be a JSON object")
        s = Set()
        for key, value in doc.items():
            if key == ".":
                continue
            pe = PathElement.decode(key)
            if not isinstance(value, dict):
                raise ValueError(f"FieldsV1 value of {key!r} must be an object")
            if not value or "." in value:
                s.members.add(pe)
            if any(k != "." for k in value):
                s.children[pe] = Set.from_fields_v1(value)
        return s
