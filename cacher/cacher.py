"""The cacher: one resource's watch cache behind the storage vocabulary, after
kube-apiserver's ``cacher.go``.

It serves from memory only — GET and LIST at a resourceVersion the cache has reached,
and every WATCH — and owns the tasks that keep it current (reflector, bookmark ticker,
progress requester). Which requests come here rather than to etcd is decided by the
delegator (``cacher.delegator``), as kube-apiserver's ``cacher/delegator.go`` does.

Supervision: the tasks run under one supervisor task. An unexpected error in any of them
(a bug: storage errors are the reflector's own business) is logged with its traceback,
counted in ``watchcache_watch_cache_restarts_total``, turns the cache pending (requests
that need it wait, then get 429; ``readiness_check`` names the failure, so /readyz does),
closes its watchers, and after a backoff (0.5 s doubling to 30 s, reset after a minute
of health) restarts every task: the reflector re-lists.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
from collections.abc import Coroutine, Iterable, Iterator, Sequence
from typing import Any

from cacher import metrics
from cacher.cache_watcher import CacheWatcher, CloseReason, ErrorWatcher, convert, in_scope
from cacher.clock import until_next_tick
from cacher.config import CacherConfig
from cacher.dispatcher import Dispatcher, bookmark_bytes
from cacher.history import History, TooOldResourceVersion
from cacher.objects import CachedObject, WatchCacheEvent
from cacher.progress import ProgressRequester
from cacher.ready import Ready
from cacher.reflector import Reflector
from cacher.snapshotter import Snapshotter
from cacher.watch_cache import CacheList, Store, WatchCache, exact_match
from storage import known_versions
from storage.continue_token import encode_continue
from storage.errors import CorruptObject, NotReady, StorageError
from storage.interfaces import (
    AttrsFunc,
    ListerWatcher,
    ListOptions,
    ListResult,
    SelectionPredicate,
    StoredObject,
    Watcher,
    WatchEvent,
)
from storage.resource_version import parse_resource_version as parse_rv
from storage.steps import Steps
from storage.watch_errors import expired_event

log = logging.getLogger(__name__)


def parse_resource_version(rv: str) -> int | None:
    """None for unset; InvalidResourceVersion (400, upstream wording) if unparsable."""
    return None if rv == "" else parse_rv(rv)


RESTART_BACKOFF_INITIAL = 0.5
RESTART_BACKOFF_MAX = 30.0
RESTART_BACKOFF_RESET = 60.0  # seconds of health after which the backoff starts over


class Cacher:
    """One resource's cache. ``start()`` launches its tasks; ``close()`` cancels and
    awaits them and closes every watcher. ``restarts`` and ``failure`` (the last
    unexpected error, cleared by the next successful list) change only in the
    supervisor."""

    def __init__(
        self,
        store: ListerWatcher,
        *,
        resource: str,
        resource_prefix: str,
        attrs: AttrsFunc | None,
        kind: str,
        api_version: str,
        indexes: Sequence[str] = (),
        config: CacherConfig | None = None,
    ) -> None:
        self.config = config = config or CacherConfig()
        self.resource = resource
        self.resource_prefix = resource_prefix
        self.kind = kind
        self.api_version = api_version
        self._clock = config.clock
        self.ready = Ready(self._clock)
        self.history = History(config.history_capacity(resource))
        self.snapshots: Snapshotter[Store] | None = None
        if config.list_from_cache_snapshot:
            self.snapshots = Snapshotter(
                retention=config.snapshot_retention, max_count=config.snapshot_max
            )
        self._compacted = 0  # the last etcd compaction applied to the snapshots
        self.cache = WatchCache(
            attrs=attrs,
            clock=self._clock,
            history=self.history,
            indexes=indexes,
            on_resource_version=metrics.RESOURCE_VERSION.labels(resource).set,
            snapshots=self.snapshots,
        )
        self.dispatcher = Dispatcher(
            clock=self._clock,
            kind=kind,
            api_version=api_version,
            index_field=indexes[0] if indexes else None,
            bookmark_interval=config.bookmark_interval,
            pre_timeout=config.bookmark_pre_timeout,
        )
        self._received = metrics.EVENTS_RECEIVED.labels(resource)
        self.reflector = Reflector(
            store=store,
            prefix=resource_prefix,
            cache=self.cache,
            dispatcher=self.dispatcher,
            ready=self.ready,
            clock=self._clock,
            page_size=config.page_size,
            on_event=self._received.inc,
            on_initialized=self._initialized,
            on_corrupt=self._corrupt,
        )
        metrics.CORRUPT_OBJECTS.labels(resource).set_function(
            lambda: len(self.reflector.corrupt_keys)
        )
        self.progress = ProgressRequester(
            store, self.cache, self._clock, interval=config.progress_request_interval,
            prefix=resource_prefix,
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self._supervisor: asyncio.Task[None] | None = None
        self._dispatched_seen = 0
        self.restarts = 0
        self.failure = ""

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._supervisor = asyncio.get_running_loop().create_task(
            self._supervise(), name=f"cacher-{self.resource}-supervisor"
        )
        known_versions.register(self.resource_prefix, self.cache.version_at)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro, name=f"cacher-{self.resource}-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _supervise(self) -> None:
        """Run the cache's tasks; restart them all, after a backoff, when one fails."""
        backoff = RESTART_BACKOFF_INITIAL
        while True:
            started = self._clock.now()
            failed = await self._run_tasks()
            if failed is None:
                return
            if self._clock.now() - started > RESTART_BACKOFF_RESET:
                backoff = RESTART_BACKOFF_INITIAL
            self._failed(failed)
            await self._clock.sleep(backoff)
            backoff = min(backoff * 2, RESTART_BACKOFF_MAX)

    async def _run_tasks(self) -> asyncio.Task[None] | None:
        """Until one task fails (returned) or all end; the others are cancelled."""
        running = {
            self._spawn(self.reflector.run(), "reflector"),
            self._spawn(self._tick(), "ticker"),
            self._spawn(self.progress.run(), "progress"),
        }
        try:
            while running:
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if not task.cancelled() and task.exception() is not None:
                        return task
            return None
        finally:
            await cancel_all(running)

    def _failed(self, task: asyncio.Task[None]) -> None:
        err = task.exception()
        name = task.get_name().rsplit("-", 1)[-1]
        log.error("cacher %s: task %s failed; restarting the cache", self.resource,
                  task.get_name(), exc_info=err)  # fmt: skip
        self.restarts += 1
        self.failure = f"{name} failed: {type(err).__name__}: {err}"
        metrics.RESTARTS.labels(self.resource, name).inc()
        self.ready.set_pending()
        self.dispatcher.terminate_all(CloseReason.REPLACED)

    def _initialized(self) -> None:
        self.failure = ""
        metrics.INITIALIZATIONS.labels(self.resource).inc()
        # The primed objects live until replaced: out of the cyclic collector's walks
        # (a full pass over 10,000 cached pods held the loop 100-300 ms); they hold no
        # cycles, so reference counting still frees them (proxy.server.gc_pauses).
        gc.freeze()

    def _corrupt(self, err: CorruptObject) -> None:
        metrics.DECODE_ERRORS.labels(self.resource).inc()

    def readiness_check(self) -> None:
        """NotReady naming why while the cache cannot serve."""
        if self.ready.check():
            return
        why = f"restarting after {self.failure}" if self.failure else "initializing"
        raise NotReady(f"watch cache of {self.resource} is {why}", failure=self.failure)

    async def close(self) -> None:
        known_versions.unregister(self.resource_prefix, self.cache.version_at)
        with contextlib.suppress(KeyError):
            metrics.CORRUPT_OBJECTS.remove(self.resource)
        self.ready.stop()
        self.dispatcher.terminate_all(CloseReason.STOPPED)
        supervisor, self._supervisor = self._supervisor, None
        await cancel_all([supervisor] if supervisor is not None else [])
        await cancel_all(list(self._tasks))

    async def _tick(self) -> None:
        capacity = metrics.CAPACITY.labels(self.resource)
        terminated = metrics.TERMINATED_WATCHERS.labels(self.resource)
        dispatched = metrics.EVENTS_DISPATCHED.labels(self.resource)
        reported_slow = 0
        while True:
            await self._clock.sleep(until_next_tick(self._clock.now(), self.config.tick))
            self.dispatcher.tick(self.cache.resource_version)
            capacity.set(self.history.capacity)
            self._expire_snapshots()
            if self.dispatcher.terminated_slow > reported_slow:
                terminated.inc(self.dispatcher.terminated_slow - reported_slow)
                reported_slow = self.dispatcher.terminated_slow
            if self.dispatcher.dispatched > self._dispatched_seen:
                dispatched.inc(self.dispatcher.dispatched - self._dispatched_seen)
                self._dispatched_seen = self.dispatcher.dispatched

    @property
    def resource_version(self) -> int:
        return self.cache.resource_version

    def observe_compaction(self) -> None:
        """Drop the snapshots of revisions etcd compacted (upstream's cacher compactor;
        here read when needed: the compactor's revision is in memory)."""
        source = self.config.compact_revision
        if self.snapshots is None or source is None:
            return
        revision = source()
        if revision > self._compacted:
            self._compacted = revision
            self.snapshots.compact(revision)

    def _expire_snapshots(self) -> None:
        if self.snapshots is not None:
            self.observe_compaction()
            self.snapshots.expire(self._clock.now())
            metrics.SNAPSHOTS.labels(self.resource).set(len(self.snapshots))

    async def wait_ready(self, seconds: float) -> bool:
        return await self.ready.wait(seconds)

    # -- reads from memory -----------------------------------------------------------------

    async def wait_until_fresh(self, resource_version: int) -> None:
        """TooLargeResourceVersion if the cache does not reach it within the bound."""
        if self.cache.resource_version >= resource_version:
            return
        start = self._clock.now()
        try:
            await self.progress.wait_until_fresh(resource_version, self.config.freshness_wait)
        finally:
            metrics.READ_WAIT.labels(self.resource).observe(self._clock.now() - start)

    async def get(self, key: str, resource_version: int) -> StoredObject | None:
        """The object at ``key`` once the cache reached ``resource_version`` (None: absent)."""
        await self.wait_until_fresh(resource_version)
        obj = self.cache.get(key)
        return obj.stored if obj is not None else None

    async def get_list(
        self,
        key: str,
        opts: ListOptions,
        resource_version: int,
        *,
        exact: bool = False,
        start: str = "",
    ) -> ListResult:
        """A LIST from memory once the cache reached ``resource_version`` (upstream's
        ``Cacher.GetList``): with ``exact`` the state at that revision from the
        snapshots (Expired "too old resource version" when not held), else the current
        state; from continue key ``start`` on when given. ``limit`` is honoured (a
        continue token at the list's revision when more remain) except with
        resourceVersion "0", whose LIST is whole, as kube-apiserver's."""
        await self.wait_until_fresh(resource_version)
        key = scope_key(key, opts.recursive)
        pred = opts.predicate
        limit = pred.limit if pred.limit > 0 and opts.resource_version != "0" else 0
        if exact:
            res = self.cache.list_at(
                key, pred, resource_version, start=start, limit=limit, later=True
            )
        else:
            res = self.cache.list_objects(
                key, pred, recursive=opts.recursive, start=start, limit=limit, later=True
            )
        res = await _selected(res)
        self._count_list(res)
        token, remaining = "", None
        if res.last_key:
            token = encode_continue(res.last_key + "\x00", key, res.resource_version)
            remaining = res.remaining if res.remaining >= 0 else None
        return ListResult(
            items=[o.stored for o in res.items],
            resource_version=res.resource_version,
            continue_token=token,
            remaining_item_count=remaining,
            served_from="cache",
            fetched=res.fetched,
            evaluated=res.evaluated,
        )

    def _count_list(self, res: CacheList) -> None:
        index = res.index or ""
        metrics.CACHE_LIST.labels(self.resource, index).inc()
        metrics.CACHE_LIST_FETCHED.labels(self.resource, index).inc(res.fetched)
        metrics.CACHE_LIST_RETURNED.labels(self.resource).inc(len(res.items))

    # -- watch ---------------------------------------------------------------------------------

    async def watch(
        self, key: str, opts: ListOptions, *, etcd_revision: int | None = None
    ) -> Watcher:
        """A watch served from the cache (upstream ``cacher.go`` ``Cacher.Watch``).

        RV unset/0: ADDED for the current state, then changes. RV N: the history after N
        (a 410 ERROR event if it is gone), then changes. ``send_initial_events`` True: the
        state once the cache reached N (or ``etcd_revision`` for unset RV), then the
        initial-events-end BOOKMARK when bookmarks are allowed; False: changes only.
        Raises NotReady (429) while (re)initializing, TooLargeResourceVersion (504)."""
        rv = parse_resource_version(opts.resource_version)
        key = scope_key(key, opts.recursive)
        if not self.ready.check():
            raise NotReady()
        sie = opts.send_initial_events
        if sie and (rv or etcd_revision):
            await self.wait_until_fresh(rv or etcd_revision or 0)
        # From here to registration nothing awaits: snapshot and live stream are seamless.
        if not self.ready.check():
            raise NotReady()
        cache_rv = self.cache.resource_version
        initial: Iterator[WatchEvent]
        if sie or (sie is None and not rv):
            start_rv = cache_rv
            initial = self._initial_state(key, opts, cache_rv, end_bookmark=bool(sie))
        elif sie is False and not rv:
            start_rv, initial = cache_rv, iter(())
        else:
            assert rv is not None
            start_rv = rv
            try:
                events = self.cache.events_since(rv)
            except TooOldResourceVersion as err:
                return ErrorWatcher(expired_event(err.message))
            initial = self._replay(events, key, opts)
        return self._register(key, opts, start_rv, initial)

    def _initial_state(
        self, key: str, opts: ListOptions, rv: int, *, end_bookmark: bool
    ) -> Iterator[WatchEvent]:
        """The state at ``rv`` as ADDED events. The snapshot is taken now (eagerly), in
        the same step as the watcher's registration, so state and live events meet
        exactly at ``rv``; only the conversion to events is lazy."""
        # the candidates now, their selection as the events are read (a selector
        # without an index matched over the whole cache was one long step)
        state = self.cache.list_objects(key, opts.predicate, recursive=opts.recursive,
                                        later=True)  # fmt: skip
        end = None
        if end_bookmark and opts.allow_watch_bookmarks:
            data = bookmark_bytes(self.kind, self.api_version, rv, initial_events_end=True)
            end = WatchEvent("BOOKMARK", data, rv)
        return _added_then(state.items, state.selecting, end)

    def _register(
        self, key: str, opts: ListOptions, start_rv: int, initial: Iterator[WatchEvent]
    ) -> CacheWatcher:
        timeout = opts.timeout_seconds
        deadline = self._clock.now() + timeout if timeout else None
        w = CacheWatcher(
            key=key,
            recursive=opts.recursive,
            predicate=opts.predicate,
            start_rv=start_rv,
            initial=initial,
            clock=self._clock,
            buffer_size=self.config.watcher_buffer_size,
            time_budget=self.config.watcher_time_budget,
            allow_bookmarks=opts.allow_watch_bookmarks,
            deadline=deadline,
            on_close=self.dispatcher.forget,
        )
        index_value = None
        if self.dispatcher.index_field is not None:
            index_value = exact_match(opts.predicate, self.dispatcher.index_field)
        self.dispatcher.add_watcher(w, index_value)
        return w

    @staticmethod
    def _replay(events: list[WatchCacheEvent], key: str, opts: ListOptions) -> Iterator[WatchEvent]:
        for ev in events:
            if in_scope(ev.key, key, opts.recursive):
                out = convert(ev, opts.predicate)
                if out is not None:
                    yield out


