"""Strings that came from a request, made writable (upstream gets this from Go: a string
is bytes, and ``encoding/json`` writes each invalid UTF-8 sequence as U+FFFD).

aiohttp decodes header values, the path and the query as UTF-8 with
``surrogateescape``: a byte that is not UTF-8 (``\\xff``) becomes a lone surrogate
(U+DCFF) that no UTF-8 encoder accepts. Everything that writes a request-derived string
(the audit log, the access log, Status bodies) falls back to :func:`valid_utf8` when
the fast encoder refuses one.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["valid_utf8"]

# surrogates that stand for no byte (surrogateescape uses U+DC80..U+DCFF only)
_OTHER_SURROGATES = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def valid_utf8(value: Any) -> Any:
    """``value`` with every string (dict keys too) made valid UTF-8: the bytes a string
    was decoded from are read again as Go reads them, U+FFFD for each invalid sequence.
    Containers are copied (dicts, and lists for lists and tuples); other values are
    returned as they are. Recursive: callers pass events, Statuses and log entries,
    whose nesting was bounded when their parts were decoded."""
    if isinstance(value, str):
        return value if value.isascii() else _replace_surrogates(value)
    if isinstance(value, dict):
        return {valid_utf8(k): valid_utf8(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [valid_utf8(v) for v in value]
    return value


def _replace_surrogates(text: str) -> str:
    text = _OTHER_SURROGATES.sub("\ufffd", text)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
