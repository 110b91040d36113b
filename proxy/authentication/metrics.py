"""Authentication metrics with kube-apiserver's names (``endpoints/filters/metrics.go``):
``authenticated_user_requests{username}``, ``authentication_attempts{result}`` and
``authentication_duration_seconds{result}``; ``ExactCounter`` for counters that
upstream names without ``_total`` (prometheus_client would add it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from prometheus_client import REGISTRY, Histogram
from prometheus_client.core import Metric

__all__ = [
    "AUTHENTICATED_USER_REQUESTS",
    "AUTHENTICATION_ATTEMPTS",
    "AUTHENTICATION_DURATION",
    "ExactCounter",
    "compress_username",
    "record_authentication",
]

_BUCKETS = tuple(0.001 * 2**i for i in range(15))


class ExactCounter:
    """A labelled counter exposed under exactly ``name`` (type untyped: the text format
    has no counter without the ``_total`` suffix)."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str]) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = tuple(labels)
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()
        REGISTRY.register(self)

    def inc(self, *values: str, amount: float = 1.0) -> None:
        with self._lock:
            self._values[values] = self._values.get(values, 0.0) + amount

    def value(self, *values: str) -> float:
        return self._values.get(values, 0.0)

    def collect(self) -> Iterator[Metric]:
        metric = Metric(self.name, self.documentation, "unknown")
        with self._lock:
            items = list(self._values.items())
        for values, count in items:
            metric.add_sample(self.name, dict(zip(self.labels, values, strict=True)), count)
        yield metric

    def describe(self) -> list[Metric]:
        return []


AUTHENTICATED_USER_REQUESTS = ExactCounter(
    "authenticated_user_requests",
    "Counter of authenticated requests broken out by username.",
    ("username",),
)
AUTHENTICATION_ATTEMPTS = ExactCounter(
    "authentication_attempts", "Counter of authenticated attempts.", ("result",)
)
AUTHENTICATION_DURATION = Histogram(
    "authentication_duration_seconds",
    "Authentication duration in seconds broken out by result.",
    ("result",),
    buckets=_BUCKETS,
)


def compress_username(name: str) -> str:
    """Usernames collapsed to a few values, as upstream (bounded cardinality)."""
    if name in (
        "admin",
        "client",
        "kube_proxy",
        "kubelet",
        "system:serviceaccount:kube-system:default",
    ):
        return name
    return "email_id" if "@" in name else "other"


_DURATIONS = {r: AUTHENTICATION_DURATION.labels(r) for r in ("success", "failure", "error")}


def record_authentication(result: str, seconds: float, username: str = "") -> None:
    """``result``: success, failure (no credential, no anonymous) or error."""
    if result == "success":
        AUTHENTICATED_USER_REQUESTS.inc(compress_username(username))
    AUTHENTICATION_ATTEMPTS.inc(result)
    _DURATIONS[result].observe(seconds)
