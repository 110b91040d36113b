"""Events: what the simulated components record, written as client-go's event recorder
(``tools/record``) writes them, so ``kubectl get events`` and ``kubectl describe`` show
them.

One :class:`EventBroadcaster` serves the whole simulated cluster: every component takes a
:class:`EventRecorder` for its name (``default-scheduler``, ``kubelet`` on a host,
``replicaset-controller``, ...) and calls ``event(obj, type, reason, message)``, which
never blocks and never fails: the event goes into a bounded queue (1000, dropped when
full, as client-go's broadcaster drops) that one writer task drains. Before writing, the
correlator (client-go's ``EventCorrelator``) decides what reaches the server:

- the spam filter: a token bucket per source and involved object (burst 25, then one
  every 5 minutes) drops the rest, so a crash-looping pod cannot flood the server;
- the aggregator: more than 10 events of one source, object, type and reason differing
  only in message within 10 minutes become one ``(combined from similar events): ...``;
- the logger: an event like one already written (same key, message included) is a PATCH
  of that Event's ``count`` and ``lastTimestamp`` instead of a new object; a patch that
  finds it gone (expired with ``--event-ttl``) creates it again.

Writes are core/v1 Events (as the record package writes them; the server shows the
same objects through ``events.k8s.io/v1`` too), named ``<object>.<hex nanoseconds>``, in the
object's namespace (``default`` for a cluster-scoped object such as a Node), and the
writer keeps to ``qps`` writes a second (burst ``burst``) so the simulated cluster's
Events stay a small part of what the server does.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from dataclasses import dataclass

import aiohttp

from lab.sim import pod_status
from lab.sim.client import JSON, APIError, Client

__all__ = ["EventBroadcaster", "EventRecorder", "object_reference"]

log = logging.getLogger("watchcache.sim")

QUEUE_SIZE = 1000  # client-go's maxQueuedEvents
SPAM_BURST = 25  # client-go's defaultSpamBurst
SPAM_REFILL_SECONDS = 300.0  # defaultSpamQPS = 1/300
AGGREGATE_MAX_EVENTS = 10  # defaultAggregateMaxEvents
AGGREGATE_INTERVAL = 600.0  # defaultAggregateIntervalInSeconds
CACHE_SIZE = 4096  # maxLruCacheEntries
WRITE_QPS = 10.0
WRITE_BURST = 50
COMBINED = "(combined from similar events): "


def object_reference(obj: JSON, kind: str, api_version: str = "v1", field_path: str = "") -> JSON:
    """The ObjectReference an Event's ``involvedObject`` holds for ``obj``."""
    meta = obj.get("metadata") or {}
    ref: JSON = {"kind": kind, "name": meta.get("name"), "uid": meta.get("uid"),
                 "apiVersion": api_version,
                 "resourceVersion": meta.get("resourceVersion")}  # fmt: skip
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    if field_path:
        ref["fieldPath"] = field_path
    return {k: v for k, v in ref.items() if v}


def _key(event: JSON, *fields: str) -> str:
    """The source, the involved object and ``fields`` of ``event`` (client-go's
    getSpamKey, EventAggregatorByReasonFunc and getEventKey differ only in these)."""
    ref, source = event["involvedObject"], event["source"]
    parts = [source.get("component"), source.get("host"), ref.get("kind"),
             ref.get("namespace"), ref.get("name"), ref.get("uid"), ref.get("apiVersion")]
    return "/".join(str(x) for x in parts + [event[f] for f in fields])  # fmt: skip


@dataclass
class _Seen:
    """What the logger remembers of an Event it wrote."""

    name: str
    namespace: str
    count: int
    first_timestamp: str


class _TokenBucket:
    def __init__(self, burst: float, per_second: float) -> None:
        self.tokens, self.burst, self.rate = burst, burst, per_second
        self.at = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def delay(self) -> float:
        """Seconds until a token is there (0: now), taking it."""
        if self.take():
            return 0.0
        return (1 - self.tokens) / self.rate


class _LRU(collections.OrderedDict[str, object]):
    def remember(self, key: str, value: object) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > CACHE_SIZE:
            self.popitem(last=False)