async def cancel_all(tasks: Iterable[asyncio.Task[None]]) -> None:
    """Cancel tasks this module started and wait for each to end."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


def scope_key(key: str, recursive: bool) -> str:
    """A recursive read's key as a directory: "/pods/a" must not take in "/pods/ab/..."
    (upstream's cacher and etcd3 store add the trailing "/" the same way)."""
    return key if not recursive or key.endswith("/") else key + "/"


def _added_then(
    items: list[CachedObject], selecting: SelectionPredicate | None, last: WatchEvent | None
) -> Iterator[WatchEvent]:
    for obj in items:
        if selecting is None or obj.matches(selecting):
            yield WatchEvent("ADDED", obj.stored.data, obj.resource_version)
    if last is not None:
        yield last


__all__ = ["Cacher", "StorageError", "parse_resource_version"]


async def _selected(res: CacheList) -> CacheList:
    """``res`` with its pending selection applied in bounded steps: the candidates are
    the state at the list's revision (the versions they hold never change), so the
    writes that land between steps are not in it, as they would not be in one step."""
    if res.selecting is None:
        return res
    pred, steps = res.selecting, Steps()
    await steps.split(len(res.items))
    items: list[CachedObject] = []
    for obj in res.items:
        if obj.matches(pred):
            items.append(obj)
        await steps.tick()
    return dataclasses.replace(res, items=items, selecting=None)
