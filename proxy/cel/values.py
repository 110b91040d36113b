"""JSON values to CEL values and back.

JSON objects, arrays, strings, numbers, booleans and null map onto CEL's map, list,
string, int/double, bool and null_type one to one; the engine takes them as Python
values. Kubernetes' opaque types (``kubernetes.Quantity``, ``net.IP``, ``net.CIDR``,
``kubernetes.URL``, ...) have no native counterpart in the engine, so they travel as a
one-entry map tagged with :data:`OPAQUE_KEY` (see :func:`opaque`); :func:`to_json`
turns such a value back into its string form.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from typing import Any

__all__ = ["OPAQUE_KEY", "from_json", "opaque", "opaque_value", "to_json", "type_name"]

OPAQUE_KEY = "@kubernetes.opaque"


def opaque(type_name: str, value: str) -> dict[str, list[str]]:
    """An opaque CEL value of a Kubernetes library type, carried as a tagged map."""
    return {OPAQUE_KEY: [type_name, value]}


def opaque_value(value: object, type_name: str) -> str | None:
    """The string inside an opaque value of ``type_name``, else None."""
    if isinstance(value, Mapping) and len(value) == 1 and OPAQUE_KEY in value:
        tag = value[OPAQUE_KEY]
        if isinstance(tag, list) and len(tag) == 2 and tag[0] == type_name:
            return str(tag[1])
    return None


def type_name(value: object) -> str:
    """The CEL type name of a value (``int``, ``string``, ``kubernetes.Quantity``...)."""
    if isinstance(value, Mapping) and OPAQUE_KEY in value and len(value) == 1:
        tag = value[OPAQUE_KEY]
        if isinstance(tag, list) and tag:
            return str(tag[0])
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, datetime.timedelta):
        return "google.protobuf.Duration"
    if isinstance(value, datetime.datetime):
        return "google.protobuf.Timestamp"
    return type(value).__name__


def from_json(value: Any) -> Any:
    """A decoded JSON value as the engine takes it (a copy, so evaluation never aliases
    the caller's object)."""
    if isinstance(value, dict):
        return {str(k): from_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [from_json(v) for v in value]
    return value


def to_json(value: Any) -> Any:
    """A CEL result as JSON: opaque values as their string, durations as Go prints them
    (``1h0m0s``), timestamps in RFC 3339, bytes base64 (as encoding/json does)."""
    if isinstance(value, Mapping):
        if len(value) == 1 and OPAQUE_KEY in value:
            return str(value[OPAQUE_KEY][1])
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime.timedelta):
        return go_duration(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat().replace("+00:00", "Z")
    return value


def go_duration(value: datetime.timedelta) -> str:
    """``time.Duration.String()`` for whole-microsecond durations."""
    micros = round(value.total_seconds() * 1_000_000)
    if micros == 0:
        return "0s"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = rest / 1_000_000
    secs = f"{seconds:.6f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}"
    if minutes:
        return f"{sign}{minutes}m{secs}"
    return sign + secs
