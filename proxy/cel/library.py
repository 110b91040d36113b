"""Kubernetes' CEL libraries (``k8s.io/apiserver/pkg/cel/library``) and the cel-go
``ext`` string functions Kubernetes enables, as functions of the engine.

The engine calls a receiver-style call ``x.f(a)`` as ``f(x, a)``, and one name serves
every receiver type, so functions shared by several types (``indexOf`` on strings and
lists, ``isGreaterThan`` on quantities and semvers) dispatch on their first argument.
A function signals a CEL error by raising :class:`~proxy.cel.errors.LibraryError`, whose
text is the cel-go error message.

Covered: lists (isSorted, sum, min, max, indexOf, lastIndexOf), regex (find,
findAll), strings ext (charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace,
split, substring, trim, join, reverse, quote, format), url (url, isURL, getScheme, getHost,
getHostname, getPort, getEscapedPath, getQuery), quantity and ip/cidr (modules
:mod:`.quantity`, :mod:`.net`).
"""

from __future__ import annotations

import itertools
import re
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from proxy.cel import net, quantity, semver
from proxy.cel.errors import LibraryError, no_such_overload
from proxy.cel.values import opaque, opaque_value, type_name

__all__ = ["functions"]


# ------------------------------------------------------------------------- lists


def _comparable(items: Sequence[Any]) -> None:
    kinds = {type_name(i) for i in items}
    if len(kinds) > 1 or kinds & {"map", "list", "null_type"}:
        raise no_such_overload()


def is_sorted(items: Any) -> bool:
    if not isinstance(items, list):
        raise no_such_overload()
    _comparable(items)
    return all(a <= b for a, b in itertools.pairwise(items))


def list_sum(items: Any) -> Any:
    if not isinstance(items, list):
        raise no_such_overload()
    _comparable(items)
    return sum(items) if items else 0


def _extreme(items: Any, pick: Callable[[Any], Any]) -> Any:
    if not isinstance(items, list):
        raise no_such_overload()
    if not items:
        raise LibraryError(f"{pick.__name__} called on empty list")
    _comparable(items)
    return pick(items)


def index_of(receiver: Any, needle: Any, offset: int | None = None) -> int:
    if isinstance(receiver, list):
        for i, item in enumerate(receiver):
            if item == needle and type_name(item) == type_name(needle):
                return i
        return -1
    if isinstance(receiver, str) and isinstance(needle, str):
        start = offset or 0
        if start < 0 or start > len(receiver):
            raise LibraryError(f"index out of range: {start}")
        return receiver.find(needle, start)
    raise no_such_overload()


def last_index_of(receiver: Any, needle: Any, offset: int | None = None) -> int:
    if isinstance(receiver, list):
        for i in range(len(receiver) - 1, -1, -1):
            if receiver[i] == needle and type_name(receiver[i]) == type_name(needle):
                return i
        return -1
    if isinstance(receiver, str) and isinstance(needle, str):
        end = len(receiver) if offset is None else offset
        if end < 0 or end > len(receiver):
            raise LibraryError(f"index out of range: {end}")
        return receiver.rfind(needle, 0, end + len(needle))
    raise no_such_overload()


# ------------------------------------------------------------------------- regex


def _regex(pattern: Any) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise no_such_overload()
    try:
        return re.compile(pattern)
    except re.error as err:
        raise LibraryError(f"error parsing regexp: {err}") from None


