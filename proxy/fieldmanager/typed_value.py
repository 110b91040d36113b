"""Operations on objects through their :class:`~proxy.fieldmanager.typed.Atom`, as
structured-merge-diff's ``typed`` package: the set of fields an object sets
(:func:`to_field_set`), the difference between two versions (:func:`compare`), the
apply merge (:func:`merge`), removal of owned items (:func:`remove_items`) and
:func:`ensure_named_fields_are_members`.

Objects are decoded JSON (dicts, lists, scalars); none is modified. Errors in the
shape of an object (a list-map item without its key, a field the schema does not
declare when ``strict``) raise :class:`TypedError` whose message is upstream's
(``.spec.bogus: field not declared in schema``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from proxy.fieldmanager.fieldpath import VALUE, Path, PathElement, Set, path_string
from proxy.fieldmanager.typed import DEDUCED, KEY_DEFAULTS, Atom

__all__ = [
    "Comparison",
    "TypedError",
    "compare",
    "ensure_named_fields_are_members",
    "merge",
    "remove_items",
    "to_field_set",
]


class TypedError(ValueError):
    """An object that does not fit its schema."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def _shape(atom: Atom, value: Any) -> str:
    """``leaf``, ``list`` or ``map``: how a position is walked."""
    if atom.kind == "deduced":
        return "map" if isinstance(value, dict) else "leaf"
    if atom.kind in ("scalar", "atomic") or atom.atomic:
        return "leaf"
    if atom.kind == "list":
        return "list" if value is None or isinstance(value, list) else "leaf"
    return "map" if value is None or isinstance(value, dict) else "leaf"


def _empty(value: Any) -> bool:
    return value is MISSING or value is None or (isinstance(value, dict | list) and not value)


def item_element(atom: Atom, index: int, item: Any) -> PathElement:
    """The path element of a list item (upstream's ``listItemToPathElement``)."""
    if atom.relationship == "map" and atom.keys:
        if not isinstance(item, dict):
            raise TypedError("associative list with keys may only have map elements")
        fields: dict[str, Any] = {}
        for key in atom.keys:
            if key in item and item[key] is not None:
                fields[key] = item[key]
            elif key in KEY_DEFAULTS:
                fields[key] = KEY_DEFAULTS[key]
            else:
                raise TypedError(
                    "associative list with keys has an element that omits key field "
                    f'"{key}" (and doesn\'t have default value)'
                )
        return PathElement.key(fields)
    if atom.relationship in ("set", "map"):
        if isinstance(item, dict | list):
            raise TypedError("associative list without keys has an element that is a map or list")
        return PathElement.value(item)
    return PathElement.at(index)


def _child_atom(atom: Atom, key: str, strict: bool, path: Path) -> Atom:
    found = atom.child(key)
    if found is None:
        if strict:
            where = path_string((*path, PathElement.field(key)))
            raise TypedError(f"{where}: field not declared in schema")
        return DEDUCED
    return found


def to_field_set(value: Any, atom: Atom, strict: bool = False) -> Set:
    """Every field ``value`` sets, as upstream's ``ToFieldSet``. ``strict`` (an apply
    configuration) also refuses undeclared fields and duplicate list keys, every
    duplicate listed as upstream's validation lists its errors."""
    out = Set()
    duplicates: list[str] = []
    if _shape(atom, value) != "leaf":  # a leaf root is the empty path: never a member
        _fields(value, atom, (), out, strict, duplicates)
    if len(duplicates) == 1:
        raise TypedError(duplicates[0])
    if duplicates:
        raise TypedError("errors:\n" + "\n".join(f"  {d}" for d in duplicates))
    return out


def _key_text(element: PathElement) -> str:
    """A list item's key as upstream's duplicate-entry error prints it."""
    if element.kind == VALUE:
        return f"[={element.text}]"
    fields = orjson.loads(element.text)
    return "[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in fields.items()) + "]"


