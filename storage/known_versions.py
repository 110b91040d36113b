"""Object versions a watch cache already holds, for the reads that go to etcd anyway
(an unset-resourceVersion GET or LIST): serialize once across both paths.

A value read from etcd at ``mod_revision`` R for key K is, byte for byte, the version
the watch cache of K's resource holds when that version's resourceVersion is R (a key's
value at one revision never changes). So ``codec.decode`` asks here first: on a hit it
returns a new StoredObject sharing that version's final bytes and its kept encodings
(protobuf bytes, Table row, gzip segments), and skips decoding the value (a protobuf
value costs ~100 µs to decode in Python). Its parsed dict is never shared: ``obj`` on
the copy decodes for the caller alone, so nothing pins a dict in the cache.

A filtered read (a label or field selector) asks ``held`` instead: the cache computed
each version's selector attributes when it took the version in, so matching needs no
decode at all (parsing a pod's JSON to read its labels was ~15 µs an item, and the
dicts it made fed the collector: an unset-RV LIST with a selector over 10,000 pods held
the loop 10-60 ms a page).

A cacher registers its resource's key prefix when it starts and removes it when it
closes. While a prefix is registered, decoded protobuf values under it are not kept in
``media_types``' decoded-values cache either: the watch cache holds those versions
already, and memory should not depend on which path filled it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from storage.interfaces import SelectionPredicate, StoredObject

__all__ = ["Held", "Lookup", "find", "held", "holds_prefix", "register", "share", "unregister"]


class Held(Protocol):
    """A version as a watch cache holds it: its bytes and the selector attributes the
    cache computed when it took the version in (``cacher.objects.CachedObject``)."""

    @property
    def stored(self) -> StoredObject: ...

    def matches(self, pred: SelectionPredicate) -> bool: ...


Lookup = Callable[[str, int], Held | None]
"""(key, resourceVersion) -> the version the cache holds, or None."""

_sources: dict[str, Lookup] = {}  # resource key prefix ("/registry/pods/") -> lookup


def register(prefix: str, lookup: Lookup) -> None:
    _sources[prefix] = lookup


def unregister(prefix: str, lookup: Lookup) -> None:
    # ==, not is: a bound method (``cache.version_at``) is a new object at each access
    if _sources.get(prefix) == lookup:
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


def held(key: str, resource_version: int) -> Held | None:
    """The cache's own entry for ``key`` at ``resource_version``, or None: read its
    ``matches``, never change it; ``share`` its ``stored`` for a result."""
    lookup = _source(key)
    return None if lookup is None else lookup(key, resource_version)


def find(key: str, resource_version: int) -> StoredObject | None:
    """A copy of the cached version of ``key`` at ``resource_version`` (sharing its
    bytes and kept encodings, not its dict), or None."""
    found = held(key, resource_version)
    return None if found is None else share(found.stored)


def share(cached: StoredObject) -> StoredObject:
    """A new StoredObject for a held version: its bytes and kept encodings, not its dict."""
    copy = StoredObject(cached.key, cached.data, cached.resource_version)
    copy.share_encodings(cached)  # what either side derives, both keep
    return copy
