"""resourceVersion parsing with kube-apiserver's messages (APIObjectVersioner).

A resourceVersion is etcd's revision as a decimal string; ``""`` and ``"0"`` both
parse to 0 ("any"). Anything else that ``strconv.ParseUint(s, 10, 64)`` rejects is
an ``InvalidResourceVersion`` whose message is what the REST layer sends with 400:
``invalid resource version: resourceVersion: Invalid value: "x": strconv.ParseUint:
parsing "x": invalid syntax``.
"""

from __future__ import annotations

import orjson

from storage.errors import InvalidResourceVersion

_MAX_UINT64 = 2**64 - 1


def parse_resource_version(resource_version: str) -> int:
    """The revision ``resource_version`` names (0 for "" and "0"); InvalidResourceVersion."""
    if resource_version in ("", "0"):
        return 0
    if not resource_version.isascii() or not resource_version.isdigit():
        raise _invalid(resource_version, "invalid syntax")
    value = int(resource_version)
    if value > _MAX_UINT64:
        raise _invalid(resource_version, "value out of range")
    return value


def _invalid(resource_version: str, reason: str) -> InvalidResourceVersion:
    quoted = orjson.dumps(resource_version).decode()
    detail = f"strconv.ParseUint: parsing {quoted}: {reason}"
    return InvalidResourceVersion(
        f"invalid resource version: resourceVersion: Invalid value: {quoted}: {detail}"
    )
