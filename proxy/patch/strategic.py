"""Strategic merge patch (``application/strategic-merge-patch+json``), server side.

The apply half of k8s.io/apimachinery's ``strategicpatch`` package, written anew in
Python and driven by the OpenAPI patch extensions of :mod:`proxy.openapi.schemas` instead of Go
struct tags. ``kubectl apply`` of an existing object, ``kubectl patch`` (default type)
and ``kubectl edit`` send these patches.

Rules (as upstream):
- maps merge key by key; ``null`` deletes a key; a key absent from the original takes
  the patch value (with its nulls and directives removed);
- lists replace, unless the field's ``x-kubernetes-patch-strategy`` contains ``merge``:
  lists of maps then merge element-wise by ``x-kubernetes-patch-merge-key`` (containers
  by ``name``, ports by ``containerPort``, volumeMounts by ``mountPath``, ...), lists of
  scalars become the union (``finalizers``);
- ``replace`` strategy on a map replaces it whole;
- directives: ``$patch: replace|delete`` in a map (and as a list element),
  ``$deleteFromPrimitiveList/<field>``, ``$setElementOrder/<field>``, ``$retainKeys``;
- the order of a merged list: ``$setElementOrder`` first, then the patch's order, then
  the live list's, interleaved as upstream's ``mergeSortedSlice`` does.

Errors are :class:`StrategicMergePatchError` (a ``ValueError``) carrying the HTTP code
and Status reason kube-apiserver answers with for the same mistake (its
``interpretStrategicMergePatchError``): 400 BadRequest for malformed directives, 422
Invalid for lists of lists and retainKeys mismatches, and 500 with an empty reason
(kube-apiserver's "not a Status" fallback) for the rest, e.g. a missing merge key; the
messages are upstream's, maps printed the way Go prints them.

The inputs are not modified; the result is a new object.
"""

from __future__ import annotations

import copy

import orjson

from proxy.apimachinery.validation.go_values import go_format
from proxy.openapi.schemas import PatchMeta, SchemaNode
from storage.interfaces import JSONValue

__all__ = [
    "StrategicMergePatchError",
    "apply_strategic_merge_patch",
    "parse_patch_body",
]

DIRECTIVE = "$patch"
DELETE = "delete"
REPLACE = "replace"
MERGE = "merge"
RETAIN_KEYS_STRATEGY = "retainKeys"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"


class StrategicMergePatchError(ValueError):
    """A patch that cannot be applied. ``status_code``/``reason`` are kube-apiserver's."""

    def __init__(self, message: str, status_code: int = 500) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code

    @property
    def reason(self) -> str:
        """The Status reason: ``BadRequest``, ``Invalid`` or ``""`` (Unknown)."""
        return {400: "BadRequest", 422: "Invalid"}.get(self.status_code, "")


def _bad_request(message: str) -> StrategicMergePatchError:
    return StrategicMergePatchError(message, 400)


ERR_BAD_JSON_DOC = "invalid JSON document"
ERR_NO_LIST_OF_LISTS = "lists of lists are not supported"
ERR_PRIMITIVE_LIST = "invalid patch format of primitive list"
ERR_RETAIN_KEYS = "invalid patch format of retainKeys"
ERR_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
ERR_RETAIN_KEYS_CONTENT = "patch content doesn't match retainKeys list"


def _go_type(value: JSONValue) -> str:
    if value is None:
        return "<nil>"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "float64"
    return "string"


def _err_no_merge_key(m: dict[str, JSONValue], key: str) -> StrategicMergePatchError:
    return StrategicMergePatchError(
        f"map: {go_format(m)} does not contain declared merge key: {key}"
    )


def _err_bad_arg_type(expected: str, actual: JSONValue) -> StrategicMergePatchError:
    return StrategicMergePatchError(f"expected a {expected}, but received a {_go_type(actual)}")


def parse_patch_body(raw: bytes) -> dict[str, JSONValue]:
    """Decode a patch body; it must be one JSON object, else 400 BadRequest."""
    try:
        doc = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise _bad_request(f"{ERR_BAD_JSON_DOC}: {exc}") from exc
    if not isinstance(doc, dict):
        raise _bad_request(
            f"json: cannot unmarshal {_json_noun(doc)} into Go value of type "
            "map[string]interface {}"
        )
    return doc


def _json_noun(value: JSONValue) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"


def apply_strategic_merge_patch(
    original: dict[str, JSONValue], patch: dict[str, JSONValue], kind_schema: SchemaNode | None
) -> dict[str, JSONValue]:
    """Apply ``patch`` to ``original`` for a kind whose root schema is ``kind_schema``.

    ``kind_schema`` None (a kind without schema) merges maps and replaces every list.
    Raises :class:`StrategicMergePatchError`. Neither argument is modified.
    """
    if not isinstance(patch, dict):
        raise _bad_request(ERR_BAD_JSON_DOC)
    return _merge_map(copy.deepcopy(original), copy.deepcopy(patch), kind_schema)


