"""The event loop the server runs on: uvloop's (libuv) when the ``uvloop`` extra is
installed (``pip install 'watchcache[uvloop]'``; the image has it), else asyncio's own;
``--event-loop=asyncio|uvloop`` chooses one explicitly. kube-apiserver has no such choice;
ours is a performance knob only: both loops run the same code, and the whole integration
suite passes on both. What uvloop saves per request is measured by
``watchcache bench-chain --event-loops`` (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from proxy.options.settings import ConfigError

__all__ = ["EVENT_LOOPS", "EventLoopUnavailable", "default_name", "loop_factory", "run"]

T = TypeVar("T")
EVENT_LOOPS = ("asyncio", "uvloop")
log = logging.getLogger(__name__)


class EventLoopUnavailable(ConfigError):
    """The loop asked for cannot be had (uvloop not installed): exit 2 with its text."""


def default_name() -> str:
    """The loop a server runs on when no ``--event-loop`` names one: uvloop's when it can
    be imported (it saves 10-20 % of a small request's CPU), else asyncio's."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


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
    """``asyncio.run(main)`` on the loop called ``name`` ("": ``default_name()``)."""
    chosen = name or default_name()
    try:
        factory = loop_factory(chosen)
    except EventLoopUnavailable:
        main.close()  # never to run: no "coroutine was never awaited" beside the error
        raise
    # said once at start: which loop served is otherwise invisible to an operator
    log.info("running on the %s event loop", chosen)
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
