"""Go's zero values over decoded JSON, for the defaulting functions.

A defaulter of upstream sets a field when it holds its Go zero value after decoding: a
nil pointer, slice or map (an absent or null member here), an empty string, a zero
number. These helpers say which of those each default tests, so every defaulter reads
like its ``SetDefaults_*`` function. They never raise on a value of the wrong type
(values read back from etcd are not schema-checked): a member that is not what the
default expects is left as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = [
    "JSON",
    "child",
    "default_nil",
    "default_zero",
    "dicts",
    "drop_empty",
    "member",
]

JSON = dict[str, Any]


def default_nil(obj: JSON, key: str, value: Any) -> None:
    """A pointer, map or slice default: set ``key`` when absent or null."""
    if obj.get(key) is None:
        obj[key] = value


def default_zero(obj: JSON, key: str, value: Any) -> None:
    """A string or plain number default: set ``key`` when absent, null, ``""`` or 0
    (``False`` is not a zero here: no defaulted field of upstream is a plain bool)."""
    current = obj.get(key)
    if current is None or current == "" or (current == 0 and not isinstance(current, bool)):
        obj[key] = value


def member(obj: JSON, key: str) -> JSON | None:
    """``obj[key]`` when it is an object; None otherwise (absent, null, wrong type)."""
    value = obj.get(key)
    return value if isinstance(value, dict) else None


def child(obj: JSON, key: str) -> JSON | None:
    """``obj[key]``, created as ``{}`` when absent or null: a Go struct member (never
    nil) that a default is set inside. None when the member has another type."""
    if obj.get(key) is None:
        obj[key] = {}
    return member(obj, key)


def dicts(obj: JSON | None, key: str) -> Iterator[JSON]:
    """The objects of the list ``obj[key]`` (other items and non-lists skipped)."""
    items = obj.get(key) if obj is not None else None
    if isinstance(items, list):
        yield from (item for item in items if isinstance(item, dict))


def drop_empty(obj: JSON, key: str) -> None:
    """Remove ``obj[key]`` when it is an empty map: Go's ``omitempty`` never writes one."""
    if obj.get(key) == {}:
        del obj[key]
