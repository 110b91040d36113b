"""gRPC status -> ``etcdclient.errors``: the one place where etcd's errors are translated.

Translation is by status code only, never by message text. etcd reports both "revision
compacted" and "future revision" as OUT_OF_RANGE; the code alone cannot tell them apart,
so it becomes :class:`RevisionOutOfRange`, which the client resolves into
:class:`~etcdclient.errors.Compacted` or :class:`~etcdclient.errors.FutureRevision` by
asking etcd (current revision, and the compact revision a watch reports). The message of
every error keeps the endpoint and gRPC's details, for people, not for code.
"""

from __future__ import annotations

import grpc

from etcdclient.errors import (
    DeadlineExceeded,
    EtcdError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unavailable,
)

__all__ = ["RevisionOutOfRange", "translate"]


class RevisionOutOfRange(EtcdError):
    """OUT_OF_RANGE from etcd: the revision asked for is compacted or in the future.

    Internal: the client turns it into Compacted or FutureRevision before it escapes."""


_BY_CODE: dict[grpc.StatusCode, type[EtcdError]] = {
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    # CANCELLED reaches us when the server or the transport aborts the call (our own
    # cancellations surface as asyncio.CancelledError instead): the request may be retried.
    grpc.StatusCode.CANCELLED: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.UNAUTHENTICATED: PermissionDenied,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.OUT_OF_RANGE: RevisionOutOfRange,
}


def translate(err: grpc.aio.AioRpcError, endpoint: str = "") -> EtcdError:
    """The etcdclient error for a failed gRPC call (by ``err.code()`` alone)."""
    code = err.code()
    cls = _BY_CODE.get(code, EtcdError)
    where = f"{endpoint}: " if endpoint else ""
    return cls(f"{where}{code.name}: {err.details()}")
