"""How long a failed item waits before it is retried (client-go's
``workqueue.TypedRateLimiter`` family).

``default_controller_rate_limiter`` is upstream's ``DefaultControllerRateLimiter``: the
longer of a per-item exponential backoff (5 ms doubling to 1000 s, reset by ``forget``)
and an overall token bucket (10 per second, bursts of 100) that keeps a storm of
failures from turning into a storm of retries.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from cacher.clock import Clock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """The wait before ``item`` is retried, counting this as one more failure."""
        ...

    def forget(self, item: Hashable) -> None:
        """``item`` succeeded: stop tracking its failures."""
        ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """``base x 2^failures``, capped at ``cap``, per item."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp > 64:  # 2^64 x base is past any cap (and keeps the float finite)
            return self.cap
        return min(self.base * float(2**exp), self.cap)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """A token bucket of ``burst`` tokens refilled at ``qps``; each ``when`` takes one
    and answers how long until it is there. Not per item: ``forget`` does nothing."""

    def __init__(self, clock: Clock, qps: float = 10.0, burst: int = 100) -> None:
        self.clock = clock
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, item: Hashable) -> float:
        now = self.clock.now()
        if self._last is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest wait of several limiters (each counts the failure)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock) -> MaxOfRateLimiter:
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(), BucketRateLimiter(clock))
