"""Validation of one version's ``openAPIV3Schema`` when a CRD is written
(``validateCustomResourceDefinitionValidation``): the structural schema rules
(``structural.ValidateStructural``), the OpenAPI keywords CRDs refuse, the
``x-kubernetes-*`` extension rules, defaults (``defaulting.ValidateDefaults``), then —
only when all of that passed — compilation and estimated cost of the CEL rules
(:mod:`.rule_compilation`).

``path`` is where the schema sits: ``spec.validation.openAPIV3Schema`` when every
version has the same schema, else ``spec.versions[i].schema.openAPIV3Schema``.
Schema paths print properties as ``properties[name]``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from dataclasses import field as dc_field
from typing import Any

from proxy.apiextensions.schema import rule_compilation
from proxy.apiextensions.schema.pruning import prune
from proxy.apiextensions.schema.structural import (
    JSON,
    MISSING,
    Schema,
    go_interface,
    schema_children,
)
from proxy.apiextensions.schema.validation import validate_value
from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList, GoLiteral

__all__ = ["validate_schema"]

_META_FIELDS = ("metadata", "kind", "apiVersion")
_VALUE_VALIDATION_FORBIDDEN = {
    "type": "must be empty to be structural",
    "description": "must be empty to be structural",
    "title": "must be empty to be structural",
    "default": "must be undefined to be structural",
    "additionalProperties": "must be undefined to be structural",
    "nullable": "must be false to be structural",
    "x-kubernetes-preserve-unknown-fields": "must be false to be structural",
    "x-kubernetes-embedded-resource": "must be false to be structural",
    "x-kubernetes-int-or-string": "must be false to be structural",
    "x-kubernetes-list-type": "must be undefined to be structural",
    "x-kubernetes-list-map-keys": "must be empty to be structural",
    "x-kubernetes-map-type": "must be undefined to be structural",
    "x-kubernetes-validations": "must be empty to be structural",
}
_UNSUPPORTED = {
    "id": "id is not supported",
    "additionalItems": "additionalItems is not supported",
    "patternProperties": "patternProperties is not supported",
    "definitions": "definitions is not supported",
    "dependencies": "dependencies is not supported",
    "$ref": "$ref is not supported",
}
_TYPES = ("array", "boolean", "integer", "number", "object", "string")


def validate_schema(schema: JSON, path: str, status_enabled: bool = False) -> ErrorList:
    """Every error of a version's ``openAPIV3Schema`` at ``path``."""
    errs: ErrorList = []
    if not isinstance(schema, Mapping):
        return errs
    if status_enabled:
        errs.extend(_status_root(schema, path))
    if schema.get("nullable") is True:
        errs.append(
            field.forbidden(field.child(path, "nullable"), "nullable cannot be true at the root")
        )
    structural: ErrorList = []
    _structural(schema, path, structural, root=True)
    errs.extend(structural)
    if not structural:
        errs.extend(_defaults(schema, path))
    # CEL rules compile only if the schema is structural with valid defaults, and only
    # at nodes whose subtree has no schema error (their types would be meaningless)
    walk = _Walk(total=None if errs else rule_compilation.CostTotal())
    _keywords(schema, path, walk, _Node(root=True))
    errs.extend(walk.errs)
    errs.extend(walk.cel_errs)
    if walk.total is not None:
        errs.extend(rule_compilation.check_total(walk.total, path))
    return errs


@dataclass
class _Walk:
    """What a walk over a schema collects."""

    total: rule_compilation.CostTotal | None
    errs: ErrorList = dc_field(default_factory=list)
    cel_errs: ErrorList = dc_field(default_factory=list)


@dataclass(frozen=True)
class _Node:
    """Where a schema node sits: at the root, inside ObjectMeta/TypeMeta, below an
    uncorrelatable list or map (``forbid_old``), how often its rules can run."""

    root: bool = False
    in_meta: bool = False
    forbid_old: str | None = None
    cardinality: int = 1


_ROOT_WITH_STATUS = {
    "description": "Description", "type": "Type", "format": "Format", "title": "Title",
    "maximum": "Maximum", "exclusiveMaximum": "ExclusiveMaximum", "minimum": "Minimum",
    "exclusiveMinimum": "ExclusiveMinimum", "maxLength": "MaxLength", "minLength": "MinLength",
    "pattern": "Pattern", "maxItems": "MaxItems", "minItems": "MinItems",
    "uniqueItems": "UniqueItems", "multipleOf": "MultipleOf", "required": "Required",
    "items": "Items", "properties": "Properties", "externalDocs": "ExternalDocs",
    "example": "Example", "x-kubernetes-preserve-unknown-fields": "XPreserveUnknownFields",
    "x-kubernetes-validations": "XValidations",
}  # fmt: skip


