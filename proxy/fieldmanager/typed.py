"""The typed view of objects: structured-merge-diff's schema atoms, built from the
OpenAPI schemas already served (:mod:`proxy.openapi.schemas`), and the type resolver.

An :class:`Atom` says how one position of an object merges and is owned:

- ``scalar``: a leaf (strings, numbers, bools, IntOrString, Quantity, Time);
- ``list``: ``atomic`` (owned and replaced whole), ``set`` (items are scalars owned by
  value, ``v:``) or ``map`` (items are objects owned by their key fields, ``k:{...}``),
  from ``x-kubernetes-list-type``/``x-kubernetes-list-map-keys``, else, as upstream's
  schema conversion does for built-in types, from ``x-kubernetes-patch-strategy: merge``
  (with ``x-kubernetes-patch-merge-key``: a map keyed by it; without: a set); else atomic;
- ``map``: a struct (declared ``properties``) and/or a map (``additionalProperties``);
  ``x-kubernetes-map-type: atomic`` makes it a leaf;
- ``deduced``: untyped (``x-kubernetes-preserve-unknown-fields``, ``JSON``): maps are
  granular, lists atomic, decided by the value;
- ``atomic``: untyped and owned whole (``RawExtension``, ``FieldsV1``).

The types: :func:`resolve_type` ``(group, version, kind) -> Atom`` answers a built-in
kind's by its schema, else a deduced type; :func:`custom_type` builds a custom kind's
from its OpenAPI v3 schema (a CRD version's ``schema.openAPIV3Schema``; its ``metadata``
is ObjectMeta as upstream embeds it), kept with the served version, not registered.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from proxy.openapi import schemas
from proxy.openapi.schemas import SchemaNode

__all__ = [
    "DEDUCED",
    "Atom",
    "custom_type",
    "resolve_type",
]

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# List-map key fields with a schema default upstream fills in when an item omits them
# (kube's OpenAPI carries ``default: "TCP"`` on the ports' ``protocol``; the schemas we
# serve do not carry defaults).
KEY_DEFAULTS: Mapping[str, Any] = {"protocol": "TCP"}


class Atom:
    """One schema position (see the module docstring). Children are built lazily and
    cached: the built-in schemas are recursive (``JSONSchemaProps``)."""

    __slots__ = ("_elem", "_fields", "definition", "keys", "kind", "node", "relationship")

    def __init__(
        self,
        kind: str,
        node: SchemaNode | None = None,
        relationship: str = "",
        keys: tuple[str, ...] = (),
        definition: str | None = None,
    ) -> None:
        self.kind = kind
        self.node = node
        self.relationship = relationship
        self.keys = keys
        self.definition = definition
        self._fields: dict[str, Atom | None] = {}
        self._elem: Atom | None = None

    def __repr__(self) -> str:
        return f"Atom({self.kind}, {self.relationship or '-'}, {self.definition or ''})"

    @property
    def atomic(self) -> bool:
        return self.relationship == "atomic"

    def field(self, name: str) -> Atom | None:
        """A declared field's atom; None when the struct does not declare ``name``."""
        if self.kind == "deduced":
            return DEDUCED
        if name not in self._fields:
            child = self.node.field(name) if self.node is not None else None
            self._fields[name] = None if child is None else atom_of(child)
        return self._fields[name]

    def elem(self) -> Atom | None:
        """Map values' or list items' atom; None for a struct without extra keys."""
        if self.kind == "deduced":
            return DEDUCED
        if self._elem is None and self.node is not None:
            child = self.node.items() if self.kind == "list" else self.node.additional()
            if child is not None:
                self._elem = atom_of(child)
            elif self.kind == "list" or self.node.preserves_unknown:
                self._elem = DEDUCED
        return self._elem

    def child(self, name: str) -> Atom | None:
        """The atom of key ``name`` of a map/struct: the field, else the map value."""
        found = self.field(name)
        return found if found is not None else self.elem()

    def declares(self, name: str) -> bool:
        return self.kind == "map" and self.field(name) is not None


DEDUCED = Atom("deduced", relationship="separable")
UNTYPED_ATOMIC = Atom("atomic", relationship="atomic")
SCALAR = Atom("scalar")


def atom_of(node: SchemaNode) -> Atom:
    """The atom of a schema node (cached per node)."""
    cached = _ATOMS.get(id(node))
    if cached is not None and cached[0] is node:
        return cached[1]
    atom = _build(node)
    _ATOMS[id(node)] = (node, atom)
    return atom


_ATOMS: dict[int, tuple[SchemaNode, Atom]] = {}


def _build(node: SchemaNode) -> Atom:
    schema = node.resolved
    types = node.types
    definition = node.definition
    if "array" in types:
        list_type = node.list_type
        if not list_type:
            meta = node.patch_meta
            if "merge" in meta.strategies:
                list_type = "map" if meta.merge_key else "set"
            else:
                list_type = "atomic"
        keys = node.list_map_keys if list_type == "map" else ()
        if list_type == "map" and not keys and node.patch_meta.merge_key:
            keys = (node.patch_meta.merge_key,)
        return Atom("list", node, list_type, keys, definition)
    if "object" in types or node.is_struct:
        map_type = str(schema.get("x-kubernetes-map-type", ""))
        has_extra = isinstance(schema.get("additionalProperties"), Mapping)
        if not node.is_struct and not has_extra and not node.preserves_unknown:
            return UNTYPED_ATOMIC  # RawExtension, FieldsV1: an object of anything
        rel = "atomic" if map_type == "atomic" else "separable"
        return Atom("map", node, rel, definition=definition)
    if not types and "properties" not in schema:
        return DEDUCED  # JSON: any value
    return SCALAR


# --- the resolver -------------------------------------------------------------------

class _RootNode(SchemaNode):
    """A custom resource's root schema whose ``metadata`` is ObjectMeta."""

    def field(self, name: str) -> SchemaNode | None:
        if name == "metadata":
            return schemas.node_for_definition(_OBJECT_META)
        if name in ("apiVersion", "kind"):
            return _STRING
        return super().field(name)


_STRING = SchemaNode({"type": "string"})


def custom_type(openapi_v3_schema: Mapping[str, Any] | None) -> Atom:
    """The root atom of a kind defined by ``openapi_v3_schema`` (a structural schema,
    e.g. a CRD version's ``openAPIV3Schema``; None: deduced). ``x-kubernetes-list-type``,
    ``-list-map-keys``, ``-map-type`` and ``-preserve-unknown-fields`` in it drive
    ownership and merging. The caller keeps it with the kind's served version
    (``proxy.registry.kind_schema``)."""
    if openapi_v3_schema is None:
        return DEDUCED
    schema = dict(openapi_v3_schema)
    schema.setdefault("type", "object")
    return Atom("map", _RootNode(schema), "separable")


def resolve_type(group: str, version: str, kind: str) -> Atom:
    """The root atom of a built-in kind's objects by its schema, else deduced (every map
    granular, every list atomic). A custom kind's comes from :func:`custom_type`."""
    return _builtin(group, version, kind)


@functools.cache
def _builtin(group: str, version: str, kind: str) -> Atom:
    node = schemas.kind_schema(group, version, kind)
    return DEDUCED if node is None else atom_of(node)
