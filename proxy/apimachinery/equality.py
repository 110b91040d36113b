"""``apiequality.Semantic.DeepEqual`` over the JSON view of objects.

Upstream compares typed Go values, where an absent field, ``null``, an empty map and an
empty list are one and the same zero value (``data: {}`` and no ``data`` serialize
alike). Over JSON those are different values, so a naive ``==`` sees a change where
upstream sees none: a controller that compares what it wants with what it read from
storage (where empty maps are omitted) would then write on every round.
"""

from __future__ import annotations

__all__ = ["decoded_equal", "semantic_equal", "without_null", "without_zero"]

_ZERO: tuple[object, ...] = (None, {}, [])


def without_null(value: object) -> object:
    """``value`` with every null field dropped, recursively (Go decodes null as unset)."""
    if isinstance(value, dict):
        return {k: without_null(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_null(v) for v in value]
    return value


def without_zero(value: object) -> object:
    """``value`` with every null, empty-map and empty-list field dropped, recursively."""
    if isinstance(value, dict):
        kept = {k: without_zero(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in _ZERO}
    if isinstance(value, list):
        return [without_zero(v) for v in value]
    return value


def semantic_equal(a: object, b: object) -> bool:
    """Equal as upstream's typed objects would be (see the module docstring)."""
    return a == b or without_zero(a) == without_zero(b)


def decoded_equal(a: object, b: object) -> bool:
    """Equal once decoded into Go's types, where a field set to ``null`` is the field
    left out (a stored pod template's ``metadata.creationTimestamp: null`` and a request
    that omits it are one object); empty maps and lists still count, as Go's pointers
    to empty structs do."""
    return a == b or without_null(a) == without_null(b)
