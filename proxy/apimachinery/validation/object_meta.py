"""ObjectMeta validation: apimachinery's ``api/validation/objectmeta.go`` and
``apis/meta/v1/validation`` (labels, selectors), with core's finalizer rule.

- :func:`validate_object_meta` (``ValidateObjectMeta``): generateName and name by the
  kind's name function, namespace required (namespaced) or forbidden (cluster-scoped),
  generation >= 0, labels, annotations (keys and 256 KiB total), ownerReferences,
  finalizers;
- :func:`validate_object_meta_update` (``ValidateObjectMetaUpdate``): no new finalizers
  while deleting, generation not decremented, name/namespace/uid/creationTimestamp/
  deletionTimestamp/deletionGracePeriodSeconds immutable, then labels, annotations,
  ownerReferences again.

Objects are decoded JSON (the v1 wire form); map iteration is in sorted key order where
Go's is random, so messages are stable. Pure functions returning field error lists.
"""

from __future__ import annotations

from typing import Any

from proxy.apimachinery.equality import semantic_equal
from proxy.apimachinery.validation import field, go_values
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.names import (
    NameFunc,
    is_dns1123_label,
    is_qualified_name,
    is_valid_label_value,
)

__all__ = [
    "FIELD_IMMUTABLE",
    "IS_NEGATIVE",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "validate_annotations",
    "validate_finalizer_name",
    "validate_immutable",
    "validate_label_selector",
    "validate_labels",
    "validate_nonnegative",
    "validate_object_meta",
    "validate_object_meta_update",
    "validate_qualified_name",
]

JSON = dict[str, Any]

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * (1 << 10)
_STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
_BANNED_OWNERS = frozenset({("", "v1", "Event")})


def _map(value: object) -> dict[str, str]:
    """A string map as decoded (strings already: the schema's type check ran first)."""
    if not isinstance(value, dict):
        return {}
    if all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return value
    return {str(k): str(v) for k, v in value.items()}


def _byte_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def validate_nonnegative(value: object, path: str) -> ErrorList:
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [field.invalid(path, value, IS_NEGATIVE)]
    return []


def validate_immutable(new: object, old: object, path: str, shown: object = None) -> ErrorList:
    """``ValidateImmutableField``; ``shown`` is the bad value printed (default ``new``).
    Equal as upstream's ``apiequality.Semantic.DeepEqual`` compares typed objects: a
    field that is null, ``{}`` or ``[]`` equals an absent one (Go's zero values; the JSON
    view of a protobuf value carries ``resources: {}`` where a request body has none)."""
    if semantic_equal(new, old):
        return []
    return [field.invalid(path, new if shown is None else shown, FIELD_IMMUTABLE)]


def validate_qualified_name(value: str, path: str) -> ErrorList:
    return [field.invalid(path, value, msg) for msg in is_qualified_name(value)]


def validate_labels(labels: object, path: str) -> ErrorList:
    """``ValidateLabels``: every key a qualified name, every value a label value."""
    errs: ErrorList = []
    for k, v in sorted(_map(labels).items()):
        errs += validate_qualified_name(k, path)
        errs += [field.invalid(path, v, msg) for msg in is_valid_label_value(v)]
    return errs


