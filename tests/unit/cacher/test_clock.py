"""Ticks on whole multiples of their interval: every cache's ticker of one interval
wakes the loop at the same instant, and a timer firing a little early or late neither
runs a tick twice at one boundary nor skips one."""

from __future__ import annotations

import itertools

import pytest

from cacher.clock import until_next_tick


@pytest.mark.parametrize(
    ("now", "interval", "boundary"),
    [
        (1000.0, 1.0, 1001.0),  # on a boundary: the next one
        (1000.3, 1.0, 1001.0),
        (1000.0001, 1.0, 1001.0),  # a timer that fired a little late
        (1000.95, 1.0, 1002.0),  # ... or a little early: that boundary was this tick's
        (999.9999, 1.0, 1001.0),
        (1000.89, 1.0, 1001.0),
        (10.01, 0.05, 10.05),
        (10.049, 0.05, 10.1),
    ],
)
def test_the_next_tick_is_the_next_whole_multiple(
    now: float, interval: float, boundary: float
) -> None:
    assert now + until_next_tick(now, interval) == pytest.approx(boundary)


def test_tickers_started_at_different_times_tick_together() -> None:
    starts = [500.0 + i * 0.0137 for i in range(60)]  # 60 caches, their own phases
    assert len({round(s + until_next_tick(s, 1.0), 9) for s in starts}) == 1


def test_a_timer_early_or_late_ticks_once_per_boundary() -> None:
    now, ticks = 1000.37, []
    for i in range(200):  # timers firing up to 2 ms early or 80 ms late
        due = now + until_next_tick(now, 1.0)
        now = due + (-0.002, 0.0, 0.0004, 0.08)[i % 4]
        ticks.append(now)
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert min(gaps) > 0.9 and max(gaps) < 1.1
    assert {round(t) for t in ticks} == set(range(1001, 1201))  # each boundary once
