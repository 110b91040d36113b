"""Field errors as apimachinery's ``util/validation/field`` makes them.

Each constructor returns an :class:`apierrors.FieldError` (cause type, field path,
body) whose body is exactly ``field.Error.ErrorBody()``::

    required(p)                 Required value[: detail]
    invalid(p, v, detail)       Invalid value: <v>: detail
    not_supported(p, v, vals)   Unsupported value: <v>: supported values: "a", "b"
    duplicate(p, v)             Duplicate value: <v>
    forbidden(p, detail)        Forbidden: detail
    too_long(p, n)              Too long: may not be more than n bytes
    too_many(p, got, n)         Too many: got: must have at most n items
    not_found(p, v)             Not found: <v>

``<v>`` is the bad value printed as Go prints it there: strings ``%q``, numbers and
booleans ``%v``, a nil value ``"null"``, anything else ``%#v`` (build those with
:class:`GoLiteral` and the helpers of ``go_values``). :func:`to_status` is
``errors.NewInvalid``: one 422 for the whole list.

Paths are plain strings built with :func:`child`, :func:`index` and :func:`key`
(``spec.containers[0].name``, ``data[my key]``), as ``field.Path.String()`` prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from proxy import apierrors
from proxy.apierrors import FieldError, _go_quote

__all__ = [
    "ErrorList",
    "FieldError",
    "GoLiteral",
    "child",
    "duplicate",
    "forbidden",
    "go_quote",
    "go_value",
    "index",
    "invalid",
    "key",
    "not_found",
    "not_supported",
    "required",
    "to_status",
    "too_long",
    "too_many",
    "type_invalid",
]

ErrorList = list[FieldError]

go_quote = _go_quote


@dataclass(frozen=True, slots=True)
class GoLiteral:
    """A bad value already rendered as Go's ``%#v`` (or ``String()``) would print it."""

    text: str


def go_value(value: object) -> str:
    """A bad value as ``ErrorBody`` prints it."""
    if value is None:
        return '"null"'
    if isinstance(value, GoLiteral):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    return str(value)


def go_float(value: float) -> str:
    """Go's ``%v`` of a float64 (shortest form, exponent from 1e21)."""
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


# ------------------------------------------------------------------------ paths


def child(path: str, *names: str) -> str:
    """``path.Child(names...)``."""
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int) -> str:
    """``path.Index(i)``."""
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    """``path.Key(k)`` (the key is not quoted)."""
    return f"{path}[{k}]"


# ----------------------------------------------------------------- constructors


def _body(kind: str, value: str | None, detail: str) -> str:
    body = kind if value is None else f"{kind}: {value}"
    return f"{body}: {detail}" if detail else body


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, _body("Required value", None, detail))


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, _body("Forbidden", None, detail))


def invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, _body("Invalid value", go_value(value), detail))


def type_invalid(path: str, value: object, detail: str) -> FieldError:
    return FieldError(
        "FieldValueTypeInvalid", path, _body("Invalid value", go_value(value), detail)
    )


def duplicate(path: str, value: object) -> FieldError:
    return FieldError("FieldValueDuplicate", path, _body("Duplicate value", go_value(value), ""))


def not_found(path: str, value: object) -> FieldError:
    return FieldError("FieldValueNotFound", path, _body("Not found", go_value(value), ""))


def not_supported(path: str, value: object, supported: Sequence[str]) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(s) for s in supported) if supported else ""
    return FieldError(
        "FieldValueNotSupported", path, _body("Unsupported value", go_value(value), detail)
    )


def too_long(path: str, max_length: int) -> FieldError:
    detail = f"may not be more than {max_length} bytes" if max_length >= 0 else "value is too long"
    return FieldError("FieldValueTooLong", path, _body("Too long", None, detail))


def too_many(path: str, actual: int, max_quantity: int) -> FieldError:
    detail = (
        f"must have at most {max_quantity} items" if max_quantity >= 0 else "has too many items"
    )
    value = str(actual) if actual >= 0 else None
    return FieldError("FieldValueTooMany", path, _body("Too many", value, detail))


def to_status(group_kind: str, name: str, errs: Sequence[FieldError]) -> apierrors.StatusError:
    """``errors.NewInvalid(<group kind>, name, errs)``: 422 Invalid, one cause per error
    (duplicates kept), the message listing each distinct error once."""
    return apierrors.invalid(group_kind, name, errs)