def _status_root(schema: Schema, path: str) -> ErrorList:
    """With the status subresource, status's schema is cut out as
    ``properties[status]``, so the root may only carry what survives that."""
    if schema.get("type") not in (None, "", "object"):
        return [
            field.invalid(
                field.child(path, "type"),
                schema["type"],
                'only "object" is allowed as the type at the root of the schema if the status '
                "subresource is enabled",
            )
        ]
    zero: tuple[object, ...] = (None, False, "", [], {})
    if all(key in _ROOT_WITH_STATUS for key, value in schema.items() if value not in zero):
        return []
    allowed = " ".join(_ROOT_WITH_STATUS.values())
    # the value is the internal JSONSchemaProps struct, printed in full upstream
    return [
        field.invalid(
            path,
            GoLiteral("apiextensions.JSONSchemaProps{...}"),
            f"only [{allowed}] fields are allowed at the root of the schema if the status "
            "subresource is enabled",
        )
    ]


# ------------------------------------------------------------- structural rules


def _structural(
    schema: Schema, path: str, errs: ErrorList, root: bool = False, embedded_child: str = ""
) -> None:
    kind = schema.get("type")
    if root and kind != "object":
        if not kind:
            errs.append(field.required(field.child(path, "type"), "must not be empty at the root"))
        else:
            errs.append(
                field.invalid(field.child(path, "type"), kind, "must be object at the root")
            )
    elif (
        not kind
        and "$ref" not in schema
        and not (
            schema.get("x-kubernetes-int-or-string")
            or schema.get("x-kubernetes-preserve-unknown-fields")
            or schema.get("x-kubernetes-embedded-resource")
        )
    ):
        errs.append(
            field.required(
                field.child(path, "type"), "must not be empty for specified object fields"
            )
        )
    if embedded_child in ("apiVersion", "kind") and kind not in (None, "string"):
        errs.append(field.invalid(field.child(path, "type"), kind, "must be string"))
    if embedded_child == "metadata" and kind not in (None, "object"):
        errs.append(field.invalid(field.child(path, "type"), kind, "must be object"))
    if schema.get("x-kubernetes-embedded-resource"):
        if not schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties"):
            errs.append(
                field.required(
                    field.child(path, "properties"),
                    "must not be empty if x-kubernetes-embedded-resource is "
                    "true without x-kubernetes-preserve-unknown-fields",
                )
            )
        if kind != "object":
            errs.append(
                field.invalid(
                    field.child(path, "type"),
                    kind or "",
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            )
    props = schema.get("properties")
    if isinstance(props, Mapping):
        embedded = root or schema.get("x-kubernetes-embedded-resource") is True
        for name, sub in props.items():
            if not isinstance(sub, Mapping):
                continue
            sub_path = f"{path}.properties[{name}]"
            if root and name == "metadata":
                _root_metadata(sub, sub_path, errs)
            _structural(
                sub,
                sub_path,
                errs,
                embedded_child=name if embedded and name in _META_FIELDS else "",
            )
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, Mapping):
            _structural(sub, field.child(path, key), errs)
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(schema.get(key) or ()):
            if isinstance(sub, Mapping):
                _value_validation(sub, f"{path}.{key}[{i}]", errs, int_or_string)
    if isinstance(schema.get("not"), Mapping):
        _value_validation(schema["not"], f"{path}.not", errs)


def _root_metadata(schema: Schema, path: str, errs: ErrorList) -> None:
    props = schema.get("properties")
    if isinstance(props, Mapping) and set(props) - {"name", "generateName"}:
        errs.append(
            field.forbidden(
                path,
                "must not specify anything other than name and "
                "generateName, but metadata is implicitly specified",
            )
        )


def _value_validation(
    schema: Schema, path: str, errs: ErrorList, int_or_string: bool = False
) -> None:
    """allOf/anyOf/oneOf/not may only validate values, not declare types or shapes
    (under ``x-kubernetes-int-or-string`` they may name ``integer`` and ``string``)."""
    for key, detail in _VALUE_VALIDATION_FORBIDDEN.items():
        value = schema.get(key)
        if key == "type" and int_or_string and value in ("integer", "string"):
            continue
        if value not in (None, False, "", [], {}):
            errs.append(field.forbidden(field.child(path, key), detail))
    for sub, sub_path in schema_children(schema, path, ("items", "not")):
        _value_validation(sub, sub_path, errs)
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(schema.get(key) or ()):
            if isinstance(sub, Mapping):
                _value_validation(sub, f"{path}.{key}[{i}]", errs, int_or_string)


# ---------------------------------------------------------- keywords, extensions


