"""String formats of apimachinery's ``pkg/util/validation`` (those label selectors use
too live in ``storage.validation``, re-exported here) and the name functions of
``pkg/api/validation`` (``NameIsDNSSubdomain``, ``NameIsDNSLabel``,
``NameIsDNS1035Label``, ``path.ValidatePathSegmentName``).

Each ``is_*`` returns the list of upstream's messages (empty when valid), word for
word, ready to be the detail of ``field.invalid``. A :data:`NameFunc` takes
``(name, prefix)``; ``prefix`` is True for ``generateName``, whose trailing dash is
masked as upstream does.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

from storage.validation import (
    DNS1123_LABEL_FMT,
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    empty_error,
    full_match,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    max_len_error,
    regex_error,
)

__all__ = [
    "NameFunc",
    "empty_error",
    "inclusive_range_error",
    "is_config_map_key",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_ip",
    "is_valid_label_value",
    "is_valid_port_name",
    "is_valid_port_num",
    "max_len_error",
    "name_is_dns1035_label",
    "name_is_dns_label",
    "name_is_dns_subdomain",
    "path_segment_name",
    "regex_error",
]

NameFunc = Callable[[str, bool], list[str]]

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_RE = re.compile(f"^{DNS1123_LABEL_FMT}$")
DNS1123_LABEL_MAX_LENGTH = 63

_DNS1123_SUBDOMAIN_RE = re.compile(DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*")

_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character"
)
_DNS1035_LABEL_RE = re.compile(f"^{_DNS1035_LABEL_FMT}$")

_CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_CONFIG_MAP_KEY_RE = re.compile(f"^{_CONFIG_MAP_KEY_FMT}$")

_PORT_NAME_CHARSET = re.compile("^[-a-z0-9]+$")
_PORT_NAME_LETTER = re.compile("[a-z]")


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def is_dns1123_label(value: str) -> list[str]:
    errs: list[str] = []
    if len(value.encode()) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not full_match(_DNS1123_LABEL_RE, value):
        if full_match(_DNS1123_SUBDOMAIN_RE, value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs: list[str] = []
    if len(value.encode()) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not full_match(_DNS1035_LABEL_RE, value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_config_map_key(value: str) -> list[str]:
    """ConfigMap and Secret data keys."""
    errs: list[str] = []
    if len(value.encode()) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not full_match(_CONFIG_MAP_KEY_RE, value):
        errs.append(
            regex_error(
                _CONFIG_MAP_KEY_MSG, _CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"
            )
        )
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_valid_port_name(port: str) -> list[str]:
    """An IANA_SVC_NAME: at most 15 characters, a-z0-9 and single inner hyphens."""
    errs: list[str] = []
    if len(port.encode()) > 15:
        errs.append(max_len_error(15))
    if not full_match(_PORT_NAME_CHARSET, port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_ip(value: str) -> list[str]:
    """``IsValidIP``'s detail (the caller makes it ``field.invalid(path, value, ...)``)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


def _mask_trailing_dash(name: str) -> str:
    # upstream replaces the last TWO characters by "a" (a long-standing quirk kept as is)
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def path_segment_name(name: str, prefix: bool) -> list[str]:
    """``path.ValidatePathSegmentName``: what every name must be to sit in a URL."""
    if not prefix:
        for bad in (".", ".."):
            if name == bad:
                return [f"may not be '{bad}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]
