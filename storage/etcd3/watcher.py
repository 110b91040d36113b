"""A watch served straight from etcd (kube-apiserver's etcd3 ``watcher.go``), used when
the watch cache is off.

- RV unset or "0": synthetic ``ADDED`` for every current object (a list at the current
  revision), then the changes after that revision.
- RV=N: the changes after N.
- ``send_initial_events`` (WatchList) overrides both: True sends the current state (a
  list at the newest revision, whatever N is) as ``ADDED`` and then, with
  ``allow_watch_bookmarks``, one ``BOOKMARK`` at the list's revision annotated
  ``k8s.io/initial-events-end: "true"`` (upstream's isInitialEventsEndBookmarkRequired);
  False sends no initial state, starting from N, or from the current revision for
  RV unset/"0" (upstream's getStartWatchResourceVersion; the store reads that revision
  before ``watch`` returns, so nothing written after the call is missed).
- If etcd compacted past N: one ``ERROR`` event (410 Expired,
  ``The resourceVersion for the provided watch is too old.``), then the stream ends.
- A created key is ``ADDED``, a changed one ``MODIFIED``, a deleted one ``DELETED``
  carrying the previous value with the deletion revision as its resourceVersion.
  With a selector, an object entering it is ``ADDED``, one leaving it ``DELETED``
  (its old state, with the new revision), changes outside it are dropped.

One producer task per watcher reads the etcd watch and feeds a bounded queue; when the
consumer is slow the producer waits (and with it only this etcd watch). ``stop()``
cancels the producer and ends iteration; it is idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

import orjson

from etcdclient import EtcdClient, prefix_end
from etcdclient import errors as etcd_errors
from etcdclient.types import Event, EventType, KeyValue
from storage import codec
from storage.errors import Expired, StorageError
from storage.etcd3.lister_watcher import list_pages
from storage.etcd3.translate import WATCH_TOO_OLD
from storage.interfaces import ListOptions, SelectionPredicate, StoredObject, WatchEvent
from storage.watch_errors import expired_event, internal_error_event

log = logging.getLogger(__name__)

QUEUE_SIZE = 100
_INITIAL_BATCH = 10_000
_END = WatchEvent("ERROR", b"", -1)  # sentinel: the stream has ended
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class Etcd3Watcher:
    """One client watch over one etcd watch. Implements storage.interfaces.Watcher."""

    def __init__(
        self, client: EtcdClient, timeout: float, key: str, start_rv: int, opts: ListOptions
    ) -> None:
        self._client = client
        self._timeout = timeout
        self._recursive = opts.recursive
        self._key = key if not opts.recursive or key.endswith("/") else key + "/"
        self._start_rv = start_rv
        self._pred: SelectionPredicate = opts.predicate
        sie = opts.send_initial_events
        self._initial = bool(sie) if sie is not None else start_rv == 0
        self._end_bookmark = bool(sie) and opts.allow_watch_bookmarks
        self._bookmark_kind = opts.bookmark_kind
        self._queue: asyncio.Queue[WatchEvent] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._task: asyncio.Task[None] | None = None
        self._ended = False  # set by the producer when it cannot enqueue _END
        self._stopped = False
        self.on_stop: Callable[[Etcd3Watcher], None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"etcd3-watch {self._key}")

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[WatchEvent]:
        while not self._stopped:
            if self._ended and self._queue.empty():
                return
            event = await self._queue.get()
            if event is _END or self._stopped:
                return
            yield event

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._finish()

    # ----------------------------------------------------------------------- producer

    async def _run(self) -> None:
        try:
            revision = self._start_rv
            if self._initial:
                revision = await self._send_initial_state()
            await self._follow(revision)
        except (etcd_errors.Compacted, Expired):
            await self._queue.put(expired_event(WATCH_TOO_OLD))
        except StorageError as err:
            await self._queue.put(internal_error_event(err.message))
        except etcd_errors.EtcdError as err:
            await self._queue.put(internal_error_event(str(err)))
        finally:
            self._finish()

    def _finish(self) -> None:
        """End the stream for the consumer (idempotent; never blocks)."""
        if self._stopped:
            # Unblock a consumer waiting in get(); queued events are dropped.
            while not self._queue.empty():
                self._queue.get_nowait()
        try:
            self._queue.put_nowait(_END)
        except asyncio.QueueFull:
            self._ended = True
        if self.on_stop is not None:
            self.on_stop(self)
            self.on_stop = None

    async def _send_initial_state(self) -> int:
        """ADDED for each current object, read in pages at one revision (the cache's
        lister, byte-bounded pages decoded in slices); that revision. A value that cannot
        be decoded ends the watch with an ERROR event, as upstream's watcher."""
        revision = 0
        first: bytes | None = None
        pages = list_pages(
            self._client, self._timeout, self._key, _INITIAL_BATCH,
            recursive=self._recursive, keep_obj=not self._pred.empty,
        )  # fmt: skip
        async with contextlib.aclosing(pages):
            async for page in pages:
                if page.corrupt:
                    raise page.corrupt[0]
                revision = page.resource_version
                for stored in page.items:
                    if self._matches(stored):
                        first = first or stored.data
                        await self._queue.put(
                            WatchEvent("ADDED", stored.data, stored.resource_version)
                        )
        if self._end_bookmark:
            await self._queue.put(self._initial_events_end(revision, first))
        return revision

    def _initial_events_end(self, revision: int, sample: bytes | None) -> WatchEvent:
        """The BOOKMARK ending a streaming list's initial state: the resource's kind with
        only the resourceVersion (the list's revision) and the end annotation (the
        list-blueprint annotation depends on the response's encoding: the HTTP layer adds
        it, ``proxy.endpoints.watchlist``)."""
        head: dict[str, object] = {}
        if self._bookmark_kind is not None:
            head = {"apiVersion": self._bookmark_kind[0], "kind": self._bookmark_kind[1]}
        elif sample is not None:
            obj = orjson.loads(sample)
            head = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
        meta = {"resourceVersion": str(revision), "annotations": {INITIAL_EVENTS_END: "true"}}
        return WatchEvent("BOOKMARK", orjson.dumps({**head, "metadata": meta}), revision)

    async def _follow(self, revision: int) -> None:
        key = self._key.encode()
        watch = self._client.watch(
            key,
            prefix_end(key) if self._recursive else None,
            start_revision=revision + 1,
            prev_kv=True,
        )
        try:
            async for batch in watch:
                for event in batch.events:
                    out = self._transform(event)
                    if out is not None:
                        await self._queue.put(out)
        finally:
            await watch.cancel()

    # ----------------------------------------------------------------------- events

    def _transform(self, event: Event) -> WatchEvent | None:
        kv = event.kv
        rev = kv.mod_revision
        if event.type is EventType.DELETE:
            if event.prev_kv is None:
                raise StorageError(
                    f"etcd event received with PrevKv=nil (key={kv.key.decode()!r}, "
                    f"modRevision={rev}, type=DELETE)"
                )
            last = self._decode(event.prev_kv, rev)
            return WatchEvent("DELETED", last.data, rev) if self._matches(last) else None
        cur = self._decode(kv, rev)
        if kv.create_revision == rev or self._pred.empty:
            if not self._matches(cur):
                return None
            return WatchEvent("ADDED" if kv.create_revision == rev else "MODIFIED", cur.data, rev)
        old = self._decode(event.prev_kv, rev) if event.prev_kv is not None else None
        old_matches = old is not None and self._matches(old)
        if self._matches(cur):
            return WatchEvent("MODIFIED" if old_matches else "ADDED", cur.data, rev)
        if old is not None and old_matches:
            return WatchEvent("DELETED", old.data, rev)
        return None

    def _decode(self, kv: KeyValue, rev: int) -> StoredObject:
        return codec.decode(kv.key.decode(), kv.value, rev, keep_obj=not self._pred.empty)

    def _matches(self, stored: StoredObject) -> bool:
        return self._pred.empty or self._pred.matches(stored.obj)
