"""String formats a CRD schema may declare (kube-openapi's ``strfmt`` registry as
Kubernetes restricts it); unknown formats are not checked, as upstream."""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import re
from collections.abc import Callable

__all__ = ["check_format"]

_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.I)
_UUID_V = {
    n: re.compile(rf"^[0-9a-f]{{8}}-[0-9a-f]{{4}}-{n}[0-9a-f]{{3}}-[89ab]?[0-9a-f]{{3,4}}-"
                  r"[0-9a-f]{12}$", re.I)
    for n in (3, 4, 5)
}  # fmt: skip
_HOSTNAME = re.compile(
    r"^([a-zA-Z0-9]((-?[a-zA-Z0-9]{0,62})?)|"
    r"([a-zA-Z0-9](([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.)){1,}([a-zA-Z]){2,63})$"
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}([0-9A-Fa-f]{2}[:-]{0,1}){1,3}$")
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGBCOLOR = re.compile(r"^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$")
_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d|w)\s*)+$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _date_time(value: str) -> bool:
    if not _DATE_TIME.match(value):
        return False
    try:
        datetime.datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


def _date(value: str) -> bool:
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return len(value) == 10


def _ip(version: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return ipaddress.ip_address(value).version == version
        except ValueError:
            return False

    return check


def _cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _uri(value: str) -> bool:
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", value)) or value.startswith("/")


_CHECKS: dict[str, Callable[[str], bool]] = {
    "date-time": _date_time,
    "datetime": _date_time,
    "date": _date,
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "mac": lambda v: bool(_MAC.match(v)),
    "uuid": lambda v: bool(_UUID.match(v)),
    "uuid3": lambda v: bool(_UUID_V[3].match(v)),
    "uuid4": lambda v: bool(_UUID_V[4].match(v)),
    "uuid5": lambda v: bool(_UUID_V[5].match(v)),
    "hostname": lambda v: bool(_HOSTNAME.match(v)) and len(v) <= 255,
    "email": lambda v: bool(_EMAIL.match(v)),
    "byte": _byte,
    "duration": lambda v: bool(_DURATION.match(v)),
    "uri": _uri,
    "hexcolor": lambda v: bool(_HEXCOLOR.match(v)),
    "rgbcolor": lambda v: bool(_RGBCOLOR.match(v)),
}


def check_format(fmt: str, value: str) -> bool:
    """Whether ``value`` satisfies ``fmt`` (True for formats not checked)."""
    check = _CHECKS.get(fmt)
    return check is None or check(value)
