"""The string formats of k8s.io/apimachinery/pkg/util/validation that label selectors
(``storage.selectors``) and object validation (``proxy.registry.validation``) share:
qualified names, label values, DNS-1123 subdomains, with upstream's messages word for
word (each ``is_*`` returns the list of messages, empty when valid).
"""

from __future__ import annotations

import functools
import re

__all__ = [
    "DNS1123_LABEL_FMT",
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "empty_error",
    "full_match",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "max_len_error",
    "regex_error",
]

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)
_QNAME_RE = re.compile(_QNAME_FMT)
QUALIFIED_NAME_MAX_LENGTH = 63

_LABEL_VALUE_FMT = f"({_QNAME_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
LABEL_VALUE_MAX_LENGTH = 63

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
DNS1123_SUBDOMAIN_MAX_LENGTH = 253


def full_match(pattern: re.Pattern[str], value: str) -> bool:
    """Go's ``^...$`` (``$`` only at the very end of the text)."""
    return pattern.fullmatch(value) is not None


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def empty_error() -> str:
    return "must be non-empty"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``RegexError``: the message, its examples and the regex (note upstream's double
    space between examples: ``'a',  or 'b'``)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    out = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            out += " or "
        out += f"'{example}', "
    return out + f"regex used for validation is '{fmt}')"


def is_qualified_name(value: str) -> list[str]:
    """Label keys, annotation keys, finalizers: ``[prefix/]name``."""
    return list(_qualified_name(value))


@functools.lru_cache(maxsize=4096)  # the same keys come back on every object
def _qualified_name(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return (
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errs.append("name part " + empty_error())
    elif len(name.encode()) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not full_match(_QNAME_RE, name):
        errs.append(
            "name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return tuple(errs)


def is_valid_label_value(value: str) -> list[str]:
    return list(_label_value(value))


@functools.lru_cache(maxsize=4096)
def _label_value(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    if len(value.encode()) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not full_match(_LABEL_VALUE_RE, value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return tuple(errs)


def is_dns1123_subdomain(value: str) -> list[str]:
    errs: list[str] = []
    if len(value.encode()) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not full_match(_DNS1123_SUBDOMAIN_RE, value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs
