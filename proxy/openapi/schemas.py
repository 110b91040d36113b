"""Shared access to the Kubernetes API schemas shipped by ``kubernetes-validate``.

The package carries, per Kubernetes minor version, one JSON-schema file of every type
definition (``_definitions.json``) with the OpenAPI extensions the apiserver publishes:
``x-kubernetes-group-version-kind``, ``x-kubernetes-patch-strategy``,
``x-kubernetes-patch-merge-key``, ``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys``.
Strategic merge patch, field validation and the OpenAPI v3 documents all read them here.

Contract:
- the definitions are loaded once, lazily, on first use, and cached for the process;
- :class:`SchemaNode` wraps one schema with its ``$ref`` resolved on demand (the schemas
  are recursive, e.g. ``JSONSchemaProps``, so nothing is expanded eagerly);
- :func:`kind_schema` returns the root node of a kind, or ``None`` for kinds the package
  does not know (custom resources): callers then fall back to schema-less behaviour.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "PatchMeta",
    "SchemaNode",
    "definition_name",
    "definitions",
    "kind_schema",
    "lookup",
    "node_for_definition",
    "object_meta_ref",
    "patch_meta",
    "ref_name",
    "schema_version",
]

_REF_PREFIX = "#/$defs/"
_VERSION_DIR = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-local$")

JSONSchema = Mapping[str, Any]


@functools.cache
def schema_version() -> str:
    """The newest Kubernetes version whose schemas the package ships, e.g. ``1.37.0``."""
    root = importlib.resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
    found: list[tuple[int, int, int]] = []
    for entry in root.iterdir():
        m = _VERSION_DIR.match(entry.name)
        if m:
            found.append((int(m[1]), int(m[2]), int(m[3])))
    if not found:
        raise RuntimeError("kubernetes-validate ships no schemas")
    return ".".join(str(p) for p in max(found))


@functools.cache
def definitions() -> Mapping[str, JSONSchema]:
    """Every definition by its OpenAPI name (``io.k8s.api.core.v1.Pod``); loaded once."""
    root = importlib.resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
    path = root.joinpath(f"v{schema_version()}-local").joinpath("_definitions.json")
    doc = orjson.loads(path.read_bytes())
    defs: dict[str, JSONSchema] = doc["$defs"]
    return defs


@functools.cache
def _gvk_index() -> Mapping[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            key = (gvk.get("group", ""), gvk["version"], gvk["kind"])
            # DeleteOptions, WatchEvent ... are registered in every group; the resource
            # kinds are unique. Keep the first (they are identical types anyway).
            index.setdefault(key, name)
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The definition name of a group/version/kind, or ``None`` if unknown."""
    return _gvk_index().get((group, version, kind))


def object_meta_ref() -> str:
    """The ``$ref`` of ObjectMeta, for schemas written outside the package's."""
    return _REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def kind_schema(group: str, version: str, kind: str) -> SchemaNode | None:
    """The root schema of a built-in kind (``""``, ``"v1"``, ``"Pod"``), or ``None`` if
    unknown (a custom kind's is its served version's: ``ResourceInfo.request_schema``)."""
    name = definition_name(group, version, kind)
    return None if name is None else node_for_definition(name)


@functools.cache
def node_for_definition(name: str) -> SchemaNode:
    """The node of a named definition; nodes of definitions are shared and cached."""
    return SchemaNode(definitions()[name], name=name)


def ref_name(ref: str) -> str:
    """``#/$defs/io.k8s.X`` → ``io.k8s.X``."""
    if not ref.startswith(_REF_PREFIX):
        raise ValueError(f"unsupported $ref {ref!r}")
    return ref[len(_REF_PREFIX) :]


@dataclass(frozen=True)
class PatchMeta:
    """How strategic merge patch treats one field: its strategies and list merge key."""

    strategies: tuple[str, ...] = ()
    merge_key: str = ""


