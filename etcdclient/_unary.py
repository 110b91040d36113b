"""A unary RPC without grpc.aio's per-call Task.

grpc.aio answers ``stub.Range(request, timeout=...)`` with a ``UnaryUnaryCall`` that
starts an asyncio Task to run the call and hands the caller an awaitable over that
Task: per RPC a Task, its scheduling, one more pass of the event loop and a
``Metadata`` wrapper — about a sixth of the main thread's CPU for a GET's one-key
Range (measured on etcd: 120 against 144 µs back to back, 307 against 354 µs with the
loop idle between calls, as a server's is between requests). ``unary(callable)`` runs
the same call of the channel's Cython layer in the caller's own task, as the Task
would: same deadline, no metadata, same errors (``AioRpcError`` built by grpc's own
helper), cancellation forwarded to the call, calls in flight cancelled when their
endpoint's channel closes.

That layer is grpc's private API, so ``unary`` checks it is there and otherwise returns
the public multicallable itself (a grpc release that changes it costs the saving, not
the call; tests/integration/test_etcdclient_unary.py says which one runs). Streams
(watches, lease keep-alives) keep grpc.aio's public calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

try:  # grpc's private layer; the public path is used without it
    from grpc.aio._call import _create_rpc_error
except ImportError:  # pragma: no cover - depends on the installed grpc
    _create_rpc_error = None

__all__ = ["UnaryCall", "unary"]

UnaryCall = Callable[[Any, float], Awaitable[Any]]

# what grpc.aio tells the server when the caller cancels
_LOCAL_CANCELLATION = "Locally cancelled by application!"
_PRIVATE = ("_channel", "_method", "_registered_call_handle", "_request_serializer",
            "_response_deserializer", "_interceptors")  # fmt: skip


class DirectUnary:
    """One unary method of one channel, called without grpc.aio's Task."""

    __slots__ = ("_channel", "_deserialize", "_handle", "_method", "_pending", "_serialize")

    def __init__(self, multicallable: Any) -> None:
        self._channel = multicallable._channel
        self._method = multicallable._method
        self._handle = multicallable._registered_call_handle
        self._serialize = multicallable._request_serializer
        self._deserialize = multicallable._response_deserializer
        # calls in flight: grpc.aio's channel cancels the calls it made when it closes,
        # and knows nothing of these (cancel_all)
        self._pending: set[Any] = set()

    def cancel_all(self) -> None:
        """Cancel every call in flight, as closing a grpc.aio channel cancels its own
        (their callers get CancelledError, as grpc.aio's would)."""
        for call in list(self._pending):
            call.cancel(_LOCAL_CANCELLATION)

    async def __call__(self, request: Any, seconds: float) -> Any:
        """The call with gRPC's deadline ``seconds`` from now (as grpc.aio's
        ``timeout=``: the server sees it, unlike an asyncio timeout)."""
        call = self._channel.call(self._method, time.time() + seconds, None, None, self._handle)
        self._pending.add(call)
        try:
            raw = await call.unary_unary(self._serialize(request), (), None)
        except asyncio.CancelledError:
            call.cancel(_LOCAL_CANCELLATION)
            raise
        finally:
            self._pending.discard(call)
        if call.is_ok():
            return self._deserialize(raw)
        if call.is_locally_cancelled():
            raise asyncio.CancelledError
        raise _create_rpc_error(call._initial_metadata, call._status)


def unary(multicallable: Any) -> UnaryCall:
    """``multicallable`` (a stub's unary method) as ``await call(request, seconds)``:
    a ``DirectUnary`` when grpc's private layer is as expected, else the public call."""
    if (
        _create_rpc_error is not None
        and isinstance(multicallable, grpc.aio.UnaryUnaryMultiCallable)
        and all(hasattr(multicallable, name) for name in _PRIVATE)
        and not multicallable._interceptors
    ):
        return DirectUnary(multicallable)

    def public(request: Any, seconds: float) -> Awaitable[Any]:
        result: Awaitable[Any] = multicallable(request, timeout=seconds)
        return result

    return public
