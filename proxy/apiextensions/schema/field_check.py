"""A little of cel-go's type checking that the engine lacks: ``self.a.b`` (and
``oldSelf.a.b``) chains are resolved in the rule's schema, and a field the schema does
not declare is a compile error, worded as cel-go words it::

    ERROR: <input>:1:5: undefined field 'nofield'
     | self.nofield == 1
     | ....^

Only plain dotted chains from ``self``/``oldSelf`` are checked; anything the schema
leaves open (maps, ``x-kubernetes-int-or-string``, untyped values) is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from proxy import cel
from proxy.apiextensions.schema.structural import Schema

__all__ = ["read_fields", "undefined_field"]

_CHAIN = re.compile(r"(?<![\w.])(?:self|oldSelf)((?:\s*\.\s*[A-Za-z_]\w*)+)")
_HAS = re.compile(r"\bhas\s*\(\s*$")
_STEP = re.compile(r"\s*\.\s*([A-Za-z_]\w*)")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_TYPE_META = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}}
_EMBEDDED_META = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_ROOT_META = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}},
}


def undefined_field(expression: str, schema: Schema, root: bool) -> str | None:
    """cel-go's error for the first field ``expression`` reads that ``schema`` (the
    rule's node; ``root`` for the resource root) does not declare, else None."""
    for found in _walk(expression, schema, root):
        if isinstance(found, str):
            return found
    return None


def read_fields(expression: str, schema: Schema, root: bool) -> list[Schema]:
    """The schemas of the declared fields ``expression`` reads (ends of chains)."""
    return [found for found in _walk(expression, schema, root) if not isinstance(found, str)]


def _walk(expression: str, schema: Schema, root: bool) -> Iterator[Schema | str]:
    """For every ``self``/``oldSelf`` chain: the schema it ends at, or the error of
    its first undefined field."""
    masked = _STRING.sub(lambda m: " " * len(m.group(0)), expression)
    for chain in _CHAIN.finditer(masked):
        node: Schema | None = _with_meta(schema, root)
        base = chain.start(1)
        steps = list(_STEP.finditer(chain.group(1)))
        for n, step in enumerate(steps):
            name = step.group(1)
            if masked[base + step.end() :].lstrip().startswith("("):
                break  # a method call, not a field
            node, known = _field(node, name)
            if not known:
                offset = masked.index(".", base + step.start())
                macro = _HAS.search(masked[: chain.start()])
                if macro and n == len(steps) - 1:
                    offset = macro.end() - 1  # cel-go places has() errors at its "("
                yield cel.error_at(expression, offset, f"undefined field '{name}'")
                break
            if node is None:
                break
        else:
            if node is not None:
                yield node


def _with_meta(schema: Schema, root: bool) -> Schema:
    if not (root or schema.get("x-kubernetes-embedded-resource")):
        return schema
    props = dict(schema.get("properties") or {})
    for name, sub in _TYPE_META.items():
        props.setdefault(name, sub)
    props.setdefault("metadata", _ROOT_META if root else _EMBEDDED_META)
    return {**schema, "properties": props}


def _field(node: Schema | None, name: str) -> tuple[Schema | None, bool]:
    """The schema of field ``name`` of ``node`` and whether the field is known; a
    None schema means "dynamic from here on"."""
    if node is None or node.get("type") != "object":
        return None, True
    props = node.get("properties")
    if isinstance(props, Mapping) and name in props:
        sub = props[name]
        return (_with_meta(sub, False) if isinstance(sub, Mapping) else None), True
    if node.get("additionalProperties") not in (None, False):
        return None, True  # a map: any key
    if node.get("x-kubernetes-embedded-resource") and name in ("apiVersion", "kind", "metadata"):
        return None, True
    return None, False
