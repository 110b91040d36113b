"""Scraping ``/metrics`` and the change of a counter across a request.

The demos cite kube-apiserver's metrics (``apiserver_storage_list_fetched_objects_total``
and friends); they scrape before and after a request and show what moved, so a reader
sees the same numbers an operator's Prometheus would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Scrape", "parse", "scrape"]

Series = tuple[str, frozenset[tuple[str, str]]]


@dataclass(frozen=True)
class Scrape:
    """One scrape: every sample by (name, labels)."""

    samples: Mapping[Series, float]

    def value(self, name: str, **labels: str) -> float:
        """The sum of ``name``'s samples whose labels include ``labels``."""
        want = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and want <= ls)

    def has(self, name: str) -> bool:
        return any(n == name for n, _ in self.samples)

    def since(self, before: Scrape, name: str, **labels: str) -> float:
        return self.value(name, **labels) - before.value(name, **labels)


def parse(text: str) -> Scrape:
    samples: dict[Series, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = float(s.value)
    return Scrape(samples)


async def scrape(session: aiohttp.ClientSession, base: str) -> Scrape:
    async with session.get(base + "/metrics") as r:
        r.raise_for_status()
        return parse(await r.text())
