"""The caller's deadline: how long a call may take when the caller has one of its own.

kube-apiserver passes each request's context down to the etcd client, so a read on a
live etcd may take as long as the request's deadline allows (60 s by default), not a
fixed per-call bound. The server sets ``REQUEST_DEADLINE`` (an absolute
``loop.time()``) for the task that serves a request; each call of this client and of
the store then runs until that deadline when it is later than the client's own
``request_timeout``. Waiting for a *reachable* endpoint stays bounded by
``request_timeout``: an etcd that is down answers a request with an error after that
long, not after the request's whole deadline. Background work (the watch cache's
reflector, the compactor) sets none and keeps ``request_timeout``.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

__all__ = ["REQUEST_DEADLINE", "call_timeout"]

REQUEST_DEADLINE: ContextVar[float | None] = ContextVar("etcd_request_deadline", default=None)


def call_timeout(request_timeout: float) -> float:
    """Seconds a call made now may take: ``request_timeout``, or the time left until
    the caller's deadline when that is longer."""
    deadline = REQUEST_DEADLINE.get()
    if deadline is None:
        return request_timeout
    return max(request_timeout, deadline - asyncio.get_running_loop().time())