def find(text: Any, pattern: Any) -> str:
    if not isinstance(text, str):
        raise no_such_overload()
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def find_all(text: Any, pattern: Any, limit: int = -1) -> list[str]:
    if not isinstance(text, str):
        raise no_such_overload()
    found = [m.group(0) for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


# ----------------------------------------------------------------------- strings


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise no_such_overload()
    return value


def char_at(receiver: Any, i: Any) -> str:
    text = _string(receiver)
    if not isinstance(i, int) or i < 0 or i > len(text):
        raise LibraryError(f"index out of range: {i}")
    return text[i : i + 1]


def substring(receiver: Any, start: Any, end: Any = None) -> str:
    text = _string(receiver)
    stop = len(text) if end is None else end
    if not 0 <= start <= len(text):
        raise LibraryError(f"index out of range: {start}")
    if not 0 <= stop <= len(text):
        raise LibraryError(f"index out of range: {stop}")
    if start > stop:
        raise LibraryError(f"invalid substring range. start: {start}, end: {stop}")
    return text[start:stop]


def replace(text: Any, old: Any, new: Any, limit: int = -1) -> str:
    return _string(text).replace(_string(old), _string(new), limit)


def split(receiver: Any, separator: Any, limit: int = -1) -> list[str]:
    text, sep = _string(receiver), _string(separator)
    if limit == 0:
        return []
    if sep == "":
        chars = list(text)
        return chars if limit < 0 else [*chars[: limit - 1], "".join(chars[limit - 1 :])]
    return text.split(sep, limit - 1 if limit > 0 else -1)


def join(items: Any, sep: str = "") -> str:
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise no_such_overload()
    return _string(sep).join(items)


def quote(text: Any) -> str:
    escaped = _string(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\t", "\\t") + '"'


_FORMAT_VERB = re.compile(r"%(?:\.(\d+))?([sdfeExXob%])")


def string_format(template: Any, args: Any) -> str:
    """cel-go ext strings ``"...".format([args])``: %s %d %f %.Nf %e %x %X %o %b %%."""
    text = _string(template)
    if not isinstance(args, list):
        raise no_such_overload()
    values = iter(args)

    def verb(match: re.Match[str]) -> str:
        precision, kind = match.group(1), match.group(2)
        if kind == "%":
            return "%"
        try:
            value = next(values)
        except StopIteration:
            raise LibraryError(f"index {len(args)} out of range") from None
        return _format_one(value, kind, precision)

    return _FORMAT_VERB.sub(verb, text)


def _format_one(value: Any, kind: str, precision: str | None) -> str:
    if kind == "s":
        return _format_string(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LibraryError(f"error during formatting: {kind} clause can only be used on numbers")
    if kind == "d":
        return str(int(value))
    if kind in "fe":
        digits = 6 if precision is None else int(precision)
        return f"{float(value):.{digits}{kind}}"
    if kind == "E":
        digits = 6 if precision is None else int(precision)
        return f"{float(value):.{digits}E}"
    return format(int(value), {"x": "x", "X": "X", "o": "o", "b": "b"}[kind])


def _format_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(_format_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{_format_string(k)}:{_format_string(v)}" for k, v in value.items())
            + "}"
        )
    return str(value)


# --------------------------------------------------------------------------- url

_URL = "kubernetes.URL"


def _parse_url(text: str) -> urllib.parse.SplitResult | None:
    """Go's ``url.ParseRequestURI`` as the URL library applies it: absolute URLs or
    absolute paths, no fragments."""
    if "#" in text or not text:
        return None
    try:
        parsed = urllib.parse.urlsplit(text)
    except ValueError:
        return None
    if not parsed.scheme and not text.startswith("/"):
        return None
    return parsed


def url(text: Any) -> Any:
    if _parse_url(_string(text)) is None:
        raise LibraryError(f"URL parse error during conversion from string: parse {text!r}")
    return opaque(_URL, text)


def is_url(text: Any) -> bool:
    return _parse_url(_string(text)) is not None


def _url_part(value: Any) -> urllib.parse.SplitResult:
    text = opaque_value(value, _URL)
    parsed = _parse_url(text) if text is not None else None
    if parsed is None:
        raise no_such_overload()
    return parsed


def get_scheme(value: Any) -> str:
    return _url_part(value).scheme


def get_host(value: Any) -> str:
    return _url_part(value).netloc.rpartition("@")[2]


def get_hostname(value: Any) -> str:
    host = get_host(value)
    if host.startswith("["):
        return host[1 : host.index("]")]
    return host.rpartition(":")[0] if ":" in host else host


def get_port(value: Any) -> str:
    host = get_host(value)
    tail = host[host.index("]") + 1 :] if host.startswith("[") else host
    return tail.rpartition(":")[2] if ":" in tail else ""


def get_escaped_path(value: Any) -> str:
    return _url_part(value).path


def get_query(value: Any) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_url_part(value).query, keep_blank_values=True)


def _library() -> dict[str, Callable[..., Any]]:
    functions: dict[str, Callable[..., Any]] = {
        "isSorted": is_sorted,
        "sum": list_sum,
        "min": lambda items: _extreme(items, min),
        "max": lambda items: _extreme(items, max),
        "indexOf": index_of,
        "lastIndexOf": last_index_of,
        "find": find,
        "findAll": find_all,
        "charAt": char_at,
        "lowerAscii": lambda s: _ascii_case(_string(s), str.lower),
        "upperAscii": lambda s: _ascii_case(_string(s), str.upper),
        "replace": replace,
        "split": split,
        "substring": substring,
        "trim": lambda s: _string(s).strip(" \t\n\v\f\r\x85\xa0"),
        "join": join,
        "reverse": lambda s: _string(s)[::-1],
        "quote": quote,
        "format": string_format,
        "url": url,
        "isURL": is_url,
        "getScheme": get_scheme,
        "getHost": get_host,
        "getHostname": get_hostname,
        "getPort": get_port,
        "getEscapedPath": get_escaped_path,
        "getQuery": get_query,
    }
    functions.update(quantity.FUNCTIONS)
    functions.update(net.FUNCTIONS)
    functions.update(semver.FUNCTIONS)
    return functions


def _ascii_case(text: str, change: Callable[[str], str]) -> str:
    return "".join(change(c) if c.isascii() else c for c in text)


FUNCTIONS: dict[str, Callable[..., Any]] = {}
"""Filled on first use by :func:`functions`."""


def functions() -> dict[str, Callable[..., Any]]:
    """Every library function by its CEL name."""
    if not FUNCTIONS:
        FUNCTIONS.update(_library())
    return FUNCTIONS
