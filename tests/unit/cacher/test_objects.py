"""What the cache keeps per version: the attributes a selector reads come back as they
were computed, however compactly they are kept (issue 25 item 4)."""

from __future__ import annotations

import orjson

from cacher import objects
from cacher.objects import AttrsCache
from storage.fields import attrs_func
from storage.interfaces import StoredObject
from tests.unit.cacher.helpers import POD_ATTRS, PREFIX, pod, predicate


def test_fields_and_labels_read_back_as_computed() -> None:
    stored = pod("web-1", 5, ns="team", node="node-7", labels={"app": "web"})
    obj = AttrsCache(POD_ATTRS).cached(stored)
    labels, fields = POD_ATTRS(stored.obj)
    assert dict(obj.fields) == dict(fields)
    assert obj.fields["metadata.name"] == "web-1"  # kept as the key's last segment
    assert obj.field("spec.nodeName") == "node-7"
    assert obj.field("no.such.field") is None
    assert dict(obj.labels) == labels
    assert obj.matches(predicate(field="metadata.name=web-1,spec.nodeName=node-7"))
    assert not obj.matches(predicate(field="metadata.name=web-2"))
    assert obj.matches(predicate(label="app=web"))


def test_equal_labels_are_one_map_and_repeated_values_one_string() -> None:
    cache = AttrsCache(POD_ATTRS)
    a = cache.cached(pod("a", 1, node="node-1", labels={"app": "web", "tier": "front"}))
    b = cache.cached(pod("b", 2, node="node-1", labels={"app": "web", "tier": "front"}))
    c = cache.cached(pod("c", 3, node="node-1", labels={"app": "db"}))
    assert a.labels is b.labels and dict(c.labels) == {"app": "db"}
    assert a.field("spec.nodeName") is b.field("spec.nodeName")
    assert a.layout is c.layout
    # every field value is equal but the name (read from the key): one tuple, labels or not
    assert a._shared is b._shared is c._shared and a._own is None


def test_an_attribute_unique_per_object_leaves_the_intern_table() -> None:
    cache = AttrsCache(POD_ATTRS)
    n = objects._INTERN_SAMPLE
    for i in range(n):
        cache.cached(pod(f"p{i}", i + 1, labels={"uid": f"u-{i}", "app": "web"}))
    assert "uid" in cache._unique and "app" not in cache._unique
    later = cache.cached(pod("late", n + 1, labels={"uid": "u-late", "app": "web"}))
    assert later.labels == {"uid": "u-late", "app": "web"}
    assert "u-late" not in cache._intern


def test_a_field_unique_per_object_is_kept_apart_and_the_rest_shared() -> None:
    cache = AttrsCache(POD_ATTRS)
    for i in range(objects._INTERN_SAMPLE):
        cache.cached(pod_with_ip(f"p{i}", i + 1, f"10.0.{i // 250}.{i % 250}"))
    assert "status.podIP" in cache._unique and "spec.nodeName" not in cache._unique
    a = cache.cached(pod_with_ip("a", 10_001, "10.9.0.1"))
    b = cache.cached(pod_with_ip("b", 10_002, "10.9.0.2"))
    assert a._shared is b._shared  # the same namespace, node, phase...: one tuple
    assert a._own == "10.9.0.1" and "10.9.0.1" not in cache._intern
    assert dict(b.fields) == dict(POD_ATTRS(b.decoded())[1])
    assert b.fields["status.podIP"] == "10.9.0.2" and b.fields["metadata.name"] == "b"
    assert b.matches(predicate(field="status.podIP=10.9.0.2,spec.nodeName=node-1"))
    assert not b.matches(predicate(field="status.podIP=10.9.0.1"))
    # a version made before the attribute was known unique reads back the same
    first = cache.cached(pod_with_ip("p0", 1, "10.0.0.0"))
    assert first.field("status.podIP") == "10.0.0.0"


def test_what_the_cache_keeps_per_version_has_no_instance_dict() -> None:
    # __slots__ only: an instance __dict__ is ~100 bytes more per object version
    obj = AttrsCache(POD_ATTRS).cached(pod_with_ip("a", 1, "10.0.0.1"))
    event = objects.WatchCacheEvent("ADDED", obj, None, 1, 0.0)
    for value in (obj, obj.stored, obj.layout, event):
        assert not hasattr(value, "__dict__"), type(value).__name__


def pod_with_ip(name: str, rv: int, ip: str) -> StoredObject:
    body = orjson.loads(pod(name, rv, node="node-1").data)
    body["status"] = {"phase": "Running", "podIP": ip}
    return StoredObject(f"{PREFIX}default/{name}", orjson.dumps(body), rv)


def test_a_field_that_is_not_the_name_keeps_its_own_value() -> None:
    # a custom resource's selectable field may equal the name, or not: both read back
    attrs = attrs_func("configmaps")
    stored = pod("same", 1, labels={})
    obj = AttrsCache(attrs).cached(stored)
    assert obj.fields["metadata.name"] == "same"
    assert obj.fields["metadata.namespace"] == "default"
