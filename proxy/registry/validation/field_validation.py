"""Server-side field validation (``fieldValidation=Strict|Warn|Ignore``).

What kube-apiserver does while decoding a request body into a typed object:
- unknown fields (not in the kind's schema) and duplicate fields are collected in
  document order as ``unknown field "spec.foo"`` / ``duplicate field "metadata.name"``
  (a field both unknown and duplicated is reported once, as unknown; list elements
  appear as ``spec.containers[0].x``);
- ``Strict``: the request fails with ``strict decoding error: <e1>, <e2>, ...`` — 400
  BadRequest on create/update (message prefixed ``Pod in version "v1" cannot be
  handled as a Pod: ``), 422 Invalid on patch (see :class:`StrictDecodingError`);
- ``Warn`` (the default when the parameter is absent): each error becomes a
  ``Warning: 299 - "<error>"`` response header and unknown fields are dropped;
- ``Ignore``: unknown fields are silently dropped (decoding into a Go struct prunes).

The schema's own checks (types, required fields) are in ``validation.schema``.

Pure functions: bytes and dicts in, results out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

from proxy.apierrors import go_quote
from proxy.apimachinery.validation.go_values import go_format
from proxy.openapi.schemas import SchemaNode
from proxy.request.write_options import Mode

__all__ = [
    "StrictDecodingError",
    "decode_with_pairs",
    "decode_yaml_checking_duplicates",
    "find_duplicate_fields",
    "prune_unknown_fields",
    "strict_decoding_errors",
    "strict_decoding_errors_yaml",
    "validate_fields",
    "validate_patched",
    "validate_yaml_fields",
    "warnings_of",
]

JSON = Any
class StrictDecodingError(ValueError):
    """Unknown or duplicate fields under ``fieldValidation=Strict``.

    ``str(e)`` is upstream's ``strict decoding error: unknown field "spec.foo", ...``.
    The HTTP layer answers create/update with 400 BadRequest and the message
    :meth:`for_create` builds, and patch with 422 Invalid (:meth:`for_patch`).
    """

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("strict decoding error: " + ", ".join(self.errors))

    def for_create(self, kind: str, version: str) -> str:
        """The 400 message of create/update: ``Pod in version "v1" cannot be handled ...``."""
        return f'{kind} in version "{version}" cannot be handled as a {kind}: {self}'

    def for_patch(self, patch: JSON) -> tuple[str, list[dict[str, str]]]:
        """The 422 message and causes of a patch: ``field.Invalid(patch, "%+v", err)``."""
        body = f"Invalid value: {json.dumps(go_format(patch))}: {self}"
        return f' "" is invalid: patch: {body}', [
            {"reason": "FieldValueInvalid", "message": body, "field": "patch"}
        ]


# ------------------------------------------------------------------- raw decoding


class Pairs(dict[str, JSON]):
    """A decoded JSON object that remembers every key/value pair in document order."""

    pairs: list[tuple[str, JSON]]


def _pairs_hook(items: list[tuple[str, JSON]]) -> Pairs:
    obj = Pairs(items)
    obj.pairs = items
    return obj


def decode_with_pairs(raw: bytes | str) -> JSON:
    """Decode JSON keeping duplicate keys visible (objects are :class:`Pairs`).

    Raises ``ValueError`` (``json.JSONDecodeError``) on malformed JSON. The last
    occurrence of a duplicated key wins in the dict view, as in Go.
    """
    return json.loads(raw, object_pairs_hook=_pairs_hook)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(value: JSON, node: SchemaNode | None, path: str, typed: bool) -> Iterator[str]:
    """Strict decoding errors below ``value``, in document order."""
    if isinstance(value, list):
        elem = node.items() if node is not None else None
        for i, item in enumerate(value):
            yield from _walk(item, elem, f"{path}[{i}]", typed)
        return
    if not isinstance(value, dict):
        return
    pairs = value.pairs if isinstance(value, Pairs) else list(value.items())
    seen: set[str] = set()
    unknown: set[str] = set()
    for key, item in pairs:
        child = node.child(key) if node is not None else None
        field_path = _join(path, key)
        is_unknown = typed and _is_unknown(node, key)
        if key in seen:
            if key not in unknown:
                yield f"duplicate field {go_quote(field_path)}"
            continue
        seen.add(key)
        if is_unknown:
            unknown.add(key)
            yield f"unknown field {go_quote(field_path)}"
            continue
        yield from _walk(item, child, field_path, typed and child is not None)


def _is_unknown(node: SchemaNode | None, key: str) -> bool:
    if node is None or not node.is_struct or node.preserves_unknown:
        return False
    return node.field(key) is None


def strict_decoding_errors(raw: bytes | str, kind_schema: SchemaNode | None) -> list[str]:
    """Unknown and duplicate fields of a JSON body, in document order, upstream-worded.

    Without a schema (custom resources) only duplicates are reported. Malformed JSON
    raises ``ValueError``.
    """
    return list(_walk(decode_with_pairs(raw), kind_schema, "", kind_schema is not None))


def find_duplicate_fields(raw: bytes | str) -> list[str]:
    """The paths of duplicated fields in a JSON body (``metadata.name``), in order."""
    prefix = 'duplicate field "'
    return [
        e[len(prefix) : -1]
        for e in _walk(decode_with_pairs(raw), None, "", False)
        if e.startswith(prefix)
    ]


class _DuplicateKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that records keys set twice in one mapping (with lines)."""

    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, str]] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is None or key == "<<":
                continue
            if key in seen:
                self.duplicates.append((key_node.start_mark.line + 1, str(key)))
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def decode_yaml_checking_duplicates(raw: bytes | str) -> tuple[JSON, list[str]]:
    """Decode one YAML document; also its duplicate keys as go-yaml words them
    (``line 5: key "name" already set in map``). Raises ``yaml.YAMLError``."""
    loader = _DuplicateKeyLoader(raw)
    try:
        value = loader.get_single_data()
    finally:
        loader.dispose()
    lines = [f'line {line}: key "{key}" already set in map' for line, key in loader.duplicates]
    return value, lines


