"""Background churn: the small, steady stream of pod changes a real cluster never stops
making (containers crash and restart; their kubelets report it).

At ``rate`` changes per second on average (gaps drawn between half and one and a half
times ``1/rate``, so a watcher never waits much longer than that for one), a random
node's agent restarts a container of one of its running pods and patches the
pod's status, under that kubelet's own user agent. That keeps the pods watch cache
moving, so a watcher gets events and bookmarks as on a live cluster.
"""

from __future__ import annotations

import asyncio
import logging
import random

import aiohttp

from lab.sim.client import APIError
from lab.sim.node_agent import NodeAgents

__all__ = ["Churn"]

log = logging.getLogger("watchcache.sim")


class Churn:
    """Restarts containers at ``rate`` per second through ``agents``."""

    def __init__(self, agents: NodeAgents, rate: float) -> None:
        self.agents = agents
        self.rate = rate
        self.changes = 0

    async def run(self) -> None:
        if self.rate <= 0:
            return
        while True:
            await asyncio.sleep(random.uniform(0.5, 1.5) / self.rate)
            agents = list(self.agents.agents.values())
            if not agents:
                continue
            try:
                if await random.choice(agents).restart_container():
                    self.changes += 1
            except (APIError, aiohttp.ClientError, TimeoutError, OSError) as e:
                log.info("churn: %s", e)
