"""A CronJob schedule as ``robfig/cron/v3``'s ``ParseStandard`` reads it (five fields,
or a ``@descriptor``), returning its error text word for word, or None when the
schedule parses. Time zones (``TZ=``) are left to the caller's checks.
"""

from __future__ import annotations

import re

__all__ = ["schedule_error"]

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# (min, max, names) of minute, hour, day of month, month, day of week
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)
_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$|^0$")


def _atoi_error(expr: str) -> str:
    return f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax'


def _int(expr: str, names: dict[str, int]) -> int | str:
    """A number (or name), or the error text."""
    if expr.lower() in names:
        return names[expr.lower()]
    if not re.fullmatch(r"[+-]?\d+", expr):
        return _atoi_error(expr)
    number = int(expr)
    if number < 0:
        return f"negative number ({number}) not allowed: {expr}"
    return number


def _range(expr: str, low: int, high: int, names: dict[str, int]) -> str | None:
    range_and_step = expr.split("/")
    bounds = range_and_step[0].split("-")
    if bounds[0] in ("*", "?"):
        start, end = low, high
    else:
        first = _int(bounds[0], names)
        if isinstance(first, str):
            return first
        start = end = first
        if len(bounds) == 2:
            last = _int(bounds[1], names)
            if isinstance(last, str):
                return last
            end = last
        elif len(bounds) > 2:
            return f"too many hyphens: {expr}"
    step = 1
    if len(range_and_step) == 2:
        parsed = _int(range_and_step[1], {})
        if isinstance(parsed, str):
            return parsed
        step = parsed
        if len(bounds) == 1 and bounds[0] not in ("*", "?"):
            end = high
    elif len(range_and_step) > 2:
        return f"too many slashes: {expr}"
    if start < low:
        return f"beginning of range ({start}) below minimum ({low}): {expr}"
    if end > high:
        return f"end of range ({end}) above maximum ({high}): {expr}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {expr}"
    if step == 0:
        return f"step of range should be a positive number: {expr}"
    return None


def schedule_error(spec: str) -> str | None:
    """The parser's error for ``spec``, or None."""
    if not spec:
        return "empty spec string"
    if spec.startswith(("TZ=", "CRON_TZ=")):
        spec = spec[spec.find(" ") :].strip() if " " in spec else ""
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return None
        if spec.startswith("@every "):
            duration = spec[len("@every ") :]
            if _DURATION.match(duration):
                return None
            return f'failed to parse duration {spec}: time: invalid duration "{duration}"'
        return f"unrecognized descriptor: {spec}"
    fields = spec.split()
    if len(fields) != 5:
        shown = "[" + " ".join(fields) + "]"
        return f"expected exactly 5 fields, found {len(fields)}: {shown}"
    for text, (low, high, names) in zip(fields, _BOUNDS, strict=True):
        for part in text.split(","):
            error = _range(part, low, high, names)
            if error:
                return error
    return None