def strict_decoding_errors_yaml(
    raw: bytes | str, kind_schema: SchemaNode | None
) -> tuple[JSON, list[str]]:
    """The decoded YAML body and its strict errors, as kube-apiserver gives them for
    ``application/yaml``: one ``yaml: unmarshal errors:`` error listing the duplicate
    keys line by line, then the unknown fields sorted by path."""
    value, duplicates = decode_yaml_checking_duplicates(raw)
    errors = []
    if duplicates:
        errors.append("yaml: unmarshal errors:\n  " + "\n  ".join(duplicates))
    if isinstance(value, dict):
        unknown = sorted(prune_unknown_fields(value, kind_schema)[1])
        errors += [f"unknown field {go_quote(path)}" for path in unknown]
    return value, errors


def warnings_of(errors: list[str]) -> list[str]:
    """One warning per error; a YAML ``unmarshal errors`` block gives one per line."""
    out: list[str] = []
    for error in errors:
        if error.startswith("yaml: unmarshal errors:\n"):
            out += [line.strip() for line in error.splitlines()[1:] if line.strip()]
        else:
            out.append(error)
    return out


# ---------------------------------------------------------------------- pruning


def prune_unknown_fields(obj: JSON, kind_schema: SchemaNode | None) -> tuple[JSON, list[str]]:
    """A copy of ``obj`` without the fields its schema does not know, and their paths."""
    removed: list[str] = []
    return _prune(obj, kind_schema, "", removed), removed


