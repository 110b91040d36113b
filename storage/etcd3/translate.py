"""The one place where etcd client errors become storage errors.

Every etcd call of the store goes through ``call``: it bounds the call by the
store's request timeout (or the request's deadline when later, ``etcdclient.deadline``),
records etcd_request_duration_seconds under the operation the caller names
(upstream's ``metrics.RecordEtcdRequest`` verbs: get, list, create, update, delete,
listWithCount, getCurrentResourceVersion), and translates
``etcdclient.errors`` by type (never by message): Unavailable → Unavailable,
DeadlineExceeded or our own deadline → Unavailable(timeout=True), Compacted → Expired,
InvalidArgument / ResourceExhausted (etcd refused the request) → RequestRejected,
anything else → InternalStorageError.
Callers that give a compaction a more specific meaning (a continue token, an Exact
list) catch ``etcdclient.errors.Compacted`` themselves via ``call(..., raw=...)``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

from etcdclient import errors as etcd_errors
from etcdclient.deadline import call_timeout
from storage import errors, metrics

T = TypeVar("T")

LIST_TOO_OLD = "The resourceVersion for the provided list is too old."
WATCH_TOO_OLD = "The resourceVersion for the provided watch is too old."
CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue token "
    "in this response to retrieve the remainder of the results. Continuing with the "
    "provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may "
    "show up in the list."
)


def translate(err: etcd_errors.EtcdError, key: str = "") -> errors.StorageError:
    """The storage error for an etcd client error."""
    if isinstance(err, etcd_errors.DeadlineExceeded):
        return errors.Unavailable(f"etcd request timed out: {err}", timeout=True)
    if isinstance(err, etcd_errors.Unavailable):
        return errors.Unavailable(f"etcd unavailable: {err}")
    if isinstance(err, etcd_errors.Compacted):
        return errors.Expired(LIST_TOO_OLD)
    if isinstance(err, etcd_errors.InvalidArgument | etcd_errors.ResourceExhausted):
        return errors.RequestRejected(_etcd_text(err), key)
    return errors.InternalStorageError(f"etcd error: {type(err).__name__}: {err}", key)


def _etcd_text(err: etcd_errors.EtcdError) -> str:
    """etcd's own words: the client's message prefixes the endpoint and the gRPC code
    name, which kube-apiserver's text has not."""
    text = str(err)
    for code in ("INVALID_ARGUMENT: ", "RESOURCE_EXHAUSTED: "):
        if code in text:
            return text.split(code, 1)[1]
    return text


async def call(
    awaitable: Awaitable[T],
    request_timeout: float,
    key: str = "",
    *,
    operation: str,
    raw: tuple[type[etcd_errors.EtcdError], ...] = (),
) -> T:
    """Await one etcd call within ``request_timeout`` seconds, translating its errors;
    its duration is recorded under ``operation``.

    Errors of the types in ``raw`` are re-raised untranslated for the caller to
    interpret."""
    started = time.perf_counter()
    timeout = call_timeout(request_timeout)  # the request's deadline, when later
    try:
        async with asyncio.timeout(timeout):
            return await awaitable
    except TimeoutError:
        raise errors.Unavailable(
            f"etcd request did not complete within {timeout:g}s", timeout=True
        ) from None
    except etcd_errors.EtcdError as err:
        if raw and isinstance(err, raw):
            raise
        raise translate(err, key) from err
    finally:
        metrics.observe(operation, time.perf_counter() - started)
