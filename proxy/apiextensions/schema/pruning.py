"""Pruning of unknown fields (``pkg/apiserver/schema/pruning``): every field the
structural schema does not specify is removed, except below
``x-kubernetes-preserve-unknown-fields: true``; ``apiVersion``, ``kind`` and
``metadata`` stay at the root and in ``x-kubernetes-embedded-resource`` objects,
whose ``metadata`` keeps only ObjectMeta's fields.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from proxy.apiextensions.schema.structural import (
    JSON,
    OBJECT_META_FIELDS,
    Schema,
    item_schema,
    map_value_schema,
    preserves_unknown,
)
from proxy.apimachinery.validation import field

__all__ = ["prune"]

_TYPE_META = ("apiVersion", "kind", "metadata")


def prune(obj: JSON, schema: Schema) -> list[str]:
    """Remove from ``obj`` (in place) what ``schema`` does not specify. Returns the
    removed fields' paths as the ``unknown field "<path>"`` warnings print them
    (``spec.foo``, ``spec.items[0].bar``), sorted, embedded metadata fields last."""
    removed: list[str] = []
    meta_removed: list[str] = []
    _prune(obj, schema, "", removed, meta_removed, resource_root=True)
    return sorted(removed) + meta_removed


def _prune(
    value: JSON,
    schema: Schema,
    path: str,
    removed: list[str],
    meta_removed: list[str],
    resource_root: bool = False,
) -> None:
    if isinstance(value, MutableMapping):
        _prune_object(value, schema, path, removed, meta_removed, resource_root)
    elif isinstance(value, list):
        items = item_schema(schema)
        for i, item in enumerate(value):
            if items is not None:
                _prune(item, items, field.index(path, i), removed, meta_removed)
            elif not preserves_unknown(schema):
                _prune(item, {}, field.index(path, i), removed, meta_removed)


def _prune_object(
    value: MutableMapping[str, Any],
    schema: Schema,
    path: str,
    removed: list[str],
    meta_removed: list[str],
    resource_root: bool,
) -> None:
    embedded = resource_root or schema.get("x-kubernetes-embedded-resource") is True
    if embedded and not resource_root:
        _prune_embedded_meta(value, path, meta_removed)
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    extra = map_value_schema(schema)
    keep_unknown = preserves_unknown(schema) or schema.get("x-kubernetes-int-or-string")
    for name in list(value):
        child = field.child(path, name)
        if embedded and name in _TYPE_META and name not in props:
            continue
        if name in props:
            _prune(value[name], props[name], child, removed, meta_removed)
        elif extra is not None:
            _prune(value[name], extra, child, removed, meta_removed)
        elif keep_unknown:
            # below preserve-unknown-fields only specified parts are pruned
            continue
        else:
            del value[name]
            removed.append(child)


def _prune_embedded_meta(value: MutableMapping[str, Any], path: str, removed: list[str]) -> None:
    meta = value.get("metadata")
    if isinstance(meta, MutableMapping):
        for name in sorted(meta):
            if name not in OBJECT_META_FIELDS:
                del meta[name]
                removed.append(field.child(path, "metadata", name))
