"""Bounded steps: a loop over many items (the objects of a LIST) that lets the event
loop run other requests whenever ``STEP_SECONDS`` of it have passed, so no step of a
large list holds the loop for longer (the project's budget is 20 ms of loop lag; a
check of 10,000 custom resources is ~45 ms in one go)."""

from __future__ import annotations

import asyncio
import time

__all__ = ["SPLIT_ITEMS", "STEP_SECONDS", "Steps"]

STEP_SECONDS = 0.005
# a loop over this many items or more starts with a step of its own: the layer that
# produced them (a B-tree range, an index bucket sorted) already spent milliseconds in
# the current step, which the loop's first STEP_SECONDS would otherwise extend
SPLIT_ITEMS = 1000


class Steps:
    """Call ``await steps.tick()`` after each item: it yields to the loop once the
    current step has lasted ``STEP_SECONDS`` (read at each new step, so tests can set
    it to 0: a yield after every item). ``count`` is the number of yields so far."""

    __slots__ = ("_end", "count")

    def __init__(self) -> None:
        self._end = time.perf_counter() + STEP_SECONDS
        self.count = 0

    async def split(self, items: int) -> None:
        """Before a loop over ``items`` items: a step of its own for a large one."""
        if items >= SPLIT_ITEMS:
            self._end = time.perf_counter()
            await self.tick()

    async def tick(self) -> None:
        if time.perf_counter() < self._end:
            return
        self.count += 1
        await asyncio.sleep(0)  # a bounded step is done: let other requests run
        self._end = time.perf_counter() + STEP_SECONDS
