"""What a kind's OpenAPI schema alone can say about a decoded body: values of the wrong
JSON type (``FieldValueTypeInvalid``) and, for kinds without validation of their own,
missing required fields outside ``status`` (``FieldValueRequired``). Kinds with a
validator (``validation.strategy``) get kube's own required-field errors from it
instead, whose wording the schema cannot give (``spec.ports[0].port: Invalid value:
0: ...`` where the schema would say ``Required value``).
"""

from __future__ import annotations

from typing import Any

from proxy import apierrors
from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList
from proxy.openapi import schemas
from proxy.openapi.schemas import SchemaNode
from proxy.registry.resources import ResourceInfo

__all__ = ["check_bytes", "check_schema", "schema_violations"]

JSON = Any

_JSON_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def _type_name(value: JSON) -> str:
    return _JSON_TYPE_NAMES.get(type(value), "object" if isinstance(value, dict) else "string")


def _type_ok(value: JSON, allowed: frozenset[str]) -> bool:
    if value is None or not allowed:
        return True
    actual = _type_name(value)
    if actual == "integer" and "number" in allowed:
        return True
    if actual == "number" and "integer" in allowed and float(value).is_integer():
        return True
    return actual in allowed


def schema_violations(
    obj: JSON, kind_schema: SchemaNode | None, *, required: bool = True
) -> ErrorList:
    """Wrong JSON types and (with ``required``) missing required fields, as field errors.

    ``status`` is not checked for required fields (controllers own it and kube does not
    validate it on create). Unknown fields are not reported here (see
    ``field_validation.validate_fields``).
    """
    if kind_schema is None:
        return []
    errs: ErrorList = []
    _check(obj, kind_schema, "", errs, required)
    return errs


def _check(value: JSON, node: SchemaNode, path: str, errs: ErrorList, required: bool) -> None:
    allowed = node.types
    if not _type_ok(value, allowed):
        expected = sorted(allowed)[0] if len(allowed) == 1 else " or ".join(sorted(allowed))
        actual = _type_name(value)
        detail = f'{path} in body must be of type {expected}: "{actual}"'
        errs.append(field.type_invalid(path, actual, detail))
        return
    if isinstance(value, list):
        elem = node.items()
        if elem is not None:
            for i, item in enumerate(value):
                _check(item, elem, field.index(path, i), errs, required)
        return
    if not isinstance(value, dict):
        return
    if required and node.is_struct:
        for name in node.required:
            if value.get(name) is None:
                errs.append(
                    field.FieldError(
                        "FieldValueRequired", field.child(path, name), "Required value"
                    )
                )
    for key, item in value.items():
        child = node.child(key)
        if child is not None:
            required_below = required and not (path == "" and key == "status")
            _check(item, child, field.child(path, key), errs, required_below)


def check_schema(obj: JSON, resource: ResourceInfo, *, required: bool = True) -> None:
    """422 Invalid on ``<Kind>`` for wrong JSON types or missing required fields."""
    node = resource.request_schema()
    errs = schema_violations(obj, node, required=required)
    if errs:
        name = str((obj.get("metadata") or {}).get("name", ""))
        raise apierrors.invalid(resource.group_kind, name, errs)


_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def base64_error_offset(text: str) -> int | None:
    """Where Go's ``base64.StdEncoding`` stops decoding ``text`` (the ``N`` of ``illegal
    base64 data at input byte N``); None when it decodes. Newlines are skipped."""
    chars = [(i, c) for i, c in enumerate(text) if c not in "\r\n"]
    for start in range(0, len(chars), 4):
        quantum = chars[start : start + 4]
        for k, (i, c) in enumerate(quantum):
            if c == "=":
                padded = k >= 2 and all(q == "=" for _, q in quantum[k:])
                if not padded or len(quantum) < 4:
                    return i
                # data after the padding: Go stops at its first byte
                return chars[start + 4][0] if start + 4 < len(chars) else None
            if c not in _BASE64:
                return i
        if len(quantum) < 4:
            return quantum[0][0]
    return None


def _byte_error(value: JSON, node: SchemaNode) -> int | None:
    if isinstance(value, str):
        if node.resolved.get("format") == "byte":
            return base64_error_offset(value)
        return None
    children: list[tuple[JSON, SchemaNode | None]] = []
    if isinstance(value, list):
        elem = node.items()
        children = [(item, elem) for item in value]
    elif isinstance(value, dict):
        children = [(item, node.child(key)) for key, item in value.items()]
    for item, child in children:
        if child is not None and (found := _byte_error(item, child)) is not None:
            return found
    return None


def check_bytes(obj: JSON, resource: ResourceInfo) -> None:
    """400 as Go's decoder answers a built-in kind's ``format: byte`` field (a
    Secret's data, a caBundle) that is not base64: ``X in version "v1" cannot be handled as a X:
    illegal base64 data at input byte N``."""
    name = schemas.definition_name(resource.group, resource.version, resource.kind)
    if name is None:
        return  # a custom resource: its schema's format check answers 422, as upstream
    node = schemas.node_for_definition(name)
    if (offset := _byte_error(obj, node)) is None:
        return
    raise apierrors.bad_request(
        f'{resource.kind} in version "{resource.version}" cannot be handled as a '
        f"{resource.kind}: illegal base64 data at input byte {offset}"
    )
