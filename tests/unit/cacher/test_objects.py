"""What the cache keeps per version: the attributes a selector reads come back as they
were computed, however compactly they are kept (issue 25 item 4)."""

from __future__ import annotations

from cacher import objects
from cacher.objects import AttrsCache
from storage.fields import attrs_func
from tests.unit.cacher.helpers import POD_ATTRS, pod, predicate


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
    assert a._layout is c._layout


def test_an_attribute_unique_per_object_leaves_the_intern_table() -> None:
    cache = AttrsCache(POD_ATTRS)
    n = objects._INTERN_SAMPLE
    for i in range(n):
        cache.cached(pod(f"p{i}", i + 1, labels={"uid": f"u-{i}", "app": "web"}))
    assert "uid" in cache._unique and "app" not in cache._unique
    later = cache.cached(pod("late", n + 1, labels={"uid": "u-late", "app": "web"}))
    assert later.labels == {"uid": "u-late", "app": "web"}
    assert "u-late" not in cache._intern


def test_a_field_that_is_not_the_name_keeps_its_own_value() -> None:
    # a custom resource's selectable field may equal the name, or not: both read back
    attrs = attrs_func("configmaps")
    stored = pod("same", 1, labels={})
    obj = AttrsCache(attrs).cached(stored)
    assert obj.fields["metadata.name"] == "same"
    assert obj.fields["metadata.namespace"] == "default"