def _fields(
    value: Any, atom: Atom, path: Path, node: Set, strict: bool, duplicates: list[str]
) -> None:
    """The fields below ``value`` (a list or map at ``path``) into ``node``, the set's
    subtree at ``path``: built level by level, not by inserting each whole path from
    the root (an apply walks every field of the object two or three times)."""
    if _shape(atom, value) == "list":
        elem = atom.elem() or DEDUCED
        seen: set[PathElement] = set()
        for i, item in enumerate(value or ()):
            try:
                element = item_element(atom, i, item)
            except TypedError as e:
                raise TypedError(f"{path_string(path)}: element {i}: {e}") from None
            if strict and element in seen:
                duplicates.append(f"{path_string(path)}: duplicate entries for key "
                                  f"{_key_text(element)}")  # fmt: skip
            seen.add(element)
            _child(item, elem, path, element, node, strict, duplicates)
            node.members.add(element)
        return
    for key, item in (value or {}).items():
        element = PathElement.field(key)
        _child(item, _child_atom(atom, key, strict, path), path, element, node, strict,
               duplicates)  # fmt: skip
        if item is None or (isinstance(item, dict) and not item) or not atom.declares(key):
            node.members.add(element)


def _child(
    item: Any, atom: Atom, path: Path, element: PathElement, node: Set, strict: bool,
    duplicates: list[str],
) -> None:  # fmt: skip
    """One child of ``node``: a leaf is a member; a list or map a subtree (kept only
    when something below it is owned)."""
    if _shape(atom, item) == "leaf":
        node.members.add(element)
        return
    sub = node.children.get(element)
    if sub is None:
        sub = node.children[element] = Set()
    _fields(item, atom, (*path, element), sub, strict, duplicates)
    if not sub.members and not sub.children:
        del node.children[element]


@dataclass
class Comparison:
    """What changed from one version to the next, by path."""

    added: Set = field(default_factory=Set)
    modified: Set = field(default_factory=Set)
    removed: Set = field(default_factory=Set)

    def changed(self) -> Set:
        return self.modified.union(self.added)


def compare(lhs: Any, rhs: Any, atom: Atom) -> Comparison:
    """Upstream's ``TypedValue.Compare`` of two whole objects as a Go typed round trip
    shapes them (see :data:`NON_POINTER_STRUCTS`): leaves added, modified or removed,
    and non-leaf positions (maps, list items) added or removed. Equal subtrees are
    skipped after one (C-speed) equality test."""
    c = Comparison()
    _compare(lhs, rhs, atom, (), c)
    return c


def _index(atom: Atom, items: Any) -> dict[PathElement, Any]:
    found: dict[PathElement, Any] = {}
    for i, item in enumerate(items if isinstance(items, list) else ()):
        found.setdefault(item_element(atom, i, item), item)
    return found


def _compare(lhs: Any, rhs: Any, atom: Atom, path: Path, c: Comparison) -> None:
    if lhs is not MISSING and rhs is not MISSING and _equal(lhs, rhs):
        return
    shape = _shape(atom, rhs if rhs is not MISSING else lhs)
    if shape != "leaf" and lhs is not MISSING and _shape(atom, lhs) != shape:
        shape = "leaf"  # the value changed type: replaced whole
    if shape != "leaf" and _empty(lhs) and _empty(rhs):
        shape = "leaf"  # keeps the empty/null distinction, as upstream
    if shape == "leaf":
        if lhs is MISSING:
            c.added.insert(path)
        elif rhs is MISSING:
            c.removed.insert(path)
        elif not _equal(lhs, rhs):
            c.modified.insert(path)
        return
    if shape == "list":
        elem = atom.elem() or DEDUCED
        left, right = _index(atom, lhs), _index(atom, rhs)
        for pe, item in right.items():
            _compare(left.get(pe, MISSING), item, elem, (*path, pe), c)
        for pe, item in left.items():
            if pe not in right:
                _compare(item, MISSING, elem, (*path, pe), c)
    else:
        left_map = lhs if isinstance(lhs, dict) else {}
        right_map = rhs if isinstance(rhs, dict) else {}
        zeros = _zero_fields(atom, root=not path)
        for key in {**left_map, **right_map, **zeros}:
            left, right = left_map.get(key, MISSING), right_map.get(key, MISSING)
            if key in zeros:  # absent in JSON, present in Go's typed value
                left = zeros[key] if left is MISSING and isinstance(lhs, dict) else left
                right = zeros[key] if right is MISSING and isinstance(rhs, dict) else right
                if left is MISSING and right is MISSING:
                    continue
            child_atom = atom.child(key) or DEDUCED
            _compare(left, right, child_atom, (*path, PathElement.field(key)), c)
    if lhs is MISSING:
        c.added.insert(path)
    elif rhs is MISSING:
        c.removed.insert(path)


