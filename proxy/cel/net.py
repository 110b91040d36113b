"""The Kubernetes ip and cidr libraries: ``ip('10.0.0.1')``, ``isIP``, ``cidr(...)``,
``isCIDR``, ``family``, ``isLoopback``, ``containsIP``, ``prefixLength``, ... (Go's
netip parsing: no zones, no IPv4-mapped IPv6, no leading zeros)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from proxy.cel.errors import LibraryError, no_such_overload
from proxy.cel.values import opaque, opaque_value

__all__ = ["FUNCTIONS"]

_IP = "net.IP"
_CIDR = "net.CIDR"
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _parse_ip(text: str) -> Address | None:
    if "%" in text:
        return None
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return None
    return addr


def _parse_cidr(text: str) -> tuple[Address, Network] | None:
    addr_text, slash, _prefix = text.partition("/")
    addr = _parse_ip(addr_text) if slash else None
    if addr is None:
        return None
    try:
        return addr, ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _make_ip(text: Any) -> Any:
    if not isinstance(text, str):
        raise no_such_overload()
    if _parse_ip(text) is None:
        raise LibraryError(f"IP Address {text!r} parse error during conversion from string")
    return opaque(_IP, text)


def _make_cidr(text: Any) -> Any:
    if not isinstance(text, str):
        raise no_such_overload()
    if _parse_cidr(text) is None:
        raise LibraryError(f"network address parse error during conversion from string: {text}")
    return opaque(_CIDR, text)


def _ip(value: Any) -> Address:
    text = opaque_value(value, _IP)
    addr = _parse_ip(text) if text is not None else None
    if addr is None:
        raise no_such_overload()
    return addr


def _cidr(value: Any) -> tuple[Address, Network]:
    text = opaque_value(value, _CIDR)
    parsed = _parse_cidr(text) if text is not None else None
    if parsed is None:
        raise no_such_overload()
    return parsed


def _family(value: Any) -> int:
    return _ip(value).version


def _contains_ip(cidr: Any, other: Any) -> bool:
    network = _cidr(cidr)[1]
    addr = _parse_ip(other) if isinstance(other, str) else _ip(other)
    if addr is None:
        raise LibraryError(f"IP Address {other!r} parse error during conversion from string")
    return addr.version == network.version and addr in network


def _contains_cidr(cidr: Any, other: Any) -> bool:
    network = _cidr(cidr)[1]
    parsed = _parse_cidr(other) if isinstance(other, str) else _cidr(other)
    if parsed is None:
        raise LibraryError(f"network address parse error during conversion from string: {other}")
    inner = parsed[1]
    return inner.version == network.version and inner.subnet_of(network)  # type: ignore[arg-type]


def _ip_of(value: Any) -> Any:
    if opaque_value(value, _CIDR) is not None:
        return opaque(_IP, str(_cidr(value)[0]))
    return _make_ip(value)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ip": _ip_of,
    "isIP": lambda s: isinstance(s, str) and _parse_ip(s) is not None,
    "cidr": _make_cidr,
    "isCIDR": lambda s: isinstance(s, str) and _parse_cidr(s) is not None,
    "family": _family,
    "isUnspecified": lambda v: _ip(v).is_unspecified,
    "isLoopback": lambda v: _ip(v).is_loopback,
    "isLinkLocalMulticast": lambda v: _ip(v).is_multicast and _ip(v).is_link_local,
    "isLinkLocalUnicast": lambda v: _ip(v).is_link_local and not _ip(v).is_multicast,
    "isGlobalUnicast": lambda v: (
        not (
            _ip(v).is_multicast
            or _ip(v).is_loopback
            or _ip(v).is_link_local
            or _ip(v).is_unspecified
            or _ip(v) == ipaddress.IPv4Address("255.255.255.255")
        )
    ),
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "prefixLength": lambda c: _cidr(c)[1].prefixlen,
    "masked": lambda c: opaque(_CIDR, str(_cidr(c)[1])),
}