# ---------------------------------------------------------------------------- maps


def _merge_map(
    original: dict[str, JSONValue], patch: dict[str, JSONValue], schema: SchemaNode | None
) -> dict[str, JSONValue]:
    if DIRECTIVE in patch:
        return _map_directive(patch, schema)
    _apply_retain_keys(original, patch)
    _merge_set_element_orders(original, patch, schema)
    for key, value in patch.items():
        _merge_key(original, key, value, schema)
    return original


def _merge_key(
    original: dict[str, JSONValue], key: str, value: JSONValue, schema: SchemaNode | None
) -> None:
    is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
    if is_delete_list:
        key = _extract_key(key, DELETE_FROM_PRIMITIVE_LIST, ERR_PRIMITIVE_LIST)
    sub = schema.child(key) if schema is not None else None
    if value is None:
        original.pop(key, None)
        return
    if key not in original or _kind(original[key]) != _kind(value):
        if not is_delete_list:
            _set_fresh(original, key, value, sub)
        return
    meta = sub.patch_meta if sub is not None else PatchMeta()
    strategy = _split_strategies(meta.strategies)
    current = original[key]
    if isinstance(current, dict):
        if strategy == REPLACE:
            _set_fresh(original, key, value, sub)
        else:
            original[key] = _merge_map(current, value, sub)
    elif isinstance(current, list):
        original[key] = _merge_list_field(current, value, sub, meta, is_delete_list)
    else:
        original[key] = value


def _map_directive(patch: dict[str, JSONValue], schema: SchemaNode | None) -> dict[str, JSONValue]:
    directive = patch[DIRECTIVE]
    if directive == REPLACE:
        rest = {k: v for k, v in patch.items() if k != DIRECTIVE}
        return _merge_map({}, rest, schema)
    if directive == DELETE:
        return {}
    raise StrategicMergePatchError(
        f"unknown patch type: {go_format(directive)} in map: {go_format(patch)}"
    )


def _set_fresh(
    original: dict[str, JSONValue], key: str, value: JSONValue, schema: SchemaNode | None
) -> None:
    """Store a patch value where the original has none: directives applied, nulls gone."""
    keep, fresh = _fresh(value, schema)
    if keep:
        original[key] = fresh
    else:
        original.pop(key, None)


def _fresh(value: JSONValue, schema: SchemaNode | None) -> tuple[bool, JSONValue]:
    if isinstance(value, dict):
        if value.get(DIRECTIVE) == DELETE:
            return False, None
        return True, _merge_map({}, value, schema)
    if isinstance(value, list):
        elem = schema.items() if schema is not None else None
        out = []
        for item in value:
            if isinstance(item, dict) and DIRECTIVE in item:
                continue  # a directive element applies to a live list; there is none
            keep, fresh = _fresh(item, elem)
            if keep and fresh is not None:
                out.append(fresh)
        return True, out
    return True, value


def _apply_retain_keys(original: dict[str, JSONValue], patch: dict[str, JSONValue]) -> None:
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise _bad_request(ERR_RETAIN_KEYS)
    allowed = {k for k in retain if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if key not in allowed:
            raise StrategicMergePatchError(ERR_RETAIN_KEYS_CONTENT, 422)
    for key in [k for k in original if k not in allowed]:
        del original[key]


# --------------------------------------------------------------------------- lists


def _merge_list_field(
    current: list[JSONValue],
    value: list[JSONValue],
    sub: SchemaNode | None,
    meta: PatchMeta,
    is_delete_list: bool,
) -> list[JSONValue]:
    strategy = _split_strategies(meta.strategies)
    if strategy == MERGE:
        elem = sub.items() if sub is not None else None
        return _merge_list(current, value, elem, meta.merge_key, is_delete_list)
    if is_delete_list:
        return _delete_from_list(current, value)
    return list(_fresh(value, sub)[1])


def _merge_list(
    original: list[JSONValue],
    patch: list[JSONValue],
    elem: SchemaNode | None,
    merge_key: str,
    is_delete_list: bool,
) -> list[JSONValue]:
    if not original and not patch:
        return original
    kind = _element_kind(original, patch)
    if kind != "map":
        if is_delete_list:
            return _delete_from_list(original, patch)
        merged = _dedupe(original + patch)
    else:
        if not merge_key:
            raise StrategicMergePatchError("cannot merge lists without merge key for type struct")
        original, patch = _apply_list_directives(original, patch, merge_key)
        merged = _merge_list_of_maps(original, patch, merge_key, elem)
    patch_items, server_only = _partition(merged, patch, merge_key)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key, kind)


