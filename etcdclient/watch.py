"""Watches: many ``Watch`` objects multiplexed on one etcd Watch stream.

One ``WatchStream`` per client owns one bidirectional gRPC stream and ONE reader task
that routes every WatchResponse by ``watch_id``. We choose the watch ids ourselves
(``WatchCreateRequest.watch_id``, etcd >= 3.4) from a counter that never repeats, so
creations need no ordering handshake and an id is never reused while etcd may still
send for it. A second, small writer task per connection drains the outbox (creations,
cancels, progress requests) into the stream, so the reader never waits on a write.

Guarantees to a consumer of :class:`Watch`:

- Batches arrive in revision order, each event exactly once, across etcd restarts,
  leader changes and member failover: when the stream breaks it is re-opened (capped
  exponential backoff, rotating endpoints) and every watch is re-created from
  ``last delivered revision + 1``. Events advance that revision to the last event's
  mod_revision; progress notifications advance it to their header revision.
- An event batch's ``revision`` is the mod_revision of its last event (etcd's header
  revision can run ahead of the events of a catching-up batch). A progress notification
  (``events == ()``, ``progress_notify`` True) has the header revision: every change of
  this watch up to it has been delivered.
- The reader never blocks on a consumer. Each watch buffers at most ``buffer_size``
  batches; when that is full the watch becomes *lagging*: it is cancelled at etcd and
  its responses are dropped, and once the consumer has drained the buffer it is
  re-created from the last delivered revision + 1 (the idea of etcd's cache/demux
  "lagging" watchers). Nothing is lost, memory stays bounded.
- If the (re)start revision has been compacted the iterator raises
  :class:`~etcdclient.errors.Compacted` (with etcd's compact revision) after the batches
  already buffered; any other cancellation by etcd raises
  :class:`~etcdclient.errors.WatchCanceled`. After ``cancel()`` the iterator stops
  (StopAsyncIteration) at once; after the client's ``close()`` it raises ClientClosed.

Stream-wide progress (``request_progress()``). etcd before 3.4.31 / 3.5.13 (issues 15220
and 17507) may answer it with a revision ahead of events still queued for a watch that
is catching up; trusting it would skip those events on the next resume. So on each new
stream the server's version is read (Status): on fixed versions the notification goes to
every created watch; on older ones only to watches known to be caught up (they have
delivered up to the revision etcd reported when creating them).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import grpc

from etcdclient import _convert
from etcdclient._endpoints import Endpoint, EndpointPool
from etcdclient._pb import kv_pb2, rpc_pb2
from etcdclient._translate import translate
from etcdclient.errors import (
    ClientClosed,
    Compacted,
    DeadlineExceeded,
    EtcdError,
    Unavailable,
    WatchCanceled,
)
from etcdclient.types import WatchBatch

__all__ = ["Watch", "WatchStream"]

log = logging.getLogger("etcdclient.watch")

BACKOFF_INITIAL = 0.05
BACKOFF_MAX = 2.0
_BROADCAST_ID = -1  # etcd's InvalidWatchID: a stream-wide progress response


def progress_is_trustworthy(version: str) -> bool:
    """True for etcd versions whose stream-wide progress waits for every watch to sync."""
    try:
        v = tuple(int(x) for x in version.split("-")[0].split(".")[:3])
    except ValueError:
        return False
    return v >= (3, 5, 13) or (3, 4, 31) <= v < (3, 5, 0)


class Watch:
    """One watch on a key or range: an async iterator of :class:`WatchBatch` and an async
    context manager (entering waits until etcd has created it; leaving cancels it).

    Attributes other than the buffer are changed only by the stream's reader task and by
    the consumer's own calls (single event loop, no locks needed).
    """

    def __init__(
        self,
        stream: WatchStream,
        key: bytes,
        range_end: bytes | None,
        *,
        start_revision: int,
        prev_kv: bool,
        progress_notify: bool,
        filters: Sequence[str],
        buffer_size: int,
    ) -> None:
        if buffer_size < 1:
            raise ValueError("buffer_size must be >= 1")
        self.key = key
        self.range_end = range_end
        self.prev_kv = prev_kv
        self.progress_notify = progress_notify
        self.filters = tuple(filters)
        _convert.filter_types(self.filters)  # reject a bad filter here, not in the writer
        self.buffer_size = buffer_size
        # The revision the next (re)creation starts from; 0 = "now", until etcd says.
        self.next_revision = start_revision
        # Server-side id on the current stream; 0 while not registered there.
        self.watch_id = 0
        self.lagging = False
        self.created_revision = 0  # header revision of the latest "created" response
        self._stream = stream
        self._buffer: deque[WatchBatch] = deque()
        self._error: EtcdError | None = None
        self._stopped = False
        self._waiter: asyncio.Future[None] | None = None
        self._created = asyncio.Event()

    # -- consumer side ----------------------------------------------------------------

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> WatchBatch:
        while True:
            if self._stopped:
                raise StopAsyncIteration
            if self._buffer:
                batch = self._buffer.popleft()
                if not self._buffer and self.lagging and self._error is None:
                    self._stream.resume(self)
                return batch
            if self._error is not None:
                raise self._error
            if self.lagging:
                self._stream.resume(self)
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def created(self) -> None:
        """Wait until etcd has acknowledged this watch's first creation (or it failed);
        DeadlineExceeded after the client's request timeout."""
        try:
            async with asyncio.timeout(self._stream.request_timeout):
                await self._created.wait()
        except TimeoutError:
            raise DeadlineExceeded("watch not created by etcd in time") from None

    async def cancel(self) -> None:
        """Stop the watch: iteration ends now, buffered batches are dropped."""
        if not self._stopped:
            self._stopped = True
            self._buffer.clear()
            self._stream.remove(self)
            self._wake()

    async def __aenter__(self) -> Watch:
        await self.created()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.cancel()

    # -- reader side (never blocks) -----------------------------------------------------

    @property
    def active(self) -> bool:
        """Still wanted: not cancelled by the consumer and not terminally failed."""
        return not self._stopped and self._error is None

    def offer(self, batch: WatchBatch) -> bool:
        """Buffer ``batch`` unless the buffer is full (then the caller makes it lag)."""
        if len(self._buffer) >= self.buffer_size:
            return False
        self._buffer.append(batch)
        self._wake()
        return True

    def fail(self, error: EtcdError, *, drop_buffer: bool = False) -> None:
        if drop_buffer:
            self._buffer.clear()
        if self._error is None:
            self._error = error
        self._created.set()
        self._wake()

    def mark_created(self, header_revision: int) -> None:
        self.created_revision = header_revision
        if self.next_revision == 0:
            # Created "now": etcd starts it at header revision + 1.
            self.next_revision = header_revision + 1
        self._created.set()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class WatchStream:
    """The client's single multiplexed Watch stream and the tasks that own it.

    ``_by_id`` maps server-side ids on the current stream to watches; only watches there
    receive responses. Every method runs on the event loop; only ``_run`` reads the stream.
    """

    def __init__(self, pool: EndpointPool, *, request_timeout: float, dial_timeout: float):
        self.request_timeout = request_timeout
        self._dial_timeout = dial_timeout
        self._pool = pool
        # Live watches in creation order (re-created in that order on a new stream).
        self._watches: dict[Watch, None] = {}
        self._by_id: dict[int, Watch] = {}
        self._ids = itertools.count(1)
        # Pending writes. Bounded by construction: at most one creation per live watch
        # plus one cancel per cancelled/lagging watch, and cleared on every reconnect.
        self._outbox: deque[tuple[str, Watch | None, int]] = deque()
        self._outbox_ready = asyncio.Event()
        self._progress_pending = False
        # Ids whose creation was sent and not yet acknowledged, in send order: etcd
        # answers a failed creation with watch_id -1, matched to the oldest one here.
        self._awaiting_created: deque[int] = deque()
        self._fragments: dict[int, list[kv_pb2.Event]] = {}
        self._connected = False
        # Whether the current stream's server sends stream-wide progress only when every
        # watch is synced (etcd >= 3.4.31 / 3.5.13). Set per stream by _serve.
        self.trust_broadcast = False
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    # -- API used by EtcdClient and Watch ---------------------------------------------

    def add(self, watch: Watch) -> None:
        if self._closed:
            raise ClientClosed("etcd client is closed")
        self._watches[watch] = None
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="etcd-watch")
        elif self._connected:
            self._create(watch)

    def remove(self, watch: Watch) -> None:
        self._watches.pop(watch, None)
        self._unregister(watch)

    def resume(self, watch: Watch) -> None:
        """A lagging watch's consumer drained its buffer: re-create it at etcd."""
        if watch.lagging and watch.active:
            watch.lagging = False
            if self._connected:
                self._create(watch)

    def request_progress(self) -> None:
        if self._closed:
            raise ClientClosed("etcd client is closed")
        self._progress_pending = True
        self._outbox_ready.set()

    async def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for w in list(self._watches):
            w.fail(ClientClosed("etcd client is closed"), drop_buffer=True)
        self._watches.clear()
        self._by_id.clear()

    # -- registration on the current stream ---------------------------------------------

    def _create(self, watch: Watch) -> None:
        wid = next(self._ids)
        watch.watch_id = wid
        self._by_id[wid] = watch
        self._outbox.append(("create", watch, wid))
        self._outbox_ready.set()

    def _unregister(self, watch: Watch) -> None:
        """Forget ``watch`` on this stream and cancel it at etcd (if it was registered)."""
        wid = watch.watch_id
        if wid and self._by_id.get(wid) is watch:
            del self._by_id[wid]
            self._fragments.pop(wid, None)
            if self._connected:
                self._outbox.append(("cancel", None, wid))
                self._outbox_ready.set()
        watch.watch_id = 0

    def _lag(self, watch: Watch) -> None:
        watch.lagging = True
        self._unregister(watch)

    def _request(self, kind: str, watch: Watch | None, wid: int) -> rpc_pb2.WatchRequest | None:
        if kind == "cancel":
            return _convert.watch_cancel(wid)
        assert watch is not None
        if self._by_id.get(wid) is not watch:
            return None  # cancelled or lagging before it was sent
        self._awaiting_created.append(wid)
        return _convert.watch_create(
            wid,
            watch.key,
            watch.range_end,
            watch.next_revision,
            prev_kv=watch.prev_kv,
            progress_notify=watch.progress_notify,
            filters=watch.filters,
        )

    # -- the stream's tasks ----------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._keep_streaming()
        except Exception as e:
            # A bug, not an etcd failure: fail every watch loudly rather than hang them.
            log.exception("etcd watch stream task crashed")
            for w in list(self._watches):
                w.fail(EtcdError(f"etcd watch stream crashed: {e!r}"))
            self._watches.clear()
            self._task = None

    async def _keep_streaming(self) -> None:
        """Keep one stream open; re-create every live watch on each new stream."""
        loop = asyncio.get_running_loop()
        backoff = BACKOFF_INITIAL
        while True:
            try:
                ep = await self._pool.ready(loop.time() + self._dial_timeout)
            except Unavailable:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
                continue
            if await self._serve(ep):
                backoff = BACKOFF_INITIAL
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    async def _serve(self, ep: Endpoint) -> bool:
        """Run one stream on ``ep`` until it breaks; True if it delivered anything."""
        try:
            status = await ep.maintenance.Status(
                rpc_pb2.StatusRequest(), timeout=self.request_timeout
            )
        except grpc.aio.AioRpcError as e:
            self._pool.failed(ep, str(translate(e)))
            return False
        self.trust_broadcast = progress_is_trustworthy(status.version)
        call: Any = ep.watch.Watch()
        self._outbox.clear()
        self._awaiting_created.clear()
        self._fragments.clear()
        self._by_id.clear()
        self._connected = True
        for w in self._watches:
            w.watch_id = 0
            if w.active and not w.lagging:
                self._create(w)
        self._outbox_ready.set()
        writer = asyncio.get_running_loop().create_task(self._write(call), name="etcd-watch-w")
        writer.add_done_callback(lambda _: call.cancel())
        received = False
        try:
            while True:
                resp = await call.read()
                if resp is grpc.aio.EOF:
                    log.warning("etcd watch stream to %s ended; re-creating watches", ep.url)
                    self._pool.failed(ep, "watch stream ended")
                    return received
                received = True
                self._dispatch(resp)
        except grpc.aio.AioRpcError as e:
            err = translate(e, ep.url)
            log.warning("etcd watch stream broke (%s); re-creating watches", err)
            self._pool.failed(ep, str(err))
            return received
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # we are being closed
            self._pool.failed(ep, "watch stream cancelled")  # by the writer's failure
            return received
        finally:
            self._connected = False
            self._by_id.clear()
            writer.cancel()
            try:
                await writer
            except (asyncio.CancelledError, grpc.aio.AioRpcError, asyncio.InvalidStateError):
                # we cancelled it, or the stream it wrote to broke or finished under a
                # write in flight (grpc.aio raises InvalidStateError "RPC already finished")
                pass
            except Exception:
                log.exception("etcd watch stream writer failed")
            call.cancel()

    async def _write(self, call: Any) -> None:
        while True:
            if not self._outbox and not self._progress_pending:
                self._outbox_ready.clear()
                await self._outbox_ready.wait()
                continue
            if self._outbox:
                req = self._request(*self._outbox.popleft())
            else:
                self._progress_pending = False
                req = _convert.watch_progress()
            if req is not None:
                await call.write(req)

    # -- routing responses (the reader; never awaits) ----------------------------------

    def _dispatch(self, resp: rpc_pb2.WatchResponse) -> None:
        wid = resp.watch_id
        if resp.created:
            self._on_created(resp)
        elif wid == _BROADCAST_ID:
            self._on_broadcast_progress(resp.header.revision)
        else:
            watch = self._by_id.get(wid)
            if watch is None:
                return  # cancelled or lagging: late responses are dropped
            if resp.canceled:
                self._on_canceled(watch, resp)
            else:
                self._on_events(watch, resp)

    def _on_created(self, resp: rpc_pb2.WatchResponse) -> None:
        wid = resp.watch_id
        if wid == _BROADCAST_ID and self._awaiting_created:
            wid = self._awaiting_created.popleft()
        else:
            while self._awaiting_created and self._awaiting_created.popleft() != wid:
                pass
        watch = self._by_id.get(wid)
        if watch is None:
            return
        if resp.canceled:
            self._on_canceled(watch, resp)
        else:
            watch.mark_created(resp.header.revision)

    def _on_canceled(self, watch: Watch, resp: rpc_pb2.WatchResponse) -> None:
        self._by_id.pop(watch.watch_id, None)
        watch.watch_id = 0
        self._watches.pop(watch, None)
        if resp.compact_revision:
            watch.fail(Compacted(resp.compact_revision))
        else:
            watch.fail(WatchCanceled(resp.cancel_reason))

    def _on_events(self, watch: Watch, resp: rpc_pb2.WatchResponse) -> None:
        wid = watch.watch_id
        if resp.fragment:
            self._fragments.setdefault(wid, []).extend(resp.events)
            return
        events: Sequence[kv_pb2.Event] = resp.events
        pending = self._fragments.pop(wid, None)
        if pending is not None:
            pending.extend(events)
            events = pending
        if events:
            last = events[-1].kv.mod_revision
            batch = WatchBatch(last, tuple(_convert.event(e) for e in events))
            self._deliver(watch, batch, last + 1)
        elif resp.header.revision and not resp.compact_revision:
            self._deliver_progress(watch, resp.header.revision)

    def _on_broadcast_progress(self, revision: int) -> None:
        for watch in list(self._by_id.values()):
            if not watch.created_revision:
                continue
            # On old etcd only watches known to be caught up (see the module docstring).
            if self.trust_broadcast or watch.next_revision - 1 >= watch.created_revision:
                self._deliver_progress(watch, revision)

    def _deliver_progress(self, watch: Watch, revision: int) -> None:
        if revision >= watch.next_revision - 1:
            self._deliver(watch, WatchBatch(revision, (), True), revision + 1)

    def _deliver(self, watch: Watch, batch: WatchBatch, next_revision: int) -> None:
        if watch.offer(batch):
            watch.next_revision = max(watch.next_revision, next_revision)
        else:
            self._lag(watch)