def _prune(value: JSON, node: SchemaNode | None, path: str, removed: list[str]) -> JSON:
    if node is None:
        return value
    if isinstance(value, list):
        elem = node.items()
        if elem is not None:
            value = [_go_zero(elem) if v is None else v for v in value]
        return [_prune(v, elem, f"{path}[{i}]", removed) for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    out: dict[str, JSON] = {}
    for key, item in value.items():
        if _is_unknown(node, key):
            removed.append(_join(path, key))
            continue
        child = node.child(key)
        if item is None and child is not None:
            if node.is_struct:
                continue  # Go's decoder leaves the field at its zero value: omitted
            item = _go_zero(child)  # a map entry gets its value type's zero value
        out[key] = _prune(item, child, _join(path, key), removed)
    return out


_GO_ZEROS: dict[str, JSON] = {"string": "", "integer": 0, "number": 0, "boolean": False}


def _go_zero(node: SchemaNode) -> JSON:
    """What Go's decoder makes of a JSON null in a map entry or list element typed by
    ``node``: the type's zero value (``{"a": null}`` labels become ``{"a": ""}``); a
    struct becomes empty, anything else stays null."""
    types = node.types
    if len(types) == 1:
        (kind,) = types
        if kind in _GO_ZEROS:
            return _GO_ZEROS[kind]
    return {} if node.is_struct else None


def validate_fields(
    obj: dict[str, JSON],
    kind_schema: SchemaNode | None,
    mode: Mode,
    *,
    raw: bytes | str | None = None,
) -> tuple[dict[str, JSON], list[str]]:
    """Apply a field-validation mode to a decoded body: ``(cleaned object, warnings)``.

    ``raw`` (the JSON request body) lets duplicates be seen; without it only unknown
    fields are. Strict raises :class:`StrictDecodingError` if anything was found; Warn
    returns the pruned object and the errors as warnings; Ignore the pruned object and
    no warnings. An unknown kind (``kind_schema`` None) is returned unpruned.
    """
    if raw is not None:
        errors = strict_decoding_errors(raw, kind_schema)
    else:
        errors = [f"unknown field {go_quote(p)}" for p in prune_unknown_fields(obj, kind_schema)[1]]
    if mode == "Strict" and errors:
        raise StrictDecodingError(errors)
    cleaned, _ = prune_unknown_fields(obj, kind_schema)
    return cleaned, (errors if mode == "Warn" else [])


def validate_yaml_fields(
    raw: bytes | str, kind_schema: SchemaNode | None, mode: Mode
) -> tuple[JSON, list[str]]:
    """:func:`validate_fields` for an ``application/yaml`` body: decodes it and returns
    ``(pruned object, warnings)``; Strict raises :class:`StrictDecodingError` worded as
    upstream's YAML path (duplicates by line, then sorted unknown fields)."""
    value, errors = strict_decoding_errors_yaml(raw, kind_schema)
    if mode == "Strict" and errors:
        raise StrictDecodingError(errors)
    cleaned = prune_unknown_fields(value, kind_schema)[0] if isinstance(value, dict) else value
    return cleaned, (warnings_of(errors) if mode == "Warn" else [])


def validate_patched(
    patched: dict[str, JSON],
    kind_schema: SchemaNode | None,
    mode: Mode,
    *,
    raw_patch: bytes | str,
) -> tuple[dict[str, JSON], list[str]]:
    """Field validation of a PATCH (strategic or JSON merge): ``(cleaned, warnings)``.

    As kube-apiserver: duplicate fields come from the patch body (paths inside the
    patch), unknown fields from the patched object; duplicates first. Strict raises
    :class:`StrictDecodingError` (answer with :meth:`StrictDecodingError.for_patch`,
    422); Warn returns them as warnings; Ignore returns none. The result is pruned.
    """
    errors = strict_decoding_errors(raw_patch, None)
    cleaned, unknown = prune_unknown_fields(patched, kind_schema)
    errors += [f"unknown field {go_quote(path)}" for path in unknown]
    if mode == "Strict" and errors:
        raise StrictDecodingError(errors)
    return cleaned, (errors if mode == "Warn" else [])
