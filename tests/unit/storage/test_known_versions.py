"""A read from etcd of a version a watch cache holds gets that version's bytes and kept
encodings (no second decode, no second copy), never its dict; other versions decode as
before, and while a cache holds a prefix its values are not kept twice."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from cacher.objects import CachedObject
from lab import seed
from storage import codec, known_versions, media_types
from storage.interfaces import StoredObject

PROTOBUF = "application/vnd.kubernetes.protobuf"
KEY = "/registry/pods/ns-a/p"


@pytest.fixture
def cached() -> Iterator[dict[str, StoredObject]]:
    held: dict[str, StoredObject] = {}

    def lookup(key: str, rv: int) -> CachedObject | None:
        found = held.get(key)
        if found is None or found.resource_version != rv:
            return None
        if not isinstance(found, CachedObject):  # as a cache keeps it (no attributes:
            found = held[key] = CachedObject(found, {})  # they matter to filtered lists only)
        return found

    known_versions.register("/registry/pods/", lookup)
    known_versions.register("/registry/nodes/", lookup)
    try:
        yield held
    finally:
        known_versions.unregister("/registry/pods/", lookup)
        known_versions.unregister("/registry/nodes/", lookup)


def _value(key: str) -> bytes:
    pod = seed.pod(1, 3, 1)
    pod["metadata"].pop("resourceVersion", None)
    return codec.codec_for(PROTOBUF).encode(pod)


@pytest.mark.parametrize("key", [KEY, "/registry/nodes/n1"])
def test_a_held_version_is_shared_not_decoded(cached: dict[str, StoredObject], key: str) -> None:
    value = _value(key)
    held = cached[key] = CachedObject(codec.decode(key, value, 7), {})  # bytes only
    got = codec.decode(key, value, 7)
    assert got is not held and got.data is held.data
    got.derived("table-row", lambda _: "row")
    assert held.derived("table-row", lambda _: "other") == "row"  # encodings shared
    parsed = codec.decode(key, value, 7, keep_obj=True)
    assert parsed.data is held.data and parsed._obj == orjson.loads(held.data)
    assert held._obj is None  # no dict pinned in the cache


def test_another_version_is_decoded(cached: dict[str, StoredObject]) -> None:
    value = _value(KEY)
    cached[KEY] = codec.decode(KEY, value, 7)
    newer = codec.decode(KEY, value, 9)
    assert newer.data is not cached[KEY].data
    assert orjson.loads(newer.data)["metadata"]["resourceVersion"] == "9"


def test_values_under_a_held_prefix_are_not_kept_twice(cached: dict[str, StoredObject]) -> None:
    value = _value(KEY)
    media_types._decoded.pop(value, None)
    codec.decode(KEY, value, 11)
    assert value not in media_types._decoded
    known_versions.unregister("/registry/pods/", known_versions._sources["/registry/pods/"])
    codec.decode(KEY, value, 11)
    assert value in media_types._decoded
