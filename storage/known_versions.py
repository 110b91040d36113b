"""Object versions a watch cache already holds, for the reads that go to etcd anyway
(an unset-resourceVersion GET or LIST): serialize once across both paths.

A value read from etcd at ``mod_revision`` R for key K is, byte for byte, the version
the watch cache of K's resource holds when that version's resourceVersion is R (a key's
value at one revision never changes). So ``codec.decode`` asks here first: on a hit it
returns a new StoredObject sharing that version's final bytes and its kept encodings
(protobuf bytes, Table row, gzip segments), and skips decoding the value (a protobuf
value costs ~100 µs to decode in Python). Its parsed dict is never shared: ``obj`` on
the copy decodes for the caller alone, so nothing pins a dict in the cache.

A cacher registers its resource's key prefix when it starts and removes it when it
closes. While a prefix is registered, decoded protobuf values under it are not kept in
``media_types``' decoded-values cache either: the watch cache holds those versions
already, and memory should not depend on which path filled it.
"""

from __future__ import annotations

from collections.abc import Callable

from storage.interfaces import StoredObject

__all__ = ["Lookup", "find", "holds_prefix", "register", "unregister"]

Lookup = Callable[[str, int], StoredObject | None]
"""(key, resourceVersion) -> the version the cache holds, or None."""

_sources: dict[str, Lookup] = {}  # resource key prefix ("/registry/pods/") -> lookup


def register(prefix: str, lookup: Lookup) -> None:
    _sources[prefix] = lookup


def unregister(prefix: str, lookup: Lookup) -> None:
    if _sources.get(prefix) is lookup:
        del _sources[prefix]


def _source(key: str) -> Lookup | None:
    """The lookup of ``key``'s resource: its prefix is the key up to the last ``/``
    (cluster-scoped) or the one before (namespaced)."""
    if not _sources:
        return None
    cut = key.rfind("/") + 1
    found = _sources.get(key[:cut])
    if found is None and cut > 1:
        found = _sources.get(key[: key.rfind("/", 0, cut - 1) + 1])
    return found


def holds_prefix(key: str) -> bool:
    """Whether a watch cache holds the versions of ``key``'s resource."""
    return _source(key) is not None


def find(key: str, resource_version: int) -> StoredObject | None:
    """A copy of the cached version of ``key`` at ``resource_version`` (sharing its
    bytes and kept encodings, not its dict), or None."""
    lookup = _source(key)
    if lookup is None:
        return None
    cached = lookup(key, resource_version)
    if cached is None:
        return None
    copy = StoredObject(key, cached.data, resource_version)
    copy.share_encodings(cached)  # what either side derives, both keep
    return copy
