"""Ages and durations as kubectl prints them: apimachinery's ``duration.HumanDuration``
and the printers' ``translateTimestampSince``."""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = [
    "AGE_MARK", "SYMBOLIC_NOW", "epoch_microseconds", "human_duration", "parse_time", "since",
]

# A row printed at SYMBOLIC_NOW carries, where a duration up to "now" would be, the mark
# AGE_MARK + <microseconds since the epoch of the start> + "\0" instead of the text.
# proxy.printers.row_template keeps such a row once per object version and renders
# the marks at each request's now (a row's cells are computed once, its ages per
# request). Only ``now - t`` is symbolic; a duration between two fixed times is text.
AGE_MARK = "\0age:"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)


class _Since(dt.timedelta):
    """``SYMBOLIC_NOW - start``: a duration whose end is the request's now."""

    start: dt.datetime


class _SymbolicNow(dt.datetime):
    def __sub__(self, other: Any) -> Any:
        if isinstance(other, dt.datetime):
            since_start = _Since(0)
            since_start.start = other
            return since_start
        return super().__sub__(other)


SYMBOLIC_NOW: dt.datetime = _SymbolicNow(1970, 1, 1, tzinfo=dt.UTC)


def epoch_microseconds(when: dt.datetime) -> int:
    """``when`` as whole microseconds since the epoch (exact, unlike floats)."""
    aware = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    return (aware - _EPOCH) // _MICROSECOND


def human_duration(delta: dt.timedelta) -> str:
    """apimachinery's ``duration.HumanDuration``: ``45s``, ``5m3s``, ``3h10m``, ``2d4h``, ``3y``.
    (A duration up to SYMBOLIC_NOW is its mark, rendered later.)"""
    if type(delta) is _Since:
        return f"{AGE_MARK}{epoch_microseconds(delta.start)}\0"
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if dy == 0 else f"{years}y{dy}d"
    return f"{hours // 24 // 365}y"


def parse_time(value: Any) -> dt.datetime | None:
    """An RFC 3339 timestamp (``2024-01-02T03:04:05Z``, micro-time too), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def since(value: Any, now: dt.datetime) -> str:
    """kubectl's ``translateTimestampSince``: ``<unknown>`` for a missing time."""
    when = parse_time(value)
    return "<unknown>" if when is None else human_duration(now - when)