def _apply_list_directives(
    original: list[JSONValue], patch: list[JSONValue], merge_key: str
) -> tuple[list[JSONValue], list[JSONValue]]:
    """Apply ``$patch`` elements; returns the live list and the plain patch elements."""
    plain: list[JSONValue] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == DELETE:
            if merge_key not in item:
                raise _err_no_merge_key(item, merge_key)
            wanted = item[merge_key]
            original = [o for o in original if not (merge_key in o and _same(o[merge_key], wanted))]
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise StrategicMergePatchError("merging lists cannot yet be specified in the patch")
        else:
            raise StrategicMergePatchError(
                f"unknown patch type: {go_format(directive)} in map: {go_format(item)}"
            )
    if replace:
        return [_fresh(p, None)[1] for p in plain], []
    return original, plain


def _merge_list_of_maps(
    original: list[JSONValue], patch: list[JSONValue], merge_key: str, elem: SchemaNode | None
) -> list[JSONValue]:
    for item in patch:
        if merge_key not in item:
            raise _err_no_merge_key(item, merge_key)
        at = _find_by_key(original, merge_key, item[merge_key])
        if at >= 0:
            original[at] = _merge_map(original[at], item, elem)
        else:
            original.append(_fresh(item, elem)[1])
    return original


def _delete_from_list(current: list[JSONValue], to_delete: list[JSONValue]) -> list[JSONValue]:
    gone = {_scalar_key(v) for v in to_delete if not isinstance(v, dict | list)}
    return [v for v in current if isinstance(v, dict | list) or _scalar_key(v) not in gone]


def _merge_set_element_orders(
    original: dict[str, JSONValue], patch: dict[str, JSONValue], schema: SchemaNode | None
) -> None:
    """Process every ``$setElementOrder/<field>`` with its patch list (then dropped)."""
    for directive_key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(directive_key)
        if not isinstance(order, list):
            raise _err_bad_arg_type("[]interface {}", order)
        key = _extract_key(directive_key, SET_ELEMENT_ORDER, ERR_SET_ELEMENT_ORDER)
        live, in_patch = original.get(key), patch.get(key)
        if live is None and in_patch is None:
            continue
        if live is not None and not isinstance(live, list):
            raise _err_bad_arg_type("[]interface {}", live)
        if in_patch is not None and not isinstance(in_patch, list):
            raise _err_bad_arg_type("[]interface {}", in_patch)
        sub = schema.child(key) if schema is not None else None
        meta = sub.patch_meta if sub is not None else PatchMeta()
        _validate_set_order(in_patch or [], order, meta.merge_key)
        if live is None:
            merged = _fresh(in_patch, sub)[1]
        elif in_patch is None:
            merged = live
        else:
            merged = _merge_list_field(copy.copy(live), in_patch, sub, meta, False)
        patch.pop(key, None)
        if not (live or in_patch):
            original[key] = merged
            continue
        kind = _element_kind(live or [], in_patch or [])
        patch_items, server_only = _partition(merged, order, meta.merge_key)
        original[key] = _normalize_element_order(
            patch_items, server_only, order, live or [], meta.merge_key, kind
        )


def _validate_set_order(
    patch_list: list[JSONValue], order: list[JSONValue], merge_key: str
) -> None:
    """The patch list must follow ``$setElementOrder`` (deletions aside)."""
    if not patch_list or not order:
        return
    plain = patch_list
    if merge_key:
        plain = [p for p in patch_list if not (isinstance(p, dict) and p.get(DIRECTIVE) == DELETE)]
    pi = oi = 0
    while pi < len(plain) and oi < len(order):
        if isinstance(plain[pi], dict) and DIRECTIVE in plain[pi]:
            pi += 1
            continue
        if _merge_key_equal(plain[pi], order[oi], merge_key):
            pi += 1
        oi += 1
    if pi < len(plain):
        raise StrategicMergePatchError(
            f"The order in patch list:\n{go_format(patch_list)}\n doesn't match "
            f"{SET_ELEMENT_ORDER} list:\n{go_format(order)}\n"
        )


