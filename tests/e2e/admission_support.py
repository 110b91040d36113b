"""Helpers of the admission e2e tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["eventually"]

T = TypeVar("T")


def eventually(attempt: Callable[[], T], seconds: float = 10.0) -> T:
    """``attempt()`` once it stops failing an assertion: admission configurations reach
    the server through its watch, a moment after they are written."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return attempt()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
