"""Builders shared by the cacher unit tests: pods as the cache would receive them."""

from __future__ import annotations

import orjson

from cacher.clock import FakeClock
from cacher.history import History
from cacher.watch_cache import WatchCache
from storage.fields import attrs_func
from storage.interfaces import SelectionPredicate, StoredObject
from storage.selectors import parse_field_selector, parse_label_selector

PREFIX = "/registry/pods/"
POD_ATTRS = attrs_func("pods")


def pod(
    name: str, rv: int, *, ns: str = "default", node: str = "", labels: dict[str, str] | None = None
) -> StoredObject:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "resourceVersion": str(rv),
            "labels": labels or {},
        },
        "spec": {"nodeName": node},
    }
    return StoredObject(f"{PREFIX}{ns}/{name}", orjson.dumps(obj), rv)


def predicate(label: str = "", field: str = "") -> SelectionPredicate:
    return SelectionPredicate(
        label=parse_label_selector(label) if label else None,
        field=parse_field_selector(field) if field else None,
        get_attrs=POD_ATTRS,
    )


def new_cache(clock: FakeClock, capacity: int | None = None) -> WatchCache:
    return WatchCache(
        attrs=POD_ATTRS, clock=clock, history=History(capacity), indexes=("spec.nodeName",)
    )


def rv_of(data: bytes) -> str:
    value: str = orjson.loads(data)["metadata"]["resourceVersion"]
    return value
