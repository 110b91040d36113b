"""What every lab demo runs with: the lab's state, one HTTP session and the transcript
it writes, and the request helpers that record each request in it (``lab.demos`` and
the ``lab.demos_*`` modules share it; none of them imports another's demos for it)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from lab.metrics import Scrape, scrape
from lab.observe import Observation, Transcript, request
from lab.state import LabState

__all__ = ["DemoContext", "warm"]


@dataclass
class DemoContext:
    state: LabState
    session: aiohttp.ClientSession
    t: Transcript

    @property
    def base(self) -> str:
        return self.state.server_url

    async def get(self, path: str, *, base: str | None = None, within: float = 30.0,
                  show: bool = True) -> Observation:  # fmt: skip
        o = await request(self.session, base or self.base, path, within=within)
        return self.t.obs(o) if show else o

    async def send(self, method: str, path: str, body: Any) -> Observation:
        return self.t.obs(await request(self.session, self.base, path, method=method, body=body))

    async def metered(self, path: str, *, base: str | None = None) -> tuple[Observation, Scrape]:
        """GET ``path`` and the scrape of ``/metrics`` taken just before it."""
        before = await scrape(self.session, base or self.base)
        return await self.get(path, base=base), before

    async def cite(self, before: Scrape, counters: list[tuple[str, dict[str, str], int]],
                   *, base: str | None = None) -> None:  # fmt: skip
        """Show how each (metric, labels, expected increase) moved since ``before`` and
        check it. Counters are bumped as a response ends: re-scrape briefly until they
        show up (never longer than 2 s)."""
        deadline = time.monotonic() + 2
        while True:
            after = await scrape(self.session, base or self.base)
            moved = [int(after.since(before, n, **ls)) for n, ls, _ in counters]
            if moved == [want for _, _, want in counters] or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        for (name, labels, want), got in zip(counters, moved, strict=True):
            sel = ",".join(f'{k}="{v}"' for k, v in labels.items())
            self.t.check(f"metric {name}{{{sel}}} +{want}", got == want, f"+{got}")


async def warm(ctx: DemoContext, base: str, path: str) -> None:
    """Wait (up to 15 s) until ``base`` serves ``path`` with RV=0 from its watch cache:
    a fresh server builds and primes a resource's cache on first use."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        o = await ctx.get(f"{path}?resourceVersion=0&limit=1", base=base, show=False)
        if o.status == 200 and o.served_from == "cache":
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"{base}{path} not served from the cache after 15 s")
