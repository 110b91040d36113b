"""Walking a CRD's OpenAPI v3 schema (``pkg/apiserver/schema`` structural schemas) as
the decoded JSON it is: the sub-schema of a property, an item, a map value, the
``x-kubernetes-*`` extensions, and Go's renderings of unstructured values.

A structural schema is a plain ``dict``; absent keywords are absent keys.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from proxy.apimachinery.validation import field

__all__ = [
    "JSON",
    "MISSING",
    "OBJECT_META_FIELDS",
    "Schema",
    "correlated_children",
    "go_interface",
    "has_rules",
    "item_schema",
    "json_type",
    "map_value_schema",
    "mapping",
    "preserves_unknown",
    "property_schema",
    "schema_children",
    "walk",
]

JSON = Any
Schema = Mapping[str, Any]

MISSING: Any = object()
"""The correlated old value when there is none (create, or an item without one)."""

OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
})  # fmt: skip


def mapping(value: JSON) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def property_schema(schema: Schema, name: str) -> Schema | None:
    """The schema of property ``name`` of an object value, or None if unknown."""
    props = schema.get("properties")
    if isinstance(props, Mapping) and name in props:
        sub = props[name]
        return sub if isinstance(sub, Mapping) else {}
    return map_value_schema(schema)


def map_value_schema(schema: Schema) -> Schema | None:
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return extra
    if extra is True:
        return {}
    return None


def item_schema(schema: Schema) -> Schema | None:
    items = schema.get("items")
    return items if isinstance(items, Mapping) else None


def preserves_unknown(schema: Schema) -> bool:
    return schema.get("x-kubernetes-preserve-unknown-fields") is True


def json_type(value: JSON) -> str:
    """The JSON type of a decoded value as kube-openapi names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def walk(schema: Schema) -> Iterator[Schema]:
    """Every schema node of the skeleton (not the value validations), root first."""
    stack = [schema]
    while stack:
        node = stack.pop()
        yield node
        props = node.get("properties")
        if isinstance(props, Mapping):
            stack.extend(p for p in props.values() if isinstance(p, Mapping))
        for key in ("items", "additionalProperties"):
            sub = node.get(key)
            if isinstance(sub, Mapping):
                stack.append(sub)


def has_rules(schema: Schema) -> bool:
    """Whether any node has ``x-kubernetes-validations``."""
    return any(node.get("x-kubernetes-validations") for node in walk(schema))


def go_interface(value: JSON) -> str:
    """Go's ``%#v`` of an unstructured value (``map[string]interface {}{"a":1}``)."""
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, str):
        return field.go_quote(value)
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_interface(v) for v in value) + "}"
    if isinstance(value, Mapping):
        entries = ", ".join(f'"{k}":{go_interface(value[k])}' for k in sorted(value))
        return "map[string]interface {}{" + entries + "}"
    return str(value)


def schema_children(
    schema: Schema, path: str, keys: tuple[str, ...] = ("items", "additionalProperties")
) -> Iterator[tuple[Schema, str]]:
    """The sub-schemas of ``properties`` and of ``keys``, with their schema paths
    (``<path>.properties[name]``, ``<path>.items``)."""
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            if isinstance(sub, Mapping):
                yield sub, f"{path}.properties[{name}]"
    for key in keys:
        sub = schema.get(key)
        if isinstance(sub, Mapping):
            yield sub, f"{path}.{key}" if path else key


def correlated_children(
    value: JSON, old: JSON, schema: Schema, path: str, root: bool = False, keyed: bool = False
) -> Iterator[tuple[JSON, JSON, Schema, str]]:
    """Each child value with a schema, its correlated old value (:data:`MISSING` if
    none), its schema and its path; TypeMeta and ObjectMeta of the root are skipped.
    Map values are at ``path.key`` (kube-openapi), or ``path[key]`` if ``keyed`` (CEL
    rules)."""
    if isinstance(value, Mapping):
        old_map = old if isinstance(old, Mapping) else {}
        for name, item in value.items():
            if root and name in ("apiVersion", "kind", "metadata"):
                continue
            sub = property_schema(schema, name)
            if sub is None:
                continue
            props = schema.get("properties")
            is_key = keyed and not (isinstance(props, Mapping) and name in props)
            at = field.key(path, name) if is_key else field.child(path, name)
            yield item, old_map.get(name, MISSING), sub, at
    elif isinstance(value, list):
        items = item_schema(schema)
        if items is not None:
            olds = correlate_items(value, old, schema)
            for i, item in enumerate(value):
                yield item, olds[i], items, field.index(path, i)


def correlate_items(value: list[JSON], old: JSON, schema: Schema) -> list[JSON]:
    """The old value of every item of ``value``: the item with the same keys in a
    ``map`` list, the equal item in a ``set`` (for ratcheting: CRD validation refuses
    ``oldSelf`` below sets), none in atomic lists."""
    list_type = schema.get("x-kubernetes-list-type")
    if not isinstance(old, list) or list_type not in ("map", "set"):
        return [MISSING] * len(value)
    if list_type == "set":
        return [v if v in old else MISSING for v in value]
    keys = [k for k in schema.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)]

    def key_of(item: JSON) -> object:
        if not isinstance(item, Mapping):
            return None
        return tuple(repr(item.get(k)) for k in keys)

    by_key = {key_of(o): o for o in old}
    return [by_key.get(key_of(v), MISSING) for v in value]