def _equal(a: Any, b: Any) -> bool:
    """JSON equality (``True`` is not ``1``; ``1`` is ``1.0``)."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def merge(lhs: Any, rhs: Any, atom: Atom) -> Any:
    """The apply merge of ``rhs`` (the applied configuration) onto ``lhs`` (live):
    maps merge key by key, associative lists item by item (order as upstream's
    ``mergingWalker``: the configuration's order, live-only items kept in place),
    everything else is replaced by ``rhs``."""
    if rhs is MISSING:
        return lhs
    if lhs is MISSING:
        return rhs
    shape = _shape(atom, rhs)
    if shape == "map" and isinstance(lhs, dict) and isinstance(rhs, dict):
        out = dict(lhs)
        for key, value in rhs.items():
            out[key] = merge(lhs.get(key, MISSING), value, atom.child(key) or DEDUCED)
        return out
    if shape == "list" and isinstance(lhs, list) and isinstance(rhs, list):
        return _merge_list(lhs, rhs, atom)
    return rhs


def _merge_list(lhs: list[Any], rhs: list[Any], atom: Atom) -> list[Any]:
    elem = atom.elem() or DEDUCED
    lpes = [item_element(atom, i, v) for i, v in enumerate(lhs)]
    rpes = [item_element(atom, i, v) for i, v in enumerate(rhs)]
    lmap: dict[PathElement, Any] = {}
    for pe, v in zip(lpes, lhs, strict=True):
        lmap.setdefault(pe, v)
    rmap: dict[PathElement, Any] = {}
    for pe, v in zip(rpes, rhs, strict=True):
        rmap.setdefault(pe, v)
    shared = [pe for pe in rpes if pe in lmap]
    next_shared = 0
    merged: set[PathElement] = set()
    out: list[Any] = []
    li = ri = 0

    def take(pe: PathElement) -> None:
        nonlocal next_shared
        merged.add(pe)
        out.append(merge(lmap.get(pe, MISSING), rmap[pe], elem))
        if next_shared < len(shared) and shared[next_shared] == pe:
            next_shared += 1

    while li < len(lpes) or ri < len(rpes):
        if li < len(lpes) and ri < len(rpes):
            pe = lpes[li]
            if pe == rpes[ri]:
                take(pe)
                li += 1
                ri += 1
                continue
            upcoming = shared[next_shared] if next_shared < len(shared) else None
            if pe in rmap and upcoming is not None and upcoming != pe:
                li += 1
                continue
        if li < len(lpes):
            pe = lpes[li]
            if pe not in rmap:
                out.append(lhs[li])
                li += 1
                continue
            if pe in merged:
                li += 1
                continue
        if ri < len(rpes):
            pe = rpes[ri]
            if pe not in merged:
                take(pe)
            ri += 1
    return out


def remove_items(value: Any, remove: Set, atom: Atom) -> Any:
    """``value`` without the fields and items whose paths are members of ``remove``
    (with everything below them)."""
    if remove.empty():
        return value
    shape = _shape(atom, value)
    if shape == "map" and isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            pe = PathElement.field(key)
            if pe in remove.members:
                continue
            sub = remove.children.get(pe)
            out[key] = item if sub is None else remove_items(item, sub, atom.child(key) or DEDUCED)
        return out
    if shape == "list" and isinstance(value, list):
        elem = atom.elem() or DEDUCED
        items: list[Any] = []
        for i, item in enumerate(value):
            pe = item_element(atom, i, item)
            if pe in remove.members:
                continue
            sub = remove.children.get(pe)
            items.append(item if sub is None else remove_items(item, sub, elem))
        return items
    return value


def ensure_named_fields_are_members(s: Set, atom: Atom) -> Set:
    """``s`` plus, as members, the struct fields that have owned paths below them."""
    out = Set()
    out.members = set(s.members)
    for pe, child in s.children.items():
        field = pe.kind == 0
        child_atom = (atom.child(pe.text) if field else atom.elem()) or DEDUCED
        below = ensure_named_fields_are_members(child, child_atom)
        if not below.members and not below.children:
            continue  # an empty subtree (the walk below says so: no empty() per level)
        if field and atom.declares(pe.text):
            out.members.add(pe)
        out.children[pe] = below
    return out


# Struct fields Go's zero value of a built-in type carries (non-pointer structs): a
# typed round trip adds them as ``{}``, which decides whether a write "added" them.
# The schemas we serve do not say which fields are pointers; this table names those
# of the workload types. ObjectMeta's zero value carries ``creationTimestamp: null``.
NON_POINTER_STRUCTS: Mapping[str, tuple[str, ...]] = {
    "io.k8s.api.apps.v1.DeploymentSpec": ("strategy", "template"),
    "io.k8s.api.apps.v1.StatefulSetSpec": ("template", "updateStrategy"),
    "io.k8s.api.apps.v1.DaemonSetSpec": ("template", "updateStrategy"),
    "io.k8s.api.apps.v1.ReplicaSetSpec": ("template",),
    "io.k8s.api.batch.v1.JobSpec": ("template",),
    "io.k8s.api.batch.v1.CronJobSpec": ("jobTemplate",),
    "io.k8s.api.batch.v1.JobTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.core.v1.PodTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.core.v1.PodTemplate": ("template",),
    "io.k8s.api.core.v1.Container": ("resources",),
    "io.k8s.api.core.v1.EphemeralContainer": ("resources",),
    "io.k8s.api.core.v1.PersistentVolumeClaimSpec": ("resources",),
}
_ROOT_STRUCTS = ("metadata", "spec", "status")
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_ZEROS: dict[tuple[int, bool], tuple[Atom, Mapping[str, Any]]] = {}


def _zero_fields(atom: Atom, root: bool) -> Mapping[str, Any]:
    """The members Go's zero value of this struct has that JSON may omit: non-pointer
    structs (``{}``), required slices and maps (``null``), ObjectMeta's
    ``creationTimestamp`` (``null``); cached per atom."""
    cached = _ZEROS.get((id(atom), root))
    if cached is not None and cached[0] is atom:
        return cached[1]
    zeros: dict[str, Any] = {}
    if atom.kind == "map" and not atom.atomic and atom.node is not None:
        for name in _ROOT_STRUCTS if root else ():
            child = atom.field(name)
            if child is not None and child.kind == "map" and not child.atomic:
                zeros[name] = {}
        if atom.definition == _OBJECT_META:
            zeros["creationTimestamp"] = None
        for name in NON_POINTER_STRUCTS.get(atom.definition or "", ()):
            zeros[name] = {}
        for name in atom.node.required:
            child = atom.field(name)  # a required slice or map has no omitempty: null
            if child is not None and _is_collection(child):
                zeros.setdefault(name, None)
    _ZEROS[(id(atom), root)] = (atom, zeros)
    return zeros


def _is_collection(atom: Atom) -> bool:
    if atom.kind == "list":
        return True
    return atom.kind == "map" and atom.node is not None and not atom.node.is_struct