@dataclass(eq=False)
class SchemaNode:
    """One schema with its ``$ref`` (and ``allOf``) resolved; children built lazily.

    ``raw`` is the schema as written where the node is used (a property carries its own
    description and patch extensions next to its ``$ref``); ``resolved`` merges it over
    the referenced definition. ``name`` is the definition name when the node is one.
    """

    raw: JSONSchema
    name: str | None = None
    _cache: dict[str, SchemaNode | None] = field(default_factory=dict, repr=False)

    @functools.cached_property
    def resolved(self) -> JSONSchema:
        out: dict[str, Any] = {}
        ref = self.raw.get("$ref")
        if isinstance(ref, str):
            out.update(node_for_definition(ref_name(ref)).resolved)
        for part in self.raw.get("allOf", ()):
            out.update(SchemaNode(part).resolved)
        out.update((k, v) for k, v in self.raw.items() if k not in ("$ref", "allOf"))
        return out

    @property
    def definition(self) -> str | None:
        """The definition this node is or refers to (``io.k8s.api.core.v1.Container``)."""
        ref = self.raw.get("$ref")
        if isinstance(ref, str):
            return ref_name(ref)
        return self.name

    @functools.cached_property
    def types(self) -> frozenset[str]:
        """JSON types allowed (``null`` removed); empty means any JSON value."""
        schema = self.resolved
        found: set[str] = set()
        for alt in [schema, *schema.get("oneOf", ()), *schema.get("anyOf", ())]:
            t = alt.get("type")
            if isinstance(t, str):
                found.add(t)
            elif isinstance(t, list):
                found.update(x for x in t if isinstance(x, str))
        found.discard("null")
        if not found and "properties" in schema:
            found.add("object")
        return frozenset(found)

    @property
    def properties(self) -> Mapping[str, JSONSchema]:
        props = self.resolved.get("properties")
        return props if isinstance(props, Mapping) else {}

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.resolved.get("required", ()))

    @property
    def is_struct(self) -> bool:
        """An object with declared properties (unknown keys are unknown fields)."""
        return "properties" in self.resolved

    @property
    def preserves_unknown(self) -> bool:
        schema = self.resolved
        return bool(schema.get("x-kubernetes-preserve-unknown-fields")) or (
            not self.types and "properties" not in schema
        )

    def field(self, name: str) -> SchemaNode | None:
        """The schema of property ``name``, or ``None`` if the object has no such field."""
        key = "p:" + name
        if key not in self._cache:
            prop = self.properties.get(name)
            self._cache[key] = None if prop is None else SchemaNode(prop)
        return self._cache[key]

    def items(self) -> SchemaNode | None:
        """The schema of list elements, or ``None`` if not a typed list."""
        if "i" not in self._cache:
            items = self.resolved.get("items")
            self._cache["i"] = SchemaNode(items) if isinstance(items, Mapping) else None
        return self._cache["i"]

    def additional(self) -> SchemaNode | None:
        """The schema of map values (``additionalProperties``), or ``None``."""
        if "a" not in self._cache:
            extra = self.resolved.get("additionalProperties")
            self._cache["a"] = SchemaNode(extra) if isinstance(extra, Mapping) else None
        return self._cache["a"]

    def child(self, key: str) -> SchemaNode | None:
        """The schema of ``key`` in an object: a declared field, else the map value."""
        return self.field(key) if self.is_struct else self.additional()

    @property
    def patch_meta(self) -> PatchMeta:
        schema = self.resolved
        raw = schema.get("x-kubernetes-patch-strategy", "")
        strategies = tuple(s for s in str(raw).split(",") if s)
        return PatchMeta(strategies, str(schema.get("x-kubernetes-patch-merge-key", "")))

    @property
    def list_type(self) -> str:
        return str(self.resolved.get("x-kubernetes-list-type", ""))

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        return tuple(self.resolved.get("x-kubernetes-list-map-keys", ()))


def lookup(node: SchemaNode | None, path: str) -> SchemaNode | None:
    """The node at a dotted field path (``spec.containers.ports``); lists are stepped into."""
    for part in path.split(".") if path else ():
        while node is not None and "array" in node.types:
            node = node.items()
        if node is None:
            return None
        node = node.child(part)
    return node


def patch_meta(node: SchemaNode | None, path: str) -> PatchMeta:
    """The patch strategy and merge key of the field at ``path`` below ``node``."""
    target = lookup(node, path)
    return PatchMeta() if target is None else target.patch_meta
