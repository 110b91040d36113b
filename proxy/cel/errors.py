"""The two errors of the CEL engine.

::

    CelError
     ├── CompileError   the expression does not parse or refers to something undeclared
     └── EvalError      evaluation failed (no such key, no such overload, overflow,
                        division by zero, cost limit exceeded, ...)

Both carry ``message``, worded as cel-go words it where the engine can tell
(``no such key: x``, ``no such overload``, ``operation cancelled: actual cost limit
exceeded``).
"""

from __future__ import annotations

__all__ = ["CelError", "CompileError", "CostLimitError", "EvalError"]


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
