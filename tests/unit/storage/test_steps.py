"""Bounded steps: when a loop over items lets the event loop run other tasks."""

from __future__ import annotations

import pytest

from storage import steps
from storage.steps import Steps


async def test_a_step_lasts_until_its_time_is_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("storage.steps.STEP_SECONDS", 60.0)
    s = Steps()
    for _ in range(100):
        await s.tick()
    assert s.count == 0  # within one step's time: no yield
    monkeypatch.setattr("storage.steps.STEP_SECONDS", 0.0)
    s = Steps()
    for _ in range(5):
        await s.tick()
    assert s.count == 5  # no time per step: a yield after every item


async def test_a_large_loop_starts_with_a_step_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("storage.steps.STEP_SECONDS", 60.0)
    s = Steps()
    await s.split(steps.SPLIT_ITEMS - 1)
    assert s.count == 0
    await s.split(steps.SPLIT_ITEMS)
    assert s.count == 1
    await s.tick()
    assert s.count == 1  # the new step has its whole time again
