"""Jittered exponential backoff (client-go's ``wait.Backoff`` through the reflector's
``NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)``).

Each ``next()`` returns the pause before the next attempt: ``initial`` doubling by
``factor`` up to ``cap``, each plus a random ``jitter`` fraction of itself. After
``reset_after`` seconds without a ``next()`` (a long healthy run), it starts again
from ``initial``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from cacher.clock import Clock, RealClock

__all__ = ["Backoff"]


@dataclass
class Backoff:
    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0
    clock: Clock = field(default_factory=RealClock)
    rand: random.Random = field(default_factory=random.Random)
    _duration: float = field(default=0.0, init=False)
    _last: float | None = field(default=None, init=False)

    def next(self) -> float:
        """The next pause, in seconds (see the module docstring)."""
        now = self.clock.now()
        if self._last is None or now - self._last > self.reset_after:
            self._duration = self.initial
        pause = self._duration
        self._duration = min(self._duration * self.factor, self.cap)
        self._last = now
        return pause + self.rand.random() * self.jitter * pause

    def reset(self) -> None:
        self._last = None
