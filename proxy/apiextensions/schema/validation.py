"""Validation of a custom resource against its structural schema, as kube-apiserver
does it for a CR write: kube-openapi's OpenAPI v3 checks with their messages
(``spec.size in body should be less than or equal to 100``), the
``x-kubernetes-*`` extensions (int-or-string, embedded resources, list types), then the
``x-kubernetes-validations`` CEL rules (:mod:`.rules`).

Paths are as kube-openapi and apimachinery print them: ``spec.tags[1]`` for items,
``spec.labels.key`` for map values. On update, errors of a value unchanged from the
old object are ratcheted (dropped), as ``CRDValidationRatcheting`` does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache

from proxy.apiextensions.schema import rules
from proxy.apiextensions.schema.formats import check_format
from proxy.apiextensions.schema.structural import (
    JSON,
    MISSING,
    Schema,
    correlated_children,
    go_interface,
    has_rules,
    json_type,
    mapping,
)
from proxy.apimachinery.validation import field, names, object_meta
from proxy.apimachinery.validation.field import ErrorList, FieldError, GoLiteral

__all__ = ["validate_custom_resource", "validate_value"]

# errors after which rules would see values of the wrong shape or size (hasBlockingErr)
_BLOCKING = frozenset({
    "FieldValueTypeInvalid", "FieldValueRequired", "FieldValueNotSupported",
    "FieldValueTooLong", "FieldValueTooMany",
})  # fmt: skip
_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def validate_custom_resource(obj: JSON, old: JSON | None, schema: Schema) -> ErrorList:
    """Every error of ``obj`` (``old`` on update) against the version's
    ``openAPIV3Schema``: schema errors first; CEL rules run only when none of them is
    a type, required, unsupported-value, too-long or too-many error (else one ``<nil>``
    error says some rules were not checked), as the custom resource strategy does."""
    old_value = MISSING if old is None else old
    errs: ErrorList = []
    validate_value(obj, old_value, schema, "", errs, root=True)
    if not has_rules(schema):
        return errs
    if any(e.type in _BLOCKING for e in errs):
        errs.append(field.invalid("<nil>", None, _NOT_CHECKED))
        return errs
    errs.extend(rules.validate_rules(obj, old_value, schema))
    # a rule of the root schema reports at the nil path, which apimachinery prints <nil>
    return [FieldError(e.type, e.field or "<nil>", e.body) for e in errs]


def validate_value(
    value: JSON, old: JSON, schema: Schema, path: str, errs: ErrorList, root: bool = False
) -> None:
    """Append the schema errors of ``value`` at ``path`` to ``errs``."""
    if old is not MISSING and old == value:
        return  # ratcheting: an unchanged value keeps whatever it had
    if value is None:
        if not schema.get("nullable") and _declared_type(schema):
            _type_error(value, path, _declared_type(schema), errs)
        return
    expected = _declared_type(schema)
    if expected and not _type_ok(value, expected):
        _type_error(value, path, expected, errs)
        return
    before = len(errs)
    _check_scalar(value, schema, path, errs)
    _check_children(value, old, schema, path, errs, root)
    _check_combinators(value, schema, path, errs)
    if len(errs) == before and schema.get("x-kubernetes-embedded-resource"):
        _check_embedded(value, path, errs)


def _declared_type(schema: Schema) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "integer,string"
    kind = schema.get("type")
    return kind if isinstance(kind, str) else ""


def _type_ok(value: JSON, expected: str) -> bool:
    actual = json_type(value)
    allowed = expected.split(",")
    return actual in allowed or (actual == "integer" and "number" in allowed)


def _type_error(value: JSON, path: str, expected: str, errs: ErrorList) -> None:
    actual = json_type(value)
    errs.append(
        field.type_invalid(path, actual, f'{path} in body must be of type {expected}: "{actual}"')
    )


def _number(value: JSON) -> Decimal:
    return Decimal(str(value))


def _check_scalar(value: JSON, schema: Schema, path: str, errs: ErrorList) -> None:
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(_json_equal(value, e) for e in enum):
        shown = [e if isinstance(e, str) else go_interface(e) for e in enum]
        bad = value if isinstance(value, str | int | float) else GoLiteral(go_interface(value))
        errs.append(field.not_supported(path, bad, shown))
    if isinstance(value, str):
        _check_string(value, schema, path, errs)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, schema, path, errs)


def _json_equal(a: JSON, b: JSON) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _check_string(value: str, schema: Schema, path: str, errs: ErrorList) -> None:
    """maxLength, minLength, pattern: the first failing one only (go-openapi's string
    validator returns on its first error); format is a validator of its own."""
    max_length = schema.get("maxLength")
    min_length = schema.get("minLength")
    pattern = schema.get("pattern")
    if isinstance(max_length, int) and len(value) > max_length:
        errs.append(field.too_long(path, max_length))
    elif isinstance(min_length, int) and len(value) < min_length:
        errs.append(
            field.invalid(path, value, f"{path} in body should be at least {min_length} chars long")
        )
    elif isinstance(pattern, str) and (regex := _regex(pattern)) and not regex.search(value):
        errs.append(field.invalid(path, value, f"{path} in body should match '{pattern}'"))
    fmt = schema.get("format")
    if isinstance(fmt, str) and not check_format(fmt, value):
        errs.append(
            field.type_invalid(
                path, value, f"{path} in body must be of type {fmt}: {field.go_quote(value)}"
            )
        )


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _check_number(value: int | float, schema: Schema, path: str, errs: ErrorList) -> None:
    number = _number(value)
    maximum = schema.get("maximum")
    if isinstance(maximum, int | float):
        if schema.get("exclusiveMaximum") and number >= _number(maximum):
            errs.append(
                field.invalid(
                    path, value, f"{path} in body should be less than {field.go_value(maximum)}"
                )
            )
        elif number > _number(maximum):
            errs.append(
                field.invalid(
                    path,
                    value,
                    f"{path} in body should be less than or equal to {field.go_value(maximum)}",
                )
            )
    minimum = schema.get("minimum")
    if isinstance(minimum, int | float):
        if schema.get("exclusiveMinimum") and number <= _number(minimum):
            errs.append(
                field.invalid(
                    path, value, f"{path} in body should be greater than {field.go_value(minimum)}"
                )
            )
        elif number < _number(minimum):
            errs.append(
                field.invalid(
                    path,
                    value,
                    f"{path} in body should be greater than or equal to {field.go_value(minimum)}",
                )
            )
    multiple = schema.get("multipleOf")
    if isinstance(multiple, int | float) and multiple > 0 and number % _number(multiple) != 0:
        errs.append(
            field.invalid(
                path, value, f"{path} in body should be a multiple of {field.go_value(multiple)}"
            )
        )


def _check_count(
    count: int, schema: Schema, bounds: tuple[str, str, str], path: str, errs: ErrorList
) -> None:
    """maxItems/minItems or maxProperties/minProperties (``bounds``: the two keywords
    and the noun of the minimum's message)."""
    max_key, min_key, noun = bounds
    maximum, minimum = schema.get(max_key), schema.get(min_key)
    if isinstance(maximum, int) and count > maximum:
        errs.append(field.too_many(path, count, maximum))
    if isinstance(minimum, int) and count < minimum:
        errs.append(
            field.invalid(path, count, f"{path} in body should have at least {minimum} {noun}")
        )


def _check_children(
    value: JSON, old: JSON, schema: Schema, path: str, errs: ErrorList, root: bool
) -> None:
    if isinstance(value, Mapping):
        _check_count(
            len(value), schema, ("maxProperties", "minProperties", "properties"), path, errs
        )
        for name in schema.get("required") or ():
            if isinstance(name, str) and name not in value:
                errs.append(field.required(field.child(path, name)))
    elif isinstance(value, list):
        _check_count(len(value), schema, ("maxItems", "minItems", "items"), path, errs)
    for item, old_item, sub, child in correlated_children(value, old, schema, path, root):
        validate_value(item, old_item, sub, child, errs)
    if isinstance(value, list):
        _check_list_type(value, schema, path, errs)
    if root and isinstance(value, Mapping):
        _check_root_metadata(value, old, schema, errs)


def _check_root_metadata(
    value: Mapping[str, JSON], old: JSON, schema: Schema, errs: ErrorList
) -> None:
    """The root schema may constrain ``metadata.name`` and ``generateName`` (only
    those); the rest of ObjectMeta is the registry's to validate."""
    meta_schema = mapping(mapping(schema.get("properties")).get("metadata"))
    props = mapping(meta_schema.get("properties"))
    meta = mapping(value.get("metadata"))
    old_meta = mapping(old.get("metadata")) if isinstance(old, Mapping) else {}
    for name in ("name", "generateName"):
        if name in props and name in meta:
            validate_value(
                meta[name],
                old_meta.get(name, MISSING),
                mapping(props[name]),
                f"metadata.{name}",
                errs,
            )


def _check_list_type(value: list[JSON], schema: Schema, path: str, errs: ErrorList) -> None:
    """``x-kubernetes-list-type``: ``set`` items and ``map`` keys must be unique
    (``structurallisttype.ValidateListSetsAndMaps``)."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: list[JSON] = []
        for i, item in enumerate(value):
            if any(_json_equal(item, s) and item == s for s in seen):
                errs.append(field.duplicate(field.index(path, i), _go_bad(item)))
            else:
                seen.append(item)
    elif list_type == "map":
        keys = [k for k in schema.get("x-kubernetes-list-map-keys") or () if isinstance(k, str)]
        seen_keys: set[str] = set()
        for i, item in enumerate(value):
            if not isinstance(item, Mapping):
                continue
            key_part = {k: item[k] for k in keys if k in item}
            marker = go_interface(key_part)
            if marker in seen_keys:
                errs.append(field.duplicate(field.index(path, i), GoLiteral(marker)))
            seen_keys.add(marker)


def _go_bad(value: JSON) -> object:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return GoLiteral(go_interface(value))


def _check_combinators(value: JSON, schema: Schema, path: str, errs: ErrorList) -> None:
    label = f'"{path}"'
    one_of = schema.get("oneOf")
    if isinstance(one_of, list) and one_of:
        results = [_sub_errors(value, s, path) for s in one_of]
        valid = sum(1 for r in results if not r)
        if valid == 0:
            errs.append(
                _nil_error(
                    f"{label} must validate one and only one schema (oneOf). Found none valid"
                )
            )
            errs.extend(results[0])
        elif valid > 1:
            errs.append(
                _nil_error(
                    f"{label} must validate one and only one schema (oneOf). "
                    f"Found {valid} valid alternatives"
                )
            )
    any_of = schema.get("anyOf")
    if isinstance(any_of, list) and any_of:
        results = [_sub_errors(value, s, path) for s in any_of]
        if all(results):
            errs.append(_nil_error(f"{label} must validate at least one schema (anyOf)"))
            errs.extend(results[0])
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        results = [_sub_errors(value, s, path) for s in all_of]
        if any(results):
            errs.append(_nil_error(f"{label} must validate all the schemas (allOf)"))
            for result in results:
                errs.extend(result)
    negated = schema.get("not")
    if isinstance(negated, Mapping) and not _sub_errors(value, negated, path):
        errs.append(_nil_error(f"{label} must not validate the schema (not)"))


def _sub_errors(value: JSON, schema: JSON, path: str) -> ErrorList:
    found: ErrorList = []
    if isinstance(schema, Mapping):
        validate_value(value, MISSING, schema, path, found)
    return found


def _nil_error(detail: str) -> FieldError:
    return field.invalid("<nil>", "", detail)


def _check_embedded(value: JSON, path: str, errs: ErrorList) -> None:
    """``x-kubernetes-embedded-resource`` (objectmeta ``validateEmbeddedResource``):
    apiVersion and kind present and well-formed, metadata valid ObjectMeta whose name
    need only be a path segment."""
    if not isinstance(value, Mapping):
        return
    for key in ("apiVersion", "kind"):
        if key not in value:
            errs.append(field.required(field.child(path, key), "must not be empty"))
    api_version = value.get("apiVersion")
    if isinstance(api_version, str):
        at = field.child(path, "apiVersion")
        if not api_version:
            errs.append(field.invalid(at, api_version, "must not be empty"))
        elif api_version.count("/") > 1:
            errs.append(
                field.invalid(at, api_version, f"unexpected GroupVersion string: {api_version}")
            )
    kind = value.get("kind")
    if isinstance(kind, str):
        at = field.child(path, "kind")
        if not kind:
            errs.append(field.invalid(at, kind, "must not be empty"))
        elif detail := ",".join(names.is_dns1035_label(kind.lower())):
            errs.append(
                field.invalid(
                    at, kind, f"may have mixed case, but should otherwise match: {detail}"
                )
            )
    meta = value.get("metadata")
    if isinstance(meta, Mapping):
        meta = {**meta, "name": meta.get("name") or "fakename"}
        errs.extend(
            object_meta.validate_object_meta(
                meta,
                bool(meta.get("namespace")),
                names.path_segment_name,
                core=False,
                path=field.child(path, "metadata"),
            )
        )
