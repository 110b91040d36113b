"""The Kubernetes semver library's value type: ``semver('1.2.3')`` and comparisons
(shared by name with the quantity library, see :mod:`.quantity`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from proxy.cel.errors import LibraryError, no_such_overload
from proxy.cel.values import opaque, opaque_value

__all__ = ["FUNCTIONS", "compare_with", "is_semver"]

_TYPE = "kubernetes.Semver"
_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$"
)


def is_semver(value: Any) -> bool:
    return opaque_value(value, _TYPE) is not None


def _key(value: Any) -> tuple[int, int, int, int]:
    text = opaque_value(value, _TYPE)
    match = _RE.match(text or "")
    if match is None:
        raise no_such_overload()
    major, minor, patch, pre = match.groups()
    return int(major), int(minor), int(patch), 0 if pre else 1


def compare_with(a: Any, b: Any, pick: Callable[[Decimal, Decimal], bool]) -> bool:
    x, y = _key(a), _key(b)
    return pick(Decimal((x > y) - (x < y)), Decimal(0))


def _make(text: Any) -> Any:
    if not isinstance(text, str) or not _RE.match(text):
        raise LibraryError("Improper constraint: " + str(text))
    return opaque(_TYPE, text)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "semver": _make,
    "isSemver": lambda s: isinstance(s, str) and _RE.match(s) is not None,
    "major": lambda v: _key(v)[0],
    "minor": lambda v: _key(v)[1],
    "patch": lambda v: _key(v)[2],
}
