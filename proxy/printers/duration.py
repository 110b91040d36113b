"""Ages and durations as kubectl prints them: apimachinery's ``duration.HumanDuration``
and the printers' ``translateTimestampSince``."""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = ["human_duration", "parse_time", "since"]


def human_duration(delta: dt.timedelta) -> str:
    """apimachinery's ``duration.HumanDuration``: ``45s``, ``5m3s``, ``3h10m``, ``2d4h``, ``3y``."""
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