def _keywords(schema: Schema, path: str, walk: _Walk, node: _Node) -> None:
    errs = walk.errs
    before = len(errs)
    _node_keywords(schema, path, errs, node.in_meta)
    extra = schema.get("additionalProperties")
    props = schema.get("properties")
    if isinstance(extra, Mapping):
        card = rule_compilation.child_cardinality(schema, "additionalProperties", node.cardinality)
        sub_node = replace(node, root=False, cardinality=card)
        _keywords(extra, field.child(path, "additionalProperties"), walk, sub_node)
    if isinstance(props, Mapping):
        embedded = node.root or schema.get("x-kubernetes-embedded-resource") is True
        for name, sub in props.items():
            if isinstance(sub, Mapping):
                sub_path = f"{path}.properties[{name}]"
                if node.root and name in _META_FIELDS:
                    _forbid_defaults(sub, sub_path, f"in top-level {name}", errs)
                sub_node = replace(
                    node,
                    root=False,
                    in_meta=node.in_meta or (embedded and name in _META_FIELDS),
                )
                _keywords(sub, sub_path, walk, sub_node)
    items = schema.get("items")
    if isinstance(items, Mapping):
        correlatable = schema.get("x-kubernetes-list-type") == "map"
        sub_node = replace(
            node,
            root=False,
            forbid_old=node.forbid_old or (None if correlatable else path),
            cardinality=rule_compilation.child_cardinality(schema, "items", node.cardinality),
        )
        _keywords(items, field.child(path, "items"), walk, sub_node)
    _extensions(schema, path, errs)
    rule_compilation.check_rule_fields(schema, path, errs)
    if walk.total is not None and len(errs) == before and schema.get("x-kubernetes-validations"):
        site = rule_compilation.Site(schema, node.root, node.cardinality, node.forbid_old)
        rule_compilation.compile_node_rules(site, path, walk.cel_errs, walk.total)


