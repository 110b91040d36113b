"""Zone-based rate limits of the node lifecycle controller's NoExecute tainting
(``pkg/controller/nodelifecycle``: ``ComputeZoneState``, ``handleDisruption``,
``setLimiterInZone``, and ``RateLimitedTimedQueue`` over client-go's token bucket).

Nodes are grouped by zone (``topology.kubernetes.io/region`` and ``/zone``; a node
without them is in the zone ""). A zone is:

- **FullDisruption** when none of its nodes is Ready (and some are not);
- **PartialDisruption** when more than two are not Ready and they are at least
  ``--unhealthy-zone-threshold`` (0.55) of it;
- **Normal** otherwise.

Each zone has a queue of nodes to taint ``NoExecute`` (which the taint eviction then
acts on), drained at a rate set by the zone's state: ``--node-eviction-rate`` (0.1 per
second) when Normal or FullDisruption, ``--secondary-node-eviction-rate`` (0.01) when
PartialDisruption in a zone over ``--large-cluster-size-threshold`` (50) nodes, else 0
(a small zone in partial disruption is not evicted). When *every* zone is in
FullDisruption the controller assumes the fault is its own (the control plane's
network, not the nodes): it stops all tainting and removes the NoExecute taints it set,
until some node is Ready again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.sim.client import JSON

__all__ = ["FULL", "INITIAL", "NORMAL", "PARTIAL", "EvictionRates", "TokenBucket",
           "zone_of", "zone_state"]  # fmt: skip

INITIAL, NORMAL, PARTIAL, FULL = "Initial", "Normal", "PartialDisruption", "FullDisruption"
REGION_LABEL = "topology.kubernetes.io/region"
ZONE_LABEL = "topology.kubernetes.io/zone"


def zone_of(node: JSON) -> str:
    """``utilnode.GetZoneKey``: ``region:\\x00:zone`` ("" without either label)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    region, zone = labels.get(REGION_LABEL, ""), labels.get(ZONE_LABEL, "")
    return f"{region}:\x00:{zone}" if region or zone else ""


def zone_state(ready: list[str], unhealthy_threshold: float) -> str:
    """``ComputeZoneState`` of a zone whose nodes' Ready statuses are ``ready``."""
    ready_nodes = sum(1 for s in ready if s == "True")
    not_ready = len(ready) - ready_nodes
    if ready_nodes == 0 and not_ready > 0:
        return FULL
    if not_ready > 2 and not_ready / len(ready) >= unhealthy_threshold:
        return PARTIAL
    return NORMAL


@dataclass(frozen=True)
class EvictionRates:
    """The controller's flags."""

    rate: float = 0.1  # --node-eviction-rate
    secondary_rate: float = 0.01  # --secondary-node-eviction-rate
    unhealthy_zone_threshold: float = 0.55  # --unhealthy-zone-threshold
    large_cluster_size_threshold: int = 50  # --large-cluster-size-threshold

    def for_zone(self, state: str, size: int) -> float:
        """``setLimiterInZone``: Partial gets ``ReducedQPSFunc``, the rest the rate."""
        if state == PARTIAL:
            return self.secondary_rate if size > self.large_cluster_size_threshold else 0.0
        return self.rate


@dataclass
class TokenBucket:
    """client-go's token bucket rate limiter with burst 1 (full when made); ``qps`` 0:
    never accepts (``NewFakeNeverRateLimiter``)."""

    qps: float
    now: float
    tokens: float = field(default=1.0)

    def try_accept(self, now: float) -> bool:
        if self.qps <= 0:
            return False
        self.tokens = min(1.0, self.tokens + (now - self.now) * self.qps)
        self.now = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def swap(self, qps: float, now: float) -> TokenBucket:
        """``SwapLimiter``: the same bucket at the same rate, else a new one — drained
        when this one had no token (a burst of 1 is not handed out twice)."""
        if qps == self.qps:
            return self
        fresh = TokenBucket(qps, now)
        if qps > 0 and not self.try_accept(now):
            fresh.try_accept(now)
        return fresh
