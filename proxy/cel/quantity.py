"""The Kubernetes quantity library: ``quantity('1Gi')``, ``isQuantity``, comparisons,
arithmetic and conversions, on apimachinery's exact decimal quantities."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from proxy.apimachinery import quantity as kq
from proxy.cel.errors import LibraryError, no_such_overload
from proxy.cel.values import opaque, opaque_value

__all__ = ["FUNCTIONS"]

_TYPE = "kubernetes.Quantity"


def _make(text: Any) -> Any:
    if not isinstance(text, str):
        raise no_such_overload()
    if kq.parse(text) is None or text.strip() != text:
        raise LibraryError(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    return opaque(_TYPE, text)


def _get(value: Any) -> kq.Quantity:
    text = opaque_value(value, _TYPE)
    parsed = kq.parse(text) if text is not None else None
    if parsed is None:
        raise no_such_overload()
    return parsed


def _wrap(q: kq.Quantity) -> Any:
    return opaque(_TYPE, str(q))


def _operand(value: Any) -> kq.Quantity:
    if isinstance(value, int) and not isinstance(value, bool):
        return kq.Quantity(Decimal(value), "DecimalSI")
    return _get(value)


def _compare(pick: Callable[[Decimal, Decimal], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        from proxy.cel import semver

        if semver.is_semver(a):
            return semver.compare_with(a, b, pick)
        return pick(_get(a).value, _get(b).value)

    return compare


def _add(a: Any, b: Any) -> Any:
    x, y = _get(a), _operand(b)
    return _wrap(kq.Quantity(x.value + y.value, x.fmt))


def _sub(a: Any, b: Any) -> Any:
    x, y = _get(a), _operand(b)
    return _wrap(kq.Quantity(x.value - y.value, x.fmt))


def _as_integer(a: Any) -> int:
    value = _get(a).value
    if value != value.to_integral_value() or abs(value) > 2**63 - 1:
        raise LibraryError("cannot convert value to integer")
    return int(value)


def _is_integer(a: Any) -> bool:
    value = _get(a).value
    return value == value.to_integral_value() and abs(value) <= 2**63 - 1


def _compare_to(a: Any, b: Any) -> int:
    x, y = _get(a).value, _get(b).value
    return (x > y) - (x < y)


def _sign(a: Any) -> int:
    value = _get(a).value
    return (value > 0) - (value < 0)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _make,
    "isQuantity": lambda s: isinstance(s, str) and kq.parse(s) is not None and s.strip() == s,
    "isGreaterThan": _compare(lambda x, y: x > y),
    "isLessThan": _compare(lambda x, y: x < y),
    "compareTo": _compare_to,
    "add": _add,
    "sub": _sub,
    "asInteger": _as_integer,
    "isInteger": _is_integer,
    "asApproximateFloat": lambda a: float(_get(a).value),
    "sign": _sign,
}
