"""Async etcd v3 client on grpc.aio, from our own .proto subset.

Public surface: :class:`EtcdClient`, :class:`Watch`, :class:`LeaseKeepAlive`,
:func:`prefix_end`, the result types of ``etcdclient.types`` and the errors of
``etcdclient.errors`` (whose docstring draws the error tree).
"""

from __future__ import annotations

from etcdclient.client import EtcdClient, prefix_end
from etcdclient.errors import (
    ClientClosed,
    Compacted,
    ConfigError,
    DeadlineExceeded,
    EtcdError,
    FutureRevision,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unavailable,
    WatchCanceled,
)
from etcdclient.lease import LeaseKeepAlive
from etcdclient.types import (
    Event,
    EventType,
    GetResult,
    KeyValue,
    Lease,
    Member,
    RangeOptions,
    RangeResult,
    Status,
    TxnResult,
    WatchBatch,
)
from etcdclient.watch import Watch

__all__ = [
    "ClientClosed",
    "Compacted",
    "ConfigError",
    "DeadlineExceeded",
    "EtcdClient",
    "EtcdError",
    "Event",
    "EventType",
    "FutureRevision",
    "GetResult",
    "InvalidArgument",
    "KeyValue",
    "Lease",
    "LeaseKeepAlive",
    "Member",
    "NotFound",
    "PermissionDenied",
    "RangeOptions",
    "RangeResult",
    "ResourceExhausted",
    "Status",
    "TxnResult",
    "Unavailable",
    "Watch",
    "WatchBatch",
    "WatchCanceled",
    "prefix_end",
]
