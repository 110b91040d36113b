"""The etcd3 store as a watch cache's lister-watcher (kube-apiserver's cacher reads etcd
only through ``storage.Interface``: GetList and Watch with progress notifications).

``list_pages``: everything under a prefix at one revision, read from etcd in pages of
``FIRST_PAGE`` keys and then of about ``PAGE_BYTES`` of values (at the average size seen,
never more than ``page_size`` keys: receiving and converting one etcd response is one
step on the loop), decoded in slices of ``DECODE_SLICE`` values with a yield to the
event loop between slices, so a re-list of 10,000 pods never holds the loop for long.
A value that cannot be decoded is reported in the page's ``corrupt`` and skipped, never
fails the list: one bad key must not keep a cache from starting.

``ChangeStream``: one etcd watch from a revision, with progress notifications. Each PUT
is decoded here (a corrupt value becomes a ``Change`` carrying ``corrupt``); a compacted
start revision is ``Expired``; other etcd errors are translated as every store call's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence

from etcdclient import EtcdClient, prefix_end
from etcdclient import errors as etcd_errors
from etcdclient.types import Event, EventType, KeyValue
from etcdclient.watch import Watch
from storage import codec, metrics
from storage.errors import CorruptObject, Expired
from storage.etcd3.translate import WATCH_TOO_OLD, call, translate
from storage.interfaces import Change, ChangeBatch, ListPage, StoredObject

# Values decoded (and then added to the cache) between two yields to the event loop:
# ~5-10 ms of pods.
DECODE_SLICE = 250
# Keys in the first Range (sizes unknown), then about PAGE_BYTES of values per Range.
FIRST_PAGE = 500
PAGE_BYTES = 512 * 1024


async def list_pages(
    client: EtcdClient,
    request_timeout: float,
    prefix: str,
    page_size: int,
    object_type: tuple[str, str] | None = None,
    *,
    recursive: bool = True,
    keep_obj: bool = True,
) -> AsyncGenerator[ListPage, None]:
    """See the module docstring. Errors: ``storage.errors`` (Expired if etcd compacts the
    revision between two pages: the caller lists again). ``object_type``: the (group,
    resource) its etcd calls are attributed to in etcd_request_duration_seconds (None:
    the caller's context's).
    ``recursive`` False reads the one key ``prefix``; ``keep_obj`` False leaves the
    items' dicts to be decoded lazily (nobody needs them now)."""
    start = prefix.encode()
    end = prefix_end(start) if recursive else None
    revision, limit, keys, size = 0, min(FIRST_PAGE, page_size), 0, 0
    while True:
        labelled = metrics.object_type(*object_type) if object_type else contextlib.nullcontext()
        with labelled:  # never across a yield
            resp = await call(
                client.range(start, end, limit=limit, revision=revision),
                request_timeout,
                prefix,
                operation="list",
            )
        revision = revision or resp.revision
        kvs = resp.kvs
        keys += len(kvs)
        size += sum(len(kv.value) for kv in kvs)
        limit = max(1, min(page_size, PAGE_BYTES * keys // max(size, 1)))
        if not kvs:
            yield ListPage((), (), revision)  # the revision of an empty prefix
        for first in range(0, len(kvs), DECODE_SLICE):
            yield decode_slice(kvs[first : first + DECODE_SLICE], revision, keep_obj=keep_obj)
            await asyncio.sleep(0)  # let requests run between slices
        if not resp.more or not kvs:
            return
        start = kvs[-1].key + b"\x00"


def decode_slice(
    kvs: tuple[KeyValue, ...] | list[KeyValue], revision: int, *, keep_obj: bool = True
) -> ListPage:
    items: list[StoredObject] = []
    corrupt: list[CorruptObject] = []
    for kv in kvs:
        try:
            key = kv.key.decode()
            items.append(codec.decode(key, kv.value, kv.mod_revision, keep_obj=keep_obj))
        except CorruptObject as err:
            corrupt.append(err)
    return ListPage(items, corrupt, revision)


class ChangeStream:
    """``storage.interfaces.ChangeStream`` over one etcd watch (progress notifications
    on, no previous values: the cache keeps them)."""

    def __init__(self, client: EtcdClient, prefix: str, start_revision: int) -> None:
        key = prefix.encode()
        self._watch: Watch = client.watch(
            key, prefix_end(key), start_revision=start_revision, progress_notify=True,
            stream=prefix,  # a stream of its own: see EtcdClient.request_progress
        )

    def __aiter__(self) -> AsyncIterator[ChangeBatch]:
        return self._batches()

    async def _batches(self) -> AsyncIterator[ChangeBatch]:
        try:
            async for batch in self._watch:
                if batch.events:
                    yield ChangeBatch(await _changes(batch.events))
                elif batch.progress_notify:
                    yield ChangeBatch(progress=batch.revision)
        except etcd_errors.Compacted:
            raise Expired(WATCH_TOO_OLD) from None
        except etcd_errors.EtcdError as err:
            raise translate(err) from err

    async def stop(self) -> None:
        await self._watch.cancel()


# how long a watch response's values are decoded before the event loop gets a turn (a
# response of 150 pod updates decoded in one step took 23-36 ms of CPU in the benchmark)
DECODE_STEP_SECONDS = 0.005


async def _changes(events: Sequence[Event]) -> tuple[Change, ...]:
    """The events of one watch response as changes, decoded in steps of at most
    ``DECODE_STEP_SECONDS`` (the batch stays one batch: the cache applies it whole)."""
    changes = []
    step = time.perf_counter() + DECODE_STEP_SECONDS
    for ev in events:
        changes.append(_change(ev))
        if time.perf_counter() > step:
            await asyncio.sleep(0)
            step = time.perf_counter() + DECODE_STEP_SECONDS
    return tuple(changes)


def _change(ev: Event) -> Change:
    key = ev.kv.key.decode()
    rev = ev.kv.mod_revision
    if ev.type is EventType.DELETE:
        return Change(key, None, rev)
    try:
        return Change(key, codec.decode(key, ev.kv.value, rev, keep_obj=True), rev)
    except CorruptObject as err:
        return Change(key, None, rev, corrupt=err)
