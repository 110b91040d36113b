"""Defaulting (``pkg/apiserver/schema/defaulting``) as kube-apiserver applies it when
it decodes a custom resource, from a request or from storage.

First ``null`` values of fields that are neither ``nullable`` nor defaulted are dropped
(``PruneNonNullableNullsWithoutDefaults``); then, top-down, every absent property with
a ``default`` (or present as ``null`` while not ``nullable``) gets a copy of it, and
the walk continues into the defaulted value, so defaults nest.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping

from proxy.apiextensions.schema.structural import JSON, Schema, item_schema, map_value_schema

__all__ = ["apply_defaults"]


def apply_defaults(obj: JSON, schema: Schema) -> None:
    """Default ``obj`` in place per ``schema``."""
    _drop_nulls(obj, schema)
    _default(obj, schema)


def _drop_nulls(value: JSON, schema: Schema) -> None:
    if isinstance(value, MutableMapping):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = map_value_schema(schema)
        for name in list(value):
            sub = props.get(name, extra)
            if not isinstance(sub, Mapping):
                continue
            if value[name] is None:
                if not sub.get("nullable") and "default" not in sub:
                    del value[name]
            else:
                _drop_nulls(value[name], sub)
    elif isinstance(value, list):
        items = item_schema(schema)
        if items is not None:
            for item in value:
                _drop_nulls(item, items)


def _default(value: JSON, schema: Schema) -> None:
    if isinstance(value, MutableMapping):
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        for name, sub in props.items():
            if not isinstance(sub, Mapping) or "default" not in sub:
                continue
            if name not in value or (value[name] is None and not sub.get("nullable")):
                value[name] = copy.deepcopy(sub["default"])
        extra = map_value_schema(schema)
        for name, item in value.items():
            sub = props.get(name, extra)
            if isinstance(sub, Mapping):
                _default(item, sub)
    elif isinstance(value, list):
        items = item_schema(schema)
        if items is not None:
            for i, item in enumerate(value):
                if item is None and "default" in items and not items.get("nullable"):
                    value[i] = copy.deepcopy(items["default"])
                _default(value[i], items)
