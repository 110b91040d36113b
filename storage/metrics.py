"""kube-apiserver's etcd request metric, recorded around every etcd call of the etcd3
store (``storage.etcd3.translate.call``).

``etcd_request_duration_seconds{operation,group,resource}``: ``operation`` is named by
each call site with upstream's verbs (get, list, create, update, delete, listWithCount,
getCurrentResourceVersion: ``RecordEtcdRequest`` in ``k8s.io/apiserver/pkg/storage/etcd3``);
group/resource come from the store that made the call, carried in a context variable so
that the lister and the watcher tasks a store starts inherit them without plumbing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from prometheus_client import Histogram

# kube-apiserver's buckets for etcd_request_duration_seconds
_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0,
    4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
)  # fmt: skip

ETCD_REQUEST_DURATION = Histogram(
    "etcd_request_duration_seconds",
    "Etcd request latency in seconds for each operation and object type.",
    ["operation", "group", "resource"],
    buckets=_BUCKETS,
)

# (group, resource) of the store whose call is running; ("", "") = not recorded
_object_type: ContextVar[tuple[str, str]] = ContextVar("etcd_object_type", default=("", ""))


@contextmanager
def object_type(group: str, resource: str) -> Iterator[None]:
    """Attribute the etcd calls made inside (and tasks started inside) to group/resource."""
    token = _object_type.set((group, resource))
    try:
        yield
    finally:
        _object_type.reset(token)


# the histogram's child per (operation, group, resource): ``labels()`` takes the
# metric's lock and joins the label values on every call, for a child that never changes
_children: dict[tuple[str, str, str], Any] = {}


def observe(operation: str, seconds: float) -> None:
    group, resource = _object_type.get()
    if resource:
        key = (operation, group, resource)
        child = _children.get(key)
        if child is None:
            child = _children[key] = ETCD_REQUEST_DURATION.labels(*key)
        child.observe(seconds)
