"""A controller's workers: the ``processNextWorkItem`` loop every upstream controller
writes, once.

``run_workers`` drains a work queue into ``reconcile(key)`` with ``workers`` tasks.
A reconcile that returns forgets the key's failures; one that raises (any Exception:
a storage error or a bug) is logged and the key requeued through the rate limiter, so
a failing key backs off exponentially without holding up the others. The workers end
when the queue is shut down and drained, or when cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import TypeVar

from proxy.informer.workqueue import ShutDown, WorkQueue

__all__ = ["process_next_work_item", "run_workers"]

log = logging.getLogger("watchcache.controller")

T = TypeVar("T", bound=Hashable)


async def process_next_work_item(
    name: str, queue: WorkQueue[T], reconcile: Callable[[T], Awaitable[None]]
) -> None:
    """Take one key, reconcile it, then forget it or requeue it rate-limited.
    Raises ShutDown when the queue is shut down and empty."""
    key = await queue.get()
    try:
        await reconcile(key)
    except Exception as e:  # a storage error or a bug: back off and try again
        retries = queue.num_requeues(key)
        log.info("%s: syncing %s failed (%d retries): %s", name, key, retries, e,
                 exc_info=log.isEnabledFor(logging.DEBUG))  # fmt: skip
        queue.add_rate_limited(key)
    else:
        queue.forget(key)
    finally:
        queue.done(key)


async def run_workers(
    name: str, queue: WorkQueue[T], reconcile: Callable[[T], Awaitable[None]], workers: int = 1
) -> None:
    """``workers`` tasks running ``process_next_work_item`` until the queue shuts down
    (or this is cancelled, which cancels them)."""

    async def worker() -> None:
        while True:
            try:
                await process_next_work_item(name, queue, reconcile)
            except ShutDown:
                return

    async with asyncio.TaskGroup() as group:
        for i in range(workers):
            group.create_task(worker(), name=f"{name}-worker-{i}")
