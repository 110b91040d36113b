"""Builders shared by the cacher unit tests: pods as the cache would receive them."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import orjson

from cacher.cache_watcher import CacheWatcher
from cacher.clock import FakeClock
from cacher.history import History
from cacher.watch_cache import WatchCache
from storage.fields import attrs_func
from storage.interfaces import SelectionPredicate, StoredObject, WatchEvent
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


def new_watcher(
    clock: FakeClock,
    *,
    key: str = PREFIX,
    selection: SelectionPredicate | None = None,
    start_rv: int = 1,
    initial: Iterable[WatchEvent] = (),
    buffer_size: int = 100,
    time_budget: float = 0.25,
    allow_bookmarks: bool = False,
    deadline: float | None = None,
    on_close: Callable[[CacheWatcher], None] | None = None,
) -> CacheWatcher:
    """A recursive watcher of ``key`` (every pod unless ``selection``) from ``start_rv``."""
    return CacheWatcher(
        key=key,
        recursive=True,
        predicate=selection or predicate(),
        start_rv=start_rv,
        initial=iter(initial),
        clock=clock,
        buffer_size=buffer_size,
        time_budget=time_budget,
        allow_bookmarks=allow_bookmarks,
        deadline=deadline,
        on_close=on_close,
    )
