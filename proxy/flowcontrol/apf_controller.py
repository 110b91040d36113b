"""The configuration consumer (upstream's ``apf_controller.go`` + ``apf_filter.go``):
reads the FlowSchemas and PriorityLevelConfigurations from their shared informers,
classifies requests, owns one queue set per priority level, lends and borrows seats
between levels, and writes each FlowSchema's ``Dangling`` condition.

As upstream's, the informers' handlers only enqueue one work item (``CONFIG_KEY``: the
configuration as a whole); its reconcile digests both resources at once (levels,
ordered schemas) and then writes the ``Dangling`` conditions that differ. A failed
write requeues the item with the queue's backoff.

Concurrency (seats): the server's total is ``--max-requests-inflight`` +
``--max-mutating-requests-inflight``. A level's nominal limit is
``ceil(total x shares / sum of all levels' shares)``; it may lend
``round(nominal x lendablePercent / 100)`` and borrow up to
``round(nominal x borrowingLimitPercent / 100)`` (unlimited when unset). Every 10 s
each level's demand (the most seats it held and waited for during the period,
smoothed: it decays by 2.3 % a period) sets its target, and the total is shared
out by one fair fraction of those targets, each kept within [nominal - lendable,
nominal + borrowing limit] (upstream's ``computeConcurrencyAllocation``). Exempt
levels are never limited.

Until both informers have synced, the built-in mandatory configuration classifies (so
a request is never unclassified). A FlowSchema whose level does not exist is dangling:
skipped by classification, and marked so in its status.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from cacher.cacher import cancel_all
from proxy.flowcontrol import bootstrap, metrics
from proxy.flowcontrol.config_producer import GROUP
from proxy.flowcontrol.fairqueuing.queueset import QueueSet, QueuingConfig
from proxy.flowcontrol.matching import FlowSchemaSpec, matches, parse_flow_schema, sort_schemas
from proxy.informer import (
    EventHandlers,
    SharedIndexInformer,
    WorkQueue,
    run_workers,
    wait_for_cache_sync,
)
from proxy.loopback.client import LoopbackClient, resource_path
from proxy.registry.object_meta import now_rfc3339
from proxy.request.request_info import RequestInfo
from proxy.request.user import UserInfo

__all__ = ["APFController", "PriorityLevel", "allocate"]

log = logging.getLogger("watchcache.flowcontrol")

JSON = dict[str, Any]
ADJUST_SECONDS = 10.0
CONFIG_KEY = "configuration"
DEMAND_DECAY = 0.977
CLASSIFY_CACHE_SIZE = 10_000
RESOURCES = ("prioritylevelconfigurations", "flowschemas")
_REFERS = "This FlowSchema references the PriorityLevelConfiguration object named"


@dataclass
class PriorityLevel:
    """One priority level: its spec, limits and queue set. ``current`` is changed by
    the controller only."""

    name: str
    uid: str
    spec: JSON
    queue_set: QueueSet
    nominal: int = 0
    lower: int = 0
    upper: int = 0
    current: int = 0
    smoothed_demand: float = 0.0

    @property
    def exempt(self) -> bool:
        return self.spec.get("type") == "Exempt"

    @property
    def max_seats(self) -> int:
        """The most seats one request may occupy here (upstream's ``MaxSeatsTracker``,
        0: no bound of the level's): a hand's share of the nominal limit, and at most
        15% of it, at least 1. Without it one 100-seat LIST would take a whole level
        and every other flow of the level would wait for it to finish."""
        if self.exempt:
            return 0
        # the queue set's shape is the spec's (the controller reconfigures it with
        # every new spec): not parsed again on every request
        queuing = self.queue_set.queuing
        hand = queuing.hand_size if queuing is not None else 1
        return max(1, min(self.nominal // hand, math.ceil(self.nominal * 0.15)))


def _shares(spec: JSON) -> tuple[int, int, int | None]:
    """(nominalConcurrencyShares, lendablePercent, borrowingLimitPercent or None)."""
    part = spec.get("exempt") if spec.get("type") == "Exempt" else spec.get("limited")
    part = part or {}
    default = 0 if spec.get("type") == "Exempt" else 30
    shares = part.get("nominalConcurrencyShares")
    borrowing = part.get("borrowingLimitPercent")
    return (
        int(default if shares is None else shares),
        int(part.get("lendablePercent") or 0),
        None if borrowing is None else int(borrowing),
    )


def _queuing(spec: JSON) -> QueuingConfig | None:
    response = (spec.get("limited") or {}).get("limitResponse") or {}
    if response.get("type") != "Queue":
        return None
    q = response.get("queuing") or {}
    return QueuingConfig(
        queues=int(q.get("queues") or 64),
        hand_size=int(q.get("handSize") or 8),
        queue_length_limit=int(q.get("queueLengthLimit") or 50),
    )


def _go_round(x: float) -> int:
    """Go's math.Round: halves away from zero (Python's round() goes to even)."""
    return math.floor(x + 0.5)


def allocate(total: int, bounds: list[tuple[float, float, float]]) -> list[float]:
    """Share ``total`` seats by one fair fraction f of each (lower, upper, target):
    ``clamp(f x target, lower, upper)`` summing to ``total`` when the bounds allow."""

    def sized(f: float) -> list[float]:
        return [min(hi, max(lo, f * t)) for lo, hi, t in bounds]

    if sum(lo for lo, _, _ in bounds) >= total:
        return [lo for lo, _, _ in bounds]
    if sum(hi for _, hi, _ in bounds) <= total:
        return [hi for _, hi, _ in bounds]
    lo_f, hi_f = 0.0, 1.0
    while sum(sized(hi_f)) < total and hi_f < 1e12:
        hi_f *= 2
    for _ in range(60):
        mid = (lo_f + hi_f) / 2
        if sum(sized(mid)) < total:
            lo_f = mid
        else:
            hi_f = mid
    return sized(hi_f)


def _builtin(plural: str) -> list[JSON]:
    """The mandatory objects, as the informers would hold them (no uid yet)."""
    specs = (
        bootstrap.MANDATORY_PRIORITY_LEVELS
        if plural == "prioritylevelconfigurations"
        else bootstrap.MANDATORY_FLOW_SCHEMAS
    )
    return [{"metadata": {"name": n, "uid": ""}, "spec": s} for n, s in specs.items()]


@dataclass
class APFController:
    """Classification and the priority levels; ``run()`` keeps them current."""

    # writes the FlowSchemas' Dangling conditions; None: the built-in configuration only
    client: LoopbackClient | None
    total_seats: int
    clock: Callable[[], float] | None = None
    objects: dict[str, dict[str, JSON]] = field(default_factory=dict)
    levels: dict[str, PriorityLevel] = field(default_factory=dict)
    schemas: list[FlowSchemaSpec] = field(default_factory=list)
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    # plural -> its shared informer (``watch``); None: the built-in configuration only
    informers: dict[str, SharedIndexInformer] | None = None
    queue: WorkQueue[str] = field(default_factory=lambda: WorkQueue("apf-controller"))
    _classified: dict[tuple[Any, ...], tuple[FlowSchemaSpec, PriorityLevel]] = field(
        default_factory=dict
    )

    def __post_init__(self) -> None:
        for plural in RESOURCES:
            self.objects[plural] = {o["metadata"]["name"]: o for o in _builtin(plural)}
        self._digest()

    # ------------------------------------------------------------------ classification

    def classify(self, user: UserInfo, info: RequestInfo) -> tuple[FlowSchemaSpec, PriorityLevel]:
        """The first matching FlowSchema with an existing level; catch-all otherwise.
        Answers are cached per (user, request shape) until the configuration changes."""
        key = (user.name, user.groups, info.verb, info.group, info.resource, info.subresource,
               info.namespace, "" if info.is_resource_request else info.path)  # fmt: skip
        found = self._classified.get(key)
        if found is None:
            if len(self._classified) >= CLASSIFY_CACHE_SIZE:
                self._classified.clear()
            found = self._classified[key] = self._classify(user, info)
        return found

    def _classify(self, user: UserInfo, info: RequestInfo) -> tuple[FlowSchemaSpec, PriorityLevel]:
        for schema in self.schemas:
            level = self.levels.get(schema.level)
            if level is not None and matches(schema, user, info):
                return schema, level
        fallback = FlowSchemaSpec("catch-all", "", 10000, "catch-all", "ByUser", ())
        return fallback, self.levels["catch-all"]

    # ------------------------------------------------------------------ digesting

    def _digest(self) -> None:
        """Rebuild the schemas and levels from ``objects`` (keeping each surviving
        level's queue set, so requests in it are not lost)."""
        pls = self.objects["prioritylevelconfigurations"]
        if "catch-all" not in pls or "exempt" not in pls:  # mandatory: never without
            for obj in _builtin("prioritylevelconfigurations"):
                pls.setdefault(obj["metadata"]["name"], obj)
        levels: dict[str, PriorityLevel] = {}
        for name, obj in pls.items():
            spec = obj.get("spec") or {}
            uid = str((obj.get("metadata") or {}).get("uid", ""))
            old = self.levels.get(name)
            exempt = spec.get("type") == "Exempt"
            if old is not None:
                old.spec, old.uid = spec, uid
                old.queue_set.reconfigure(old.queue_set.limit, exempt, _queuing(spec))
                levels[name] = old
            else:
                qs = QueueSet(name, limit=1, exempt=exempt, queuing=_queuing(spec),
                              **({"clock": self.clock} if self.clock else {}))  # fmt: skip
                levels[name] = PriorityLevel(name, uid, spec, qs)
        self.levels = levels
        self._set_nominal()
        self._classified.clear()
        # upstream's digest supplies the missing mandatory FlowSchemas too, so that
        # system:masters (the loopback client writing the configuration itself) is
        # exempt and nothing is unclassified even before the configuration is stored
        schemas = dict(self.objects["flowschemas"])
        for obj in _builtin("flowschemas"):
            if obj["metadata"]["name"] in ("exempt", "catch-all"):
                schemas.setdefault(obj["metadata"]["name"], obj)
        self.schemas = sort_schemas([parse_flow_schema(o) for o in schemas.values()])

    def _set_nominal(self) -> None:
        shares = {n: _shares(level.spec) for n, level in self.levels.items()}
        total_shares = sum(s for s, _, _ in shares.values()) or 1
        for name, level in self.levels.items():
            share, lendable_pct, borrow_pct = shares[name]
            old_nominal = level.nominal
            level.nominal = math.ceil(self.total_seats * share / total_shares)
            level.lower = level.nominal - _go_round(level.nominal * lendable_pct / 100)
            level.upper = (
                self.total_seats
                if borrow_pct is None
                else level.nominal + _go_round(level.nominal * borrow_pct / 100)
            )
            if level.nominal != old_nominal or not level.current:
                level.current = level.nominal  # until the next borrowing round
            level.queue_set.set_limit(max(level.current, 1))
            metrics.set_level_limits(level.name, level.nominal, level.lower, level.upper)
            metrics.set_current_limit(level.name, level.current)

    def adjust(self) -> None:
        """One borrowing round: demands → fair shares → each level's current limit."""
        limited = [lv for lv in self.levels.values() if not lv.exempt]
        for level in limited:
            peak = level.queue_set.take_peak_demand()
            level.smoothed_demand = max(float(peak), level.smoothed_demand * DEMAND_DECAY)
        bounds = [
            (float(lv.lower), float(lv.upper), max(float(lv.lower), lv.smoothed_demand))
            for lv in limited
        ]
        exempt_seats = sum(lv.nominal for lv in self.levels.values() if lv.exempt)
        shares = allocate(max(self.total_seats - exempt_seats, 0), bounds)
        for level, seats in zip(limited, shares, strict=True):
            level.current = max(level.lower, _go_round(seats), 1)
            level.queue_set.set_limit(level.current)
            metrics.set_current_limit(level.name, level.current)

    # ------------------------------------------------------------------ the informers

    def watch(self, informers: dict[str, SharedIndexInformer]) -> None:
        """Read the configuration from ``informers`` (plural -> informer) from now on."""
        self.informers = informers
        enqueue = EventHandlers.each(lambda _: self.queue.add(CONFIG_KEY))
        for informer in informers.values():
            informer.add_event_handler(enqueue)

    async def reconcile(self, key: str) -> None:
        """Digest the whole configuration, then write the Dangling conditions."""
        assert self.informers is not None
        for plural in RESOURCES:
            objects = self.informers[plural].indexer.list()
            self.objects[plural] = {o["metadata"]["name"]: o for o in objects}
        self._digest()
        self.synced.set()
        await self._write_statuses()

    async def _adjust_forever(self) -> None:
        while True:
            await asyncio.sleep(ADJUST_SECONDS)
            self.adjust()

    # ------------------------------------------------------------------ status

    def _dangling_condition(self, schema: JSON) -> JSON:
        level = str(
            ((schema.get("spec") or {}).get("priorityLevelConfiguration") or {}).get("name", "")
        )
        found = level in self.objects["prioritylevelconfigurations"]
        name = orjson.dumps(level).decode()
        if found:
            message = f"{_REFERS} {name} and it exists"
        else:
            message = f"{_REFERS} {name} but there is no such object"
        return {
            "type": "Dangling",
            "status": "False" if found else "True",
            "reason": "Found" if found else "NotFound",
            "message": message,
        }

    async def _write_status(self, name: str, wanted: JSON) -> None:
        assert self.client is not None

        def set_condition(obj: JSON) -> JSON:
            conditions = [c for c in (obj.get("status") or {}).get("conditions") or ()
                          if c.get("type") != "Dangling"]  # fmt: skip
            conditions.append({**wanted, "lastTransitionTime": now_rfc3339()})
            return {**obj, "status": {**(obj.get("status") or {}), "conditions": conditions}}

        path = resource_path(GROUP, "v1", "flowschemas", name=name, sub="status")
        await self.client.update(path, set_condition)  # None: deleted meanwhile

    async def _write_statuses(self) -> None:
        for name, obj in list(self.objects["flowschemas"].items()):
            wanted = self._dangling_condition(obj)
            have = [c for c in (obj.get("status") or {}).get("conditions") or ()
                    if c.get("type") == "Dangling"]  # fmt: skip
            current = {k: have[0].get(k) for k in wanted} if have else None
            if current != wanted:
                await self._write_status(name, wanted)

    async def _control(self) -> None:
        assert self.informers is not None
        await wait_for_cache_sync(*self.informers.values())
        self.queue.add(CONFIG_KEY)
        try:
            await run_workers("apf-controller", self.queue, self.reconcile)
        finally:
            self.queue.shut_down()

    async def run(self) -> None:
        """Run until cancelled."""
        tasks = [asyncio.create_task(self._adjust_forever(), name="apf-borrowing")]
        if self.client is not None and self.informers is not None:
            tasks.append(asyncio.create_task(self._control(), name="apf-controller"))
        try:
            await asyncio.gather(*tasks)
        finally:
            await cancel_all(tasks)
