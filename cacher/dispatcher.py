"""Fan-out of one resource's events to its watchers, after the dispatch half of
kube-apiserver's ``cacher.go``.

Each event reaches the dispatcher once, already encoded (the cache keeps final bytes);
``dispatch`` hands it to every interested watcher with a non-blocking ``add`` and returns:
no watcher can delay another or the reflector. Watchers whose field selector pins the
indexed field (pods' ``spec.nodeName=X``: kubelets) are kept in per-value sets and woken
only by events whose new or old object has that value.

A ticker (owned by the cacher) sends BOOKMARKs to watchers that asked for them — every
``bookmark_interval`` and once ``pre_timeout`` before their deadline — and closes watchers
that stayed full past their time budget.
"""

from __future__ import annotations

import orjson

from cacher.cache_watcher import CacheWatcher, CloseReason
from cacher.clock import Clock
from cacher.objects import WatchCacheEvent
from storage.interfaces import WatchEvent

INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def bookmark_bytes(
    kind: str, api_version: str, rv: int, *, initial_events_end: bool = False
) -> bytes:
    """A BOOKMARK's object: the resource's kind with only metadata.resourceVersion (and
    the initial-events-end annotation for the streaming-list bookmark). The
    ``kubernetes.io/initial-events-list-blueprint`` annotation is encoding-specific: the
    HTTP layer adds it (``proxy.endpoints.watchlist``), as upstream's handler does."""
    meta: dict[str, object] = {"resourceVersion": str(rv)}
    if initial_events_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return orjson.dumps({"kind": kind, "apiVersion": api_version, "metadata": meta})


class Dispatcher:
    """Owned by one cacher; every method runs on the event loop.

    ``_all`` holds watchers not bound to an index value, ``_by_value`` the others; both
    change only in ``add_watcher``/``_forget``.
    """

    def __init__(
        self,
        *,
        clock: Clock,
        kind: str,
        api_version: str,
        index_field: str | None = None,
        bookmark_interval: float = 60.0,
        pre_timeout: float = 2.0,
    ) -> None:
        self._clock = clock
        self.kind = kind
        self.api_version = api_version
        self.index_field = index_field
        self.bookmark_interval = bookmark_interval
        self.pre_timeout = pre_timeout
        self._all: set[CacheWatcher] = set()
        self._by_value: dict[str, set[CacheWatcher]] = {}
        self._value_of: dict[CacheWatcher, str] = {}
        self.dispatched = 0  # events handed to at least one watcher
        self.terminated_slow = 0

    def __len__(self) -> int:
        return len(self._all) + len(self._value_of)

    def watchers(self) -> list[CacheWatcher]:
        return [*self._all, *self._value_of]

    # -- registration ----------------------------------------------------------------------

    def add_watcher(self, w: CacheWatcher, index_value: str | None = None) -> None:
        if index_value is not None and self.index_field is not None:
            self._by_value.setdefault(index_value, set()).add(w)
            self._value_of[w] = index_value
        else:
            self._all.add(w)
        if w.allow_bookmarks:
            w.next_bookmark = self._next_bookmark(w)

    def forget(self, w: CacheWatcher) -> None:
        """The watcher's on_close hook: drop it from the sets (idempotent)."""
        self._all.discard(w)
        value = self._value_of.pop(w, None)
        if value is not None:
            group = self._by_value.get(value)
            if group is not None:
                group.discard(w)
                if not group:
                    del self._by_value[value]
        if w.closed is CloseReason.SLOW:
            self.terminated_slow += 1

    # -- events ------------------------------------------------------------------------------

    def dispatch(self, event: WatchCacheEvent) -> bool:
        """Hand ``event`` to every interested watcher without blocking. Returns whether
        a watcher it reached is now at its soft limit: the caller should let the loop
        run before the next event, so clients that are only behind a burst (etcd sends
        hundreds of events in one response) drain their buffers instead of being
        closed as slow by the hard limit within one synchronous batch — as upstream's
        dispatcher lets the watchers' goroutines run while it waits on a full one."""
        key = event.key
        delivered = False
        pressed = False
        for w in list(self._all):
            if w.interested(key):
                w.add(event)
                delivered = True
                pressed = pressed or w.full
        if self._by_value:
            for w in self._indexed_targets(event):
                if w.interested(key):
                    w.add(event)
                    delivered = True
                    pressed = pressed or w.full
        self.dispatched += delivered
        return pressed

    def _indexed_targets(self, event: WatchCacheEvent) -> list[CacheWatcher]:
        assert self.index_field is not None
        new = event.object.field(self.index_field)
        old = event.prev.field(self.index_field) if event.prev is not None else None
        a = self._by_value.get(new, ()) if new is not None else ()
        b = self._by_value.get(old, ()) if old is not None and old != new else ()
        return list(a) + list(b) if b else list(a)

    def terminate_all(self, reason: CloseReason) -> None:
        for w in self.watchers():
            w.close(reason)

    # -- ticks: bookmarks and budgets -----------------------------------------------------

    def tick(self, cache_rv: int) -> None:
        now = self._clock.now()
        data: bytes | None = None
        for w in self.watchers():
            w.check_budget()
            due = w.next_bookmark
            if w.closed is not None or due is None or due > now:
                continue
            if cache_rv > w.start_rv:
                if data is None:
                    data = bookmark_bytes(self.kind, self.api_version, cache_rv)
                w.add_bookmark(WatchEvent("BOOKMARK", data, cache_rv))
            w.next_bookmark = self._next_bookmark(w)

    def _next_bookmark(self, w: CacheWatcher) -> float | None:
        """kube-apiserver's nextBookmarkTime: every interval, and ``pre_timeout`` before
        the deadline; none once that point has passed."""
        now = self._clock.now()
        at = now + self.bookmark_interval
        if w.deadline is not None:
            at = min(at, w.deadline - self.pre_timeout)
        return at if at > now else None