class EventRecorder:
    """Records Events as ``component`` (on ``host``, for a kubelet)."""

    def __init__(self, broadcaster: EventBroadcaster, component: str, host: str = "") -> None:
        self.broadcaster = broadcaster
        self.source = {"component": component, **({"host": host} if host else {})}

    def event(self, ref: JSON, type_: str, reason: str, message: str) -> None:
        """Queue an Event about ``ref`` (an :func:`object_reference`); never blocks."""
        now = pod_status.now()
        namespace = ref.get("namespace") or "default"
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": f"{ref.get('name')}.{time.time_ns():x}",
                              "namespace": namespace},
                 "involvedObject": ref, "reason": reason, "message": message,
                 "type": type_, "source": self.source, "count": 1,
                 "firstTimestamp": now, "lastTimestamp": now,
                 "reportingComponent": self.source["component"],
                 "reportingInstance": self.source.get("host", "")}  # fmt: skip
        self.broadcaster.enqueue(event)


class EventBroadcaster:
    """The one queue and writer of the simulated cluster's Events."""

    def __init__(self, server: str, *, qps: float = WRITE_QPS, burst: int = WRITE_BURST) -> None:
        self.client = Client(server, "events")
        self.queue: asyncio.Queue[JSON] = asyncio.Queue(QUEUE_SIZE)
        self.limiter = _TokenBucket(burst, qps)
        self.spam: _LRU = _LRU()
        self.similar: _LRU = _LRU()  # aggregate key -> (messages seen, window start)
        self.seen: _LRU = _LRU()  # event key -> _Seen
        self.dropped = 0
        self.written = 0

    def recorder(self, component: str, host: str = "") -> EventRecorder:
        return EventRecorder(self, component, host)

    def enqueue(self, event: JSON) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.dropped += 1

    async def run(self) -> None:
        try:
            while True:
                event = await self.queue.get()
                if not self._allowed(event):
                    continue
                await asyncio.sleep(self.limiter.delay())
                with contextlib.suppress(APIError, aiohttp.ClientError, TimeoutError, OSError):
                    await self._write(*self._aggregate(event))
        finally:
            await self.client.close()

    # -- the correlator -------------------------------------------------------------------

    def _allowed(self, event: JSON) -> bool:
        """The spam filter: a token bucket per source, object and type."""
        key = _key(event, "type")
        bucket = self.spam.get(key)
        if not isinstance(bucket, _TokenBucket):
            bucket = _TokenBucket(SPAM_BURST, 1 / SPAM_REFILL_SECONDS)
        self.spam.remember(key, bucket)
        if bucket.take():
            return True
        self.dropped += 1
        return False

    def _aggregate(self, event: JSON) -> tuple[JSON, str]:
        """The aggregator: the 11th distinct message of one reason within 10 minutes
        (and every one after) is the combined event, all of them one Event (keyed
        without their message). The event and the logger's key for it."""
        key = _key(event, "type", "reason")
        now = time.monotonic()
        entry = self.similar.get(key)
        messages, start = entry if isinstance(entry, tuple) else (set(), now)
        if now - start > AGGREGATE_INTERVAL:
            messages, start = set(), now
        messages.add(event["message"])
        self.similar.remember(key, (messages, start))
        if len(messages) <= AGGREGATE_MAX_EVENTS:
            return event, _key(event, "type", "reason", "message")
        return {**event, "message": COMBINED + event["message"]}, key

    async def _write(self, event: JSON, key: str) -> None:
        """The logger and the sink: a repeat of ``key`` is a PATCH of the Event written
        before."""
        seen = self.seen.get(key)
        if isinstance(seen, _Seen):
            seen.count += 1
            patch = {"count": seen.count, "lastTimestamp": event["lastTimestamp"],
                     "message": event["message"]}  # fmt: skip
            try:
                await self.client.call(self.client.core.patch_namespaced_event, seen.name,
                                       seen.namespace, patch)  # fmt: skip
                self.written += 1
                return
            except APIError as e:
                if e.status != 404:
                    raise  # gone (its TTL ended): written anew below
        created = await self.client.call(self.client.core.create_namespaced_event,
                                         event["metadata"]["namespace"], event)  # fmt: skip
        self.written += 1
        meta = created.get("metadata") or {}
        self.seen.remember(key, _Seen(str(meta.get("name")), str(meta.get("namespace")), 1,
                                      str(event["firstTimestamp"])))  # fmt: skip