def validate_annotations(annotations: object, path: str) -> ErrorList:
    """Keys are qualified names (checked lower-cased); keys and values total <= 256 KiB."""
    values = _map(annotations)
    errs: ErrorList = []
    for k in sorted(values):
        errs += [field.invalid(path, k, msg) for msg in is_qualified_name(k.lower())]
    total = sum(_byte_len(k) + _byte_len(v) for k, v in values.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(field.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _owner_reference(ref: JSON, path: str) -> ErrorList:
    api_version = str(ref.get("apiVersion") or "")
    kind = str(ref.get("kind") or "")
    group, _, version = api_version.rpartition("/")
    errs: ErrorList = []
    if not version:
        errs.append(
            field.invalid(field.child(path, "apiVersion"), api_version, "version must not be empty")
        )
    if not kind:
        errs.append(field.invalid(field.child(path, "kind"), kind, "kind must not be empty"))
    name = str(ref.get("name") or "")
    if not name:
        errs.append(field.invalid(field.child(path, "name"), name, "name must not be empty"))
    uid = str(ref.get("uid") or "")
    if not uid:
        errs.append(field.invalid(field.child(path, "uid"), uid, "uid must not be empty"))
    if (group, version, kind) in _BANNED_OWNERS:
        gvk = f"/{version}, Kind={kind}"
        errs.append(
            field.invalid(
                path, go_values.owner_reference(ref), f"{gvk} is disallowed from being an owner"
            )
        )
    return errs


def validate_owner_references(refs: object, path: str) -> ErrorList:
    errs: ErrorList = []
    first_controller = ""
    items = [r for r in _list(refs) if isinstance(r, dict)]
    for ref in items:
        errs += _owner_reference(ref, path)
        if ref.get("controller") is True:
            current = f"{ref.get('kind', '')}/{ref.get('name', '')}"
            if first_controller:
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in '
                    f"references for {first_controller} and {current}"
                )
                errs.append(field.invalid(path, go_values.owner_references(items), detail))
            else:
                first_controller = current
    return errs


def validate_finalizer_name(name: str, path: str) -> ErrorList:
    """A qualified name; core also wants a prefix unless it is a standard finalizer."""
    errs = validate_qualified_name(name, path)
    if "/" not in name and name not in _STANDARD_FINALIZERS:
        errs.append(
            field.invalid(
                path, name, "name is neither a standard finalizer name nor is it fully qualified"
            )
        )
    return errs


def _finalizers(finalizers: list[str], path: str) -> ErrorList:
    errs: ErrorList = []
    for name in finalizers:
        errs += validate_qualified_name(name, path)
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(
            field.invalid(
                path,
                go_values.string_slice(finalizers),
                "finalizer orphan and foregroundDeletion cannot be both set",
            )
        )
    return errs


def _core_finalizers(finalizers: list[str], path: str) -> ErrorList:
    # core's ValidateObjectMeta adds validateKubeFinalizerName per index
    errs: ErrorList = []
    for i, name in enumerate(finalizers):
        if "/" not in name and name not in _STANDARD_FINALIZERS:
            errs.append(
                field.invalid(
                    field.index(path, i),
                    name,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return errs


def _common(meta: JSON, path: str) -> ErrorList:
    errs = validate_labels(meta.get("labels"), field.child(path, "labels"))
    errs += validate_annotations(meta.get("annotations"), field.child(path, "annotations"))
    errs += validate_owner_references(
        meta.get("ownerReferences"), field.child(path, "ownerReferences")
    )
    return errs


def validate_object_meta(
    meta: JSON,
    requires_namespace: bool,
    name_fn: NameFunc,
    *,
    core: bool = True,
    path: str = "metadata",
) -> ErrorList:
    """``ValidateObjectMeta`` (``core`` adds core's finalizer-name rule)."""
    errs: ErrorList = []
    generate_name = str(meta.get("generateName") or "")
    if generate_name:
        errs += [
            field.invalid(field.child(path, "generateName"), generate_name, msg)
            for msg in name_fn(generate_name, True)
        ]
    name = str(meta.get("name") or "")
    if not name:
        errs.append(field.required(field.child(path, "name"), "name or generateName is required"))
    else:
        errs += [field.invalid(field.child(path, "name"), name, m) for m in name_fn(name, False)]
    namespace = str(meta.get("namespace") or "")
    ns_path = field.child(path, "namespace")
    if requires_namespace:
        if not namespace:
            errs.append(field.required(ns_path))
        else:
            errs += [field.invalid(ns_path, namespace, m) for m in is_dns1123_label(namespace)]
    elif namespace:
        errs.append(field.forbidden(ns_path, "not allowed on this type"))
    errs += validate_nonnegative(meta.get("generation"), field.child(path, "generation"))
    errs += _common(meta, path)
    finalizers = [str(f) for f in _list(meta.get("finalizers"))]
    errs += _finalizers(finalizers, field.child(path, "finalizers"))
    if core:
        errs += _core_finalizers(finalizers, field.child(path, "finalizers"))
    return errs


def validate_object_meta_update(
    new: JSON, old: JSON, *, core: bool = True, path: str = "metadata"
) -> ErrorList:
    """``ValidateObjectMetaUpdate`` of two metadata maps."""
    errs: ErrorList = []
    new_finalizers = [str(f) for f in _list(new.get("finalizers"))]
    if old.get("deletionTimestamp"):
        extra = sorted(set(new_finalizers) - {str(f) for f in _list(old.get("finalizers"))})
        if extra:
            errs.append(
                field.forbidden(
                    field.child(path, "finalizers"),
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {go_values.string_slice(extra).text}",
                )
            )
    generation = new.get("generation") or 0
    if isinstance(generation, int) and generation < int(old.get("generation") or 0):
        errs.append(
            field.invalid(field.child(path, "generation"), generation, "must not be decremented")
        )
    for name in ("name", "namespace", "uid"):
        errs += validate_immutable(
            str(new.get(name) or ""), str(old.get(name) or ""), field.child(path, name)
        )
    for name in ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if new.get(name) != old.get(name):
            errs.append(
                field.invalid(
                    field.child(path, name), go_values.meta_value(new.get(name)), FIELD_IMMUTABLE
                )
            )
    errs += _common(new, path)
    if core:
        errs += _core_finalizers(new_finalizers, field.child(path, "finalizers"))
    return errs


def validate_label_selector(selector: object, path: str) -> ErrorList:
    """``ValidateLabelSelector`` (strict label values, as apps and batch use it)."""
    if not isinstance(selector, dict):
        return []
    errs = validate_labels(selector.get("matchLabels"), field.child(path, "matchLabels"))
    for i, expr in enumerate(_list(selector.get("matchExpressions"))):
        if isinstance(expr, dict):
            errs += _selector_requirement(
                expr, field.index(field.child(path, "matchExpressions"), i)
            )
    return errs


def _selector_requirement(expr: JSON, path: str) -> ErrorList:
    errs: ErrorList = []
    operator = str(expr.get("operator") or "")
    values = [str(v) for v in _list(expr.get("values"))]
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(
                field.required(
                    field.child(path, "values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                )
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                field.forbidden(
                    field.child(path, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    else:
        errs.append(
            field.invalid(field.child(path, "operator"), operator, "not a valid selector operator")
        )
    errs += validate_qualified_name(str(expr.get("key") or ""), field.child(path, "key"))
    for i, value in enumerate(values):
        errs += [
            field.invalid(field.index(field.child(path, "values"), i), value, msg)
            for msg in is_valid_label_value(value)
        ]
    return errs
