"""The two errors of the CEL engine.

::

    CelError
     ├── CompileError   the expression does not parse or refers to something undeclared
     └── EvalError      evaluation failed (no such key, no such overload, overflow,
                        division by zero, cost limit exceeded, ...)

Both carry ``message``, worded as cel-go words it where the engine can tell
(``no such key: x``, ``no such overload``, ``operation cancelled: actual cost limit
exceeded``). A Kubernetes library function (``library``, ``net``, ``quantity``,
``semver``) raises ``LibraryError``, which the environment turns into an ``EvalError``.
"""

from __future__ import annotations

__all__ = [
    "CelError",
    "CompileError",
    "CostLimitError",
    "EvalError",
    "LibraryError",
    "no_such_overload",
]


class CelError(Exception):
    """Base of the engine's errors; ``message`` is the text upstream would show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CompileError(CelError):
    """The expression cannot be compiled (syntax, undeclared reference)."""


class EvalError(CelError):
    """Evaluation of a compiled program failed."""


class CostLimitError(EvalError):
    """The runtime cost of one evaluation exceeded its limit."""

    def __init__(self) -> None:
        super().__init__("operation cancelled: actual cost limit exceeded")


class LibraryError(Exception):
    """A CEL evaluation error raised by a library function (``message`` is cel-go's)."""


def no_such_overload() -> LibraryError:
    return LibraryError("no such overload")