def _node_keywords(schema: Schema, path: str, errs: ErrorList, in_meta: bool) -> None:
    """The keywords CRD schemas refuse at one node."""
    kind = schema.get("type")
    if isinstance(kind, str) and kind and kind not in _TYPES:
        if kind == "null":
            errs.append(
                field.forbidden(
                    field.child(path, "type"),
                    "type cannot be set to null, use nullable as an alternative",
                )
            )
        else:
            errs.append(field.not_supported(field.child(path, "type"), kind, _TYPES))
    for key, detail in _UNSUPPORTED.items():
        if schema.get(key):
            errs.append(field.forbidden(field.child(path, key), detail))
    if isinstance(schema.get("items"), list):
        errs.append(
            field.forbidden(
                field.child(path, "items"), "items must be a schema object and not an array"
            )
        )
    if in_meta and schema.get("x-kubernetes-embedded-resource"):
        errs.append(
            field.forbidden(
                field.child(path, "x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            )
        )
    if schema.get("uniqueItems") is True:
        errs.append(
            field.forbidden(
                field.child(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    extra = schema.get("additionalProperties")
    if (
        extra is not None
        and schema.get("properties")
        and (extra is False or isinstance(extra, Mapping))
    ):
        errs.append(
            field.forbidden(
                field.child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            )
        )


def _forbid_defaults(schema: Schema, path: str, reason: str, errs: ErrorList) -> None:
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for name, sub in props.items():
            if isinstance(sub, Mapping):
                sub_path = f"{path}.properties[{name}]"
                if "default" in sub:
                    errs.append(
                        field.forbidden(
                            field.child(sub_path, "default"), f"must not be set {reason}"
                        )
                    )
                _forbid_defaults(sub, sub_path, reason, errs)


def _extensions(schema: Schema, path: str, errs: ErrorList) -> None:
    kind = schema.get("type") or ""
    if schema.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(
            field.invalid(
                field.child(path, "x-kubernetes-preserve-unknown-fields"),
                False,
                "must be true or undefined",
            )
        )
    map_type = schema.get("x-kubernetes-map-type")
    if map_type is not None and kind != "object":
        _type_must_be(path, kind, "must be object if x-kubernetes-map-type is specified", errs)
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(
            field.not_supported(
                field.child(path, "x-kubernetes-map-type"), map_type, ["atomic", "granular"]
            )
        )
    list_type = schema.get("x-kubernetes-list-type")
    items = schema.get("items") if isinstance(schema.get("items"), Mapping) else None
    if list_type is not None and kind != "array":
        _type_must_be(path, kind, "must be array if x-kubernetes-list-type is specified", errs)
    elif list_type == "set" and items is not None:
        _set_items_atomic(items, path, errs)
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(
            field.not_supported(
                field.child(path, "x-kubernetes-list-type"), list_type, ["atomic", "set", "map"]
            )
        )
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if keys:
        if list_type is None:
            errs.append(
                field.required(
                    field.child(path, "x-kubernetes-list-type"),
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
        elif list_type != "map":
            errs.append(
                field.invalid(
                    field.child(path, "x-kubernetes-list-type"),
                    list_type,
                    "must be map if x-kubernetes-list-map-keys is non-empty",
                )
            )
    if list_type == "map":
        _list_map(schema, items, keys, path, errs)
    if list_type in ("set", "map") and items is not None:
        _list_keys_nullable(items, keys if list_type == "map" else [], list_type, path, errs)


def _type_must_be(path: str, kind: str, detail: str, errs: ErrorList) -> None:
    if not kind:
        errs.append(field.required(field.child(path, "type"), detail))
    else:
        errs.append(field.invalid(field.child(path, "type"), kind, detail))


def _set_items_atomic(items: Schema, path: str, errs: ErrorList) -> None:
    detail = "must be atomic as item of a list with x-kubernetes-list-type=set"
    if items.get("type") == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
        errs.append(
            field.invalid(
                f"{path}.items.x-kubernetes-list-type", items.get("x-kubernetes-list-type"), detail
            )
        )
    if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
        errs.append(
            field.invalid(
                f"{path}.items.x-kubernetes-map-type", items.get("x-kubernetes-list-type"), detail
            )
        )


def _list_map(
    schema: Schema, items: Schema | None, keys: list[Any], path: str, errs: ErrorList
) -> None:
    keys_path = field.child(path, "x-kubernetes-list-map-keys")
    if not keys:
        errs.append(field.required(keys_path, "must not be empty if x-kubernetes-list-type is map"))
    if items is None:
        errs.append(
            field.required(
                field.child(path, "items"), "must have a schema if x-kubernetes-list-type is map"
            )
        )
        return
    if items.get("type") != "object":
        errs.append(
            field.invalid(
                f"{path}.items.type",
                items.get("type") or "",
                "must be object if parent array's x-kubernetes-list-type is map",
            )
        )
        return
    props = items.get("properties") or {}
    shown = GoLiteral("[]string{" + ", ".join(field.go_quote(k) for k in keys) + "}")
    seen: set[str] = set()
    for key in keys:
        if key in props:
            if isinstance(props[key], Mapping) and props[key].get("type") in ("array", "object"):
                errs.append(
                    field.invalid(
                        f"{path}.items.properties[{key}].type",
                        "object",
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    )
                )
        else:
            errs.append(
                field.invalid(keys_path, shown, "entries must all be names of item properties")
            )
        if key in seen:
            errs.append(field.invalid(keys_path, shown, "must not contain duplicate entries"))
        seen.add(key)


def _list_keys_nullable(
    items: Schema, keys: list[Any], list_type: str, path: str, errs: ErrorList
) -> None:
    if items.get("nullable"):
        errs.append(
            field.forbidden(
                f"{path}.items.nullable",
                f"cannot be nullable when x-kubernetes-list-type is {list_type}",
            )
        )
    required = set(items.get("required") or ())
    props = items.get("properties") or {}
    for key in keys:
        sub = props.get(key)
        if not isinstance(sub, Mapping):
            continue
        key_path = f"{path}.items.properties[{key}]"
        if key not in required and "default" not in sub:
            errs.append(
                field.required(
                    field.child(key_path, "default"),
                    "this property is in x-kubernetes-list-map-keys, so it "
                    "must have a default or be a required property",
                )
            )
        if sub.get("nullable"):
            errs.append(
                field.forbidden(
                    field.child(key_path, "nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                )
            )


# ------------------------------------------------------------------- defaults


def _defaults(schema: Schema, path: str) -> ErrorList:
    """Every ``default`` must be pruned already and valid against its own schema."""
    errs: ErrorList = []
    _defaults_of(schema, path, errs)
    return errs


def _defaults_of(schema: Schema, path: str, errs: ErrorList) -> None:
    if "default" in schema and schema["default"] is not None:
        default = schema["default"]
        default_path = field.child(path, "default")
        pruned = copy.deepcopy(default)
        if isinstance(pruned, dict | list) and prune_default(pruned, schema):
            errs.append(
                field.invalid(
                    default_path, GoLiteral(go_interface(default)), "must not have unknown fields"
                )
            )
        found: ErrorList = []
        validate_value(default, MISSING, schema, "", found)
        for err in found:
            where = (
                default_path
                if not err.field or err.field == "<nil>"
                else (
                    f"{default_path}.{err.field}"
                    if not err.field.startswith("[")
                    else default_path + err.field
                )
            )
            errs.append(type(err)(err.type, where, err.body))
    for sub, sub_path in schema_children(schema, path):
        _defaults_of(sub, sub_path, errs)


def prune_default(value: JSON, schema: Schema) -> bool:
    """Whether pruning ``value`` (a copy) by ``schema`` removes anything."""
    return bool(prune({"x": value}, {"type": "object", "properties": {"x": schema}}))
