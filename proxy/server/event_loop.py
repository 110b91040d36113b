"""The event loop the server runs on: asyncio's own, or uvloop's (libuv) with
``--event-loop=uvloop`` when the optional ``uvloop`` extra is installed
(``pip install 'watchcache[uvloop]'``). kube-apiserver has no such choice; ours is a
performance knob only: both loops run the same code, and every test runs on asyncio's.
What uvloop saves per request is measured by ``watchcache bench-chain --event-loops``
(docs/performance.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from proxy.options.settings import ConfigError

__all__ = ["EVENT_LOOPS", "EventLoopUnavailable", "loop_factory", "run"]

T = TypeVar("T")
EVENT_LOOPS = ("asyncio", "uvloop")


class EventLoopUnavailable(ConfigError):
    """The loop asked for cannot be had (uvloop not installed): exit 2 with its text."""


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory of the loop called ``name`` (None: asyncio's default)."""
    if name == "asyncio":
        return None
    if name != "uvloop":
        raise EventLoopUnavailable(f"unknown event loop {name!r} (want one of {EVENT_LOOPS})")
    try:
        import uvloop
    except ImportError:
        raise EventLoopUnavailable(
            "--event-loop=uvloop needs uvloop: pip install 'watchcache[uvloop]'"
        ) from None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, T], name: str) -> T:
    """``asyncio.run(main)`` on the loop called ``name``."""
    with asyncio.Runner(loop_factory=loop_factory(name)) as runner:
        return runner.run(main)
