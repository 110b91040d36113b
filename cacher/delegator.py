"""Cache or etcd, per request: kube-apiserver's ``cacher/delegator.go`` and
``delegator/interface.go`` as of 1.34+ (``ShouldDelegateList`` with a cache that keeps
snapshots, ``ListFromCacheSnapshot``), ConsistentListFromCache behind its gate.

GET:  RV unset → etcd; RV 0 → cache (etcd while the cache is not ready); RV N → cache
      once it reached N (3 s, then 504 TooLargeResourceVersion).
LIST (``_route_list``; the table with examples is docs/routing.md):
      match=Exact N, legacy exact (RV N + limit), continue token of revision N →
        the cache's snapshot at N when it holds one ("exact"), N not reached yet → the
        cache only when consistent reads are possible, else etcd;
      RV unset, continue token of rv -1 → a consistent read: with ConsistentListFromCache
        the cache once it reached etcd's current revision (else etcd), gate off etcd;
      RV 0, RV N without limit, NotOlderThan → the cache's current state (after waiting
        for N); ``limit`` is honoured except at RV 0 (a continue token at the list's
        revision, which the next page reads from the snapshot).
      A snapshot gone between the decision and the read (Expired) → etcd.
WATCH: the cache (a streaming list from "now" on an etcd without usable progress
       notifications: etcd). A watch with ``sendInitialEvents`` set and RV unset needs
       etcd's current revision first (upstream's getWatchCacheResourceVersion); if etcd
       cannot give it, the watch is one ERROR event (500 InternalError, the storage
       error's text: upstream's newErrWatcher), never the cache's state as if current.
Writes, count and current_resource_version: always etcd.
A read or watch that needs the cache while it is (re)initializing waits up to 3 s for it,
then gets NotReady (429); exact reads go to etcd then. Every etcd call goes through the
store (the storage floor).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from cacher import metrics
from cacher.cache_watcher import ErrorWatcher
from cacher.cacher import Cacher, parse_resource_version, scope_key
from cacher.progress import Outcome
from cacher.ready import Stopped
from storage.continue_token import decode_continue
from storage.errors import (
    Expired,
    InvalidContinue,
    NotFound,
    NotReady,
    StorageError,
    TooLargeResourceVersion,
)
from storage.interfaces import (
    GetOptions,
    Interface,
    JSONObject,
    ListOptions,
    ListResult,
    Preconditions,
    StoredObject,
    UpdateFunc,
    ValidateDeletion,
    Watcher,
)
from storage.watch_errors import error_event

log = logging.getLogger("watchcache.cacher")

# a consistent read that timed out waiting for the cache is logged at once, then at most
# this often per resource (each is counted in
# watchcache_consistent_read_outcomes_total{outcome="fallback_timeout"})
FALLBACK_LOG_EVERY = 60.0


@dataclass(frozen=True, slots=True)
class _Route:
    """A LIST the cache serves: the current state (once it reached the request's RV),
    the state at ``resource_version`` from a snapshot (``exact``), or a consistent
    read (etcd's current revision first); ``start``: a continue token's key."""

    exact: bool = False
    consistent: bool = False
    resource_version: int = 0
    start: str = ""


class CacheDelegator:
    """``storage.interfaces.Interface`` over an etcd3 store and a cacher it owns (the
    cacher reads etcd through the same store).

    ``consistent_reads`` counts consistent-LIST outcomes (``Outcome``) for tests and
    /metrics; ``close()`` stops the cacher and closes the store."""

    def __init__(self, store: Interface, cacher: Cacher) -> None:
        self.store = store
        self.cacher = cacher
        self.consistent_reads: dict[Outcome, int] = dict.fromkeys(Outcome, 0)
        self._fallback_logged = -FALLBACK_LOG_EVERY  # monotonic time of the last log line
        # the revision of the latest write made through this delegator (see
        # guaranteed_update: the cache's copy is a good guess only once it has seen it)
        self._written = 0

    # -- writes and etcd-only calls ----------------------------------------------------------

    async def create(self, key: str, obj: JSONObject) -> StoredObject:
        return self._wrote(await self.store.create(key, obj))

    def _wrote(self, stored: StoredObject) -> StoredObject:
        self._written = max(self._written, stored.resource_version)
        return stored

    async def guaranteed_update(
        self,
        key: str,
        preconditions: Preconditions | None,
        try_update: UpdateFunc,
        *,
        ignore_not_found: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        """Upstream's CacheDelegator.GuaranteedUpdate: the caller's suggestion is
        ignored and the watch cache's copy is passed down instead (etcd is then read
        only when that copy turns out stale: ``Etcd3Store.guaranteed_update``) — once
        the cache has seen this delegator's latest write. Before that, the copy is
        likely the version a client updating one object back to back has just
        replaced, and a stale guess costs a whole ``try_update`` (admission, patch,
        validation) and a failed write to save one etcd read: etcd is read first."""
        return self._wrote(await self.store.guaranteed_update(
            key, preconditions, try_update, ignore_not_found=ignore_not_found,
            cached_existing_object=self._first_guess(key),
        ))  # fmt: skip

    def _first_guess(self, key: str) -> StoredObject | None:
        """The cache's copy of ``key`` for a write, once the cache has seen this
        delegator's latest write (see guaranteed_update); else None."""
        cache = self.cacher.cache
        if cache.resource_version < self._written:
            return None
        held = cache.get(key)
        return held.stored if held is not None else None

    async def delete(
        self,
        key: str,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
        *,
        ignore_store_read_error: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        """Upstream's CacheDelegator.Delete: the cache's copy as the first guess, as in
        guaranteed_update."""
        return self._wrote(await self.store.delete(
            key, preconditions, validate_deletion, ignore_store_read_error=ignore_store_read_error,
            cached_existing_object=self._first_guess(key),
        ))  # fmt: skip

    async def count(self, key: str) -> int:
        return await self.store.count(key)

    async def current_resource_version(self) -> int:
        return await self.store.current_resource_version()

    def readiness_check(self) -> None:
        self.cacher.readiness_check()

    # -- reads -----------------------------------------------------------------------------------

    async def get(self, key: str, opts: GetOptions) -> StoredObject:
        rv = parse_resource_version(opts.resource_version)
        if rv is None:
            return await self.store.get(key, opts)
        if not self.cacher.ready.check():
            if rv == 0:
                return await self.store.get(key, opts)
            await self._wait_ready()
        found = await self.cacher.get(key, rv)
        if found is not None:
            return found
        if opts.ignore_not_found:
            return StoredObject(key, b"{}", 0, {})
        raise NotFound(key)

    async def get_list(self, key: str, opts: ListOptions) -> ListResult:
        """Route a LIST as upstream's ``ShouldDelegateList`` (1.34+, the module
        docstring's table), then serve it; a snapshot gone meanwhile (Expired from the
        cache) falls back to etcd, as upstream's delegator does."""
        rv = parse_resource_version(opts.resource_version)
        if opts.predicate.continue_token and opts.resource_version not in ("", "0"):
            raise InvalidContinue("specifying resource version is not allowed when using continue")
        route = await self._route_list(key, opts, rv)
        if route is None:
            return await self.store.get_list(key, opts)
        if route.consistent:
            return await self._consistent_list(key, opts, route.start)
        if not route.exact:
            rv = rv or 0  # NotOlderThan without an RV (the REST layer refuses it): any
            if not self.cacher.ready.check():
                if rv == 0:
                    return await self.store.get_list(key, opts)
                await self._wait_ready()
            return await self.cacher.get_list(key, opts, rv)
        try:
            return await self.cacher.get_list(
                key, opts, route.resource_version, exact=True, start=route.start
            )
        except Expired:
            return await self.store.get_list(key, opts)

    async def _route_list(self, key: str, opts: ListOptions, rv: int | None) -> _Route | None:
        """Where a LIST is served (None: etcd), upstream's ``ShouldDelegateList``."""
        pred, match = opts.predicate, opts.resource_version_match
        if match == "Exact":
            return await self._exact_route(opts, rv or 0, "")
        if match == "NotOlderThan":
            return _Route()
        if match != "":
            return None
        if pred.continue_token:
            if self.cacher.snapshots is None or not opts.recursive:
                return None  # (upstream decides before reading the token)
            start, token_rv = decode_continue(pred.continue_token, scope_key(key, opts.recursive))
            if token_rv > 0:
                return await self._exact_route(opts, token_rv, start)
            return _Route(consistent=True, start=start) if self._consistent_gate else None
        if pred.limit > 0 and rv:  # legacy exact: RV=N with a limit
            return await self._exact_route(opts, rv, "")
        if rv is None:
            return _Route(consistent=True) if self._consistent_gate else None
        return _Route()

    async def _exact_route(self, opts: ListOptions, rv: int, start: str) -> _Route | None:
        """The state at ``rv`` (upstream ``shouldDelegateExactRV``): from a snapshot when
        one holds it; a revision the cache has not reached yet only when consistent
        reads are possible (the cache can be made to reach it); else etcd."""
        cacher = self.cacher
        if cacher.snapshots is None or not opts.recursive or not cacher.ready.check():
            return None
        cacher.observe_compaction()
        route = _Route(exact=True, resource_version=rv, start=start)
        if rv > cacher.resource_version:
            return route if await self._consistent_reads_supported() else None
        return route if cacher.cache.holds(rv) else None

    @property
    def _consistent_gate(self) -> bool:
        return self.cacher.config.consistent_list_from_cache

    async def _consistent_reads_supported(self) -> bool:
        """ConsistentListFromCache on and an etcd that answers progress requests."""
        if not self._consistent_gate:
            return False
        try:
            return await self.cacher.progress.detect()
        except StorageError:
            return False

    async def _wait_ready(self) -> None:
        """A read or watch that needs the cache waits a bounded time for it (it is
        (re)initializing: priming at start-up, or re-listing after a compaction), then gets
        NotReady (429)."""
        try:
            ready = await self.cacher.ready.wait(self.cacher.config.freshness_wait)
        except Stopped:
            ready = False
        if not ready:
            raise NotReady()

    async def _consistent_list(self, key: str, opts: ListOptions, start: str = "") -> ListResult:
        """Serve an unset-RV LIST (or a continue token of rv -1, from key ``start``) from
        the cache once it reached etcd's current revision."""
        if not self.cacher.ready.check():
            return await self.store.get_list(key, opts)
        try:
            target = await self.store.current_resource_version()
            supported = await self.cacher.progress.detect()
        except StorageError:
            return await self.store.get_list(key, opts)
        if self.cacher.resource_version >= target:
            return await self._from_cache(key, opts, target, Outcome.FRESH, start)
        if not supported:
            return await self._fallback(key, opts, Outcome.FALLBACK_UNSUPPORTED)
        try:
            return await self._from_cache(key, opts, target, Outcome.PROGRESS, start)
        except TooLargeResourceVersion:
            self._log_fallback(target)
            return await self._fallback(key, opts, Outcome.FALLBACK_TIMEOUT)

    async def _from_cache(
        self, key: str, opts: ListOptions, target: int, outcome: Outcome, start: str
    ) -> ListResult:
        result = await self.cacher.get_list(key, opts, target, start=start)
        self._count(outcome, success=True, fallback=False)
        return result

    async def _fallback(self, key: str, opts: ListOptions, outcome: Outcome) -> ListResult:
        try:
            result = await self.store.get_list(key, opts)
        except Exception:
            self._count(outcome, success=False, fallback=True)
            raise
        self._count(outcome, success=True, fallback=True)
        return result

    def _log_fallback(self, target: int) -> None:
        """A slow path must not be silent (issue 23 §9): the cache did not reach etcd's
        revision in time although progress was requested; say so, rate-limited."""
        now = time.monotonic()
        if now - self._fallback_logged < FALLBACK_LOG_EVERY:
            return
        self._fallback_logged = now
        log.warning(
            "cacher %s: a consistent read waited for revision %d but the cache is at %d "
            "(progress requested, no notification made it current): served from etcd; "
            "%d such reads so far",
            self.cacher.resource, target, self.cacher.resource_version,
            self.consistent_reads[Outcome.FALLBACK_TIMEOUT] + 1,
        )  # fmt: skip

    def _count(self, outcome: Outcome, *, success: bool, fallback: bool) -> None:
        self.consistent_reads[outcome] += 1
        resource = self.cacher.resource
        metrics.CONSISTENT_READ.labels(resource, str(success).lower(), str(fallback).lower()).inc()
        metrics.CONSISTENT_READ_OUTCOME.labels(resource, outcome.value).inc()

    # -- watch -----------------------------------------------------------------------------------

    async def watch(self, key: str, opts: ListOptions) -> Watcher:
        etcd_revision = None
        if opts.send_initial_events and opts.resource_version == "":
            # A streaming list from "now": the state at etcd's current revision when the
            # cache can be made to reach it (progress requests); on an etcd that cannot
            # prove the cache current, etcd serves it, as a consistent LIST falls back.
            # etcd unreachable: an ERROR event, never the cache's state as if current.
            try:
                if not await self.cacher.progress.detect():
                    kind = (self.cacher.api_version, self.cacher.kind)
                    return await self.store.watch(key, replace(opts, bookmark_kind=kind))
                etcd_revision = await self.store.current_resource_version()
            except StorageError as err:
                return ErrorWatcher(error_event(500, "InternalError", err.message))
        if not self.cacher.ready.check():
            await self._wait_ready()
        return await self.cacher.watch(key, opts, etcd_revision=etcd_revision)

    async def close(self) -> None:
        await self.cacher.close()
        await self.store.close()