def _merge_key_equal(left: JSONValue, right: JSONValue, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for side in (left, right):
        if not isinstance(side, dict):
            raise _err_bad_arg_type("map[string]interface {}", side)
        if merge_key not in side:
            raise _err_no_merge_key(side, merge_key)
    return _same(left[merge_key], right[merge_key])


# ------------------------------------------------------------------------ ordering


def _partition(
    merged: list[JSONValue], by: list[JSONValue], merge_key: str
) -> tuple[list[JSONValue], list[JSONValue]]:
    """Split ``merged`` into the items present in ``by`` and the server-only rest."""
    present: list[JSONValue] = []
    server_only: list[JSONValue] = []
    if not merge_key:
        wanted = {_scalar_key(v) for v in by if not isinstance(v, dict | list)}
        for v in merged:
            hit = not isinstance(v, dict | list) and _scalar_key(v) in wanted
            (present if hit else server_only).append(v)
        return present, server_only
    for v in merged:
        if not isinstance(v, dict):
            raise _err_bad_arg_type("map[string]interface {}", v)
        if merge_key not in v:
            raise _err_no_merge_key(v, merge_key)
        hit = _find_by_key(by, merge_key, v[merge_key]) >= 0
        (present if hit else server_only).append(v)
    return present, server_only


def _normalize_element_order(
    patch_items: list[JSONValue],
    server_only: list[JSONValue],
    patch_order: list[JSONValue],
    server_order: list[JSONValue],
    merge_key: str,
    kind: str,
) -> list[JSONValue]:
    patch_items = _sort_by_order(patch_items, patch_order, merge_key, kind)
    server_only = _sort_by_order(server_only, server_order, merge_key, kind)
    return _merge_sorted(server_only, patch_items, server_order, merge_key, kind)


def _sort_by_order(
    items: list[JSONValue], order: list[JSONValue], merge_key: str, kind: str
) -> list[JSONValue]:
    deletes: list[JSONValue] = []
    if kind == "map":
        for v in [*items, *order]:
            if not isinstance(v, dict):
                raise _err_bad_arg_type("map[string]interface {}", v)
            if merge_key not in v:
                raise _err_no_merge_key(v, merge_key)
        deletes = [v for v in items if v.get(DIRECTIVE) == DELETE]
        items = [v for v in items if v.get(DIRECTIVE) != DELETE]
    missing = len(order)
    items = sorted(
        items,
        key=lambda v: i if (i := _index(order, v, merge_key, kind)) >= 0 else missing,
    )
    return items + deletes


def _merge_sorted(
    left: list[JSONValue],
    right: list[JSONValue],
    server_order: list[JSONValue],
    merge_key: str,
    kind: str,
) -> list[JSONValue]:
    """Interleave server-only items (left) into patch items (right), keeping both orders.

    A left item goes first only when both items are found in the live order and the left
    one comes earlier there (upstream's best-effort ``mergeSortedSlice``).
    """
    out: list[JSONValue] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            out.append(left[i])
            i += 1
        elif i >= len(left):
            out.append(right[j])
            j += 1
        else:
            li = _index(server_order, left[i], merge_key, kind)
            ri = _index(server_order, right[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _index(items: list[JSONValue], value: JSONValue, merge_key: str, kind: str) -> int:
    if kind == "map":
        wanted = value.get(merge_key) if isinstance(value, dict) else None
        for n, v in enumerate(items):
            got = v.get(merge_key) if isinstance(v, dict) else None
            if _same(got, wanted):
                return n
        return -1
    for n, v in enumerate(items):
        if _same(v, value):
            return n
    return -1


# ------------------------------------------------------------------------- helpers


def _split_strategies(strategies: tuple[str, ...]) -> str:
    """The strategy besides ``retainKeys`` (``merge``, ``replace`` or ``""``)."""
    others = [s for s in strategies if s != RETAIN_KEYS_STRATEGY]
    if len(others) > 1 or len(strategies) > 2:
        raise StrategicMergePatchError(f"unexpected patch strategy: {go_format(list(strategies))}")
    return others[0] if others else ""


def _extract_key(key: str, prefix: str, error: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise _bad_request(error)
    return rest


def _kind(value: JSONValue) -> str:
    """The Go type a decoded JSON value has (maps, slices and scalars never merge)."""
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "string"


def _element_kind(*lists: list[JSONValue]) -> str:
    kinds = {_kind(v) for lst in lists for v in lst}
    if "slice" in kinds:
        raise StrategicMergePatchError(ERR_NO_LIST_OF_LISTS, 422)
    if len(kinds) > 1:
        shown = " ".join(go_format(lst) for lst in lists)
        raise StrategicMergePatchError(f"list element types are not identical: [{shown}]")
    if not kinds:
        raise StrategicMergePatchError("no elements in any of the given slices")
    return kinds.pop()


def _scalar_key(value: JSONValue) -> tuple[str, JSONValue]:
    return (_kind(value), value)


def _same(a: JSONValue, b: JSONValue) -> bool:
    """Go's ``==`` on decoded JSON scalars: same type and value (``1`` is not ``true``)."""
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return _kind(a) == _kind(b) and a == b


def _dedupe(values: list[JSONValue]) -> list[JSONValue]:
    seen: set[tuple[str, JSONValue]] = set()
    out: list[JSONValue] = []
    for v in values:
        if isinstance(v, dict | list):
            out.append(v)
            continue
        key = _scalar_key(v)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def _find_by_key(items: list[JSONValue], merge_key: str, value: JSONValue) -> int:
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise StrategicMergePatchError(f"value for key {n} is not a map.")
        if merge_key in item and _same(item[merge_key], value):
            return n
    return -1
