"""One CEL environment for the whole server: the engine's standard library plus
Kubernetes' libraries (:mod:`.library`), compiled programs cached by expression and
declared variables, evaluation with a runtime cost limit.

The engine (the ``common-expression-language`` package, cel-rust) parses but has no
type checker, so :func:`compile` adds the checks cel-go's checker would fail first on:
references to undeclared variables and to unknown functions, reported in cel-go's
``ERROR: <input>:L:C: undeclared reference to 'x' (in container '')`` form. Type errors
surface at evaluation as ``no such overload``.

Costs are estimates in cel-go's units, not cel-go's exact figures: a comprehension
(``all``, ``exists``, ``map``, ...) nested ``d`` deep costs ``n ** d`` for collections of
``n`` elements; every other call or operator costs 1 (see docs/cel.md).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cel as engine

from proxy.cel import library
from proxy.cel.errors import CompileError, CostLimitError, EvalError, LibraryError, no_such_overload

__all__ = [
    "DYN",
    "UNBOUNDED_COST",
    "CelType",
    "Program",
    "compile",
    "element_count",
    "error_at",
]


@dataclass(frozen=True, slots=True)
class CelType:
    """A declared variable's type. ``schema`` (an OpenAPI v3 schema) is kept for the
    callers that type their variables from a CRD schema; the engine checks only that
    the name is declared."""

    name: str = "dyn"
    schema: Mapping[str, Any] | None = None


DYN = CelType()

_MACROS = (
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "transformList",
    "transformMap",
    "transformMapEntry",
)
_MACRO_CALL = re.compile(r"\.\s*(" + "|".join(_MACROS) + r")\s*\(")
_MACRO_VARS = re.compile(
    r"\.\s*(?:" + "|".join(_MACROS) + r")\s*\(\s*([A-Za-z_]\w*)\s*,(?:\s*([A-Za-z_]\w*)\s*,)?"
)
_BUILTIN_NAMES = frozenset(
    {
        "int",
        "uint",
        "double",
        "string",
        "bool",
        "bytes",
        "list",
        "map",
        "null_type",
        "type",
        "dyn",
        "optional",
        "google",
        "math",
        "strings",
    }
)
_BUILTIN_FUNCTIONS = frozenset(
    {
        "size",
        "has",
        "matches",
        "contains",
        "startsWith",
        "endsWith",
        "int",
        "uint",
        "double",
        "string",
        "bool",
        "bytes",
        "type",
        "dyn",
        "duration",
        "timestamp",
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMinutes",
        "getSeconds",
        "getMilliseconds",
        "max",
        "min",
        "of",
        "none",
        "hasValue",
        "value",
        "or",
        "orValue",
        "optMap",
        "optFlatMap",
        "format",
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
    }
)
_ID_RE = re.compile(r"[A-Za-z_]\w*$")
# string(x) + ... or ... + string(x): cel-go cannot bound the converted string's size
_STRING_CONCAT = re.compile(r"\+\s*string\s*\(|(?<![\w.])string\s*\([^()]*\)\s*\+")
UNBOUNDED_COST = 2**64 - 1
"""cel-go's estimate when it cannot bound a cost (``math.MaxUint64``)."""
_CACHE_SIZE = 4096
_cache: OrderedDict[tuple[str, frozenset[str]], Program] = OrderedDict()
_cache_lock = threading.Lock()
_failure = threading.local()  # the last library error of this thread's evaluation


class Program:
    """A compiled expression. Thread-safe; :meth:`evaluate` may run in a worker thread."""

    def __init__(self, source: str, compiled: Any, variables: frozenset[str]) -> None:
        self.source = source
        self.variables = variables
        self.references = frozenset(compiled.variables()) & variables
        """The declared variables the expression refers to (``oldSelf``...)."""
        self._compiled = compiled
        self._depths = _macro_depths(source)
        self._unbounded_concat = bool(_STRING_CONCAT.search(source))
        self._units = max(1, len(compiled.functions()))

    @property
    def iterates(self) -> bool:
        """Whether the expression has comprehensions (its cost depends on sizes)."""
        return bool(self._depths)

    def estimated_cost(self, max_elements: int) -> int:
        """The static estimate (what CRD and policy validation limit): worst-case cost
        when every collection the expression iterates holds at most ``max_elements``
        elements. Like cel-go, a ``string()`` conversion concatenated with ``+`` has no
        size bound, so its estimate is unbounded."""
        if self._unbounded_concat:
            return UNBOUNDED_COST
        return self.runtime_cost(max_elements)

    def runtime_cost(self, max_elements: int) -> int:
        """The cost of one evaluation over collections of ``max_elements`` elements."""
        return int(self._units + sum(max(max_elements, 1) ** d for d in self._depths))

    def evaluate(self, activation: Mapping[str, Any], cost_limit: int | None = None) -> Any:
        """The value of the expression with ``activation`` bound (values as
        :func:`proxy.cel.values.from_json` makes them). Raises :class:`EvalError`
        (:class:`CostLimitError` when the estimated runtime cost exceeds
        ``cost_limit``). A declared variable absent from the activation is an error
        only if evaluation reaches it."""
        if cost_limit is not None and self._depths:
            size = max((element_count(v) for v in activation.values()), default=0)
            if self.runtime_cost(size) > cost_limit:
                raise CostLimitError()
        context = _bind(activation)
        _failure.error = None
        try:
            return self._compiled.execute(context)
        except Exception as err:  # the engine raises builtin exception types
            failure: LibraryError | None = _failure.error
            raise EvalError(_eval_message(err, failure)) from None


def compile(expression: str, variables: Mapping[str, CelType]) -> Program:
    """Compile ``expression`` with ``variables`` declared; cached. Raises
    :class:`CompileError` with cel-go's message."""
    key = (expression, frozenset(variables))
    with _cache_lock:
        program = _cache.get(key)
        if program is not None:
            _cache.move_to_end(key)
            return program
    program = _compile(expression, frozenset(variables))
    with _cache_lock:
        _cache[key] = program
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return program


def _compile(expression: str, declared: frozenset[str]) -> Program:
    try:
        compiled = engine.compile(expression)
    except Exception as err:
        text = str(err)
        start = text.find("ERROR: ")
        message = text[start:] if start >= 0 else text
        # cel-go indents the source excerpt and caret lines by one space
        raise CompileError(message.replace("\n| ", "\n | ")) from None
    bound = {v for m in _MACRO_VARS.finditer(expression) for v in m.groups() if v}
    for name in compiled.variables():
        if name not in declared and name not in bound and name not in _BUILTIN_NAMES:
            raise CompileError(_undeclared(expression, name))
    known = library.functions()
    for name in compiled.functions():
        if _ID_RE.match(name) and name not in known and name not in _BUILTIN_FUNCTIONS:
            raise CompileError(_undeclared(expression, name))
    return Program(expression, compiled, declared)


def _undeclared(expression: str, name: str) -> str:
    match = re.search(r"(?<![\w.])" + re.escape(name) + r"\b", expression)
    if match is None:
        match = re.search(re.escape(name), expression)
    offset = match.start() if match else 0
    return error_at(expression, offset, f"undeclared reference to '{name}' (in container '')")


def error_at(expression: str, offset: int, message: str) -> str:
    """A compile error as cel-go prints it: position, message, the source line and a
    caret under ``offset``."""
    line = expression.count("\n", 0, offset) + 1
    column = offset - (expression.rfind("\n", 0, offset) + 1)
    text_line = expression.split("\n")[line - 1]
    return f"ERROR: <input>:{line}:{column + 1}: {message}\n | {text_line}\n | {'.' * column}^"


def _macro_depths(source: str) -> list[int]:
    """The nesting depth (1 = outermost) of every comprehension call in ``source``."""
    depths: list[int] = []
    open_macros: list[int] = []  # paren depth at which each enclosing macro call opened
    paren = 0
    starts = {m.end() - 1 for m in _MACRO_CALL.finditer(source)}
    in_string: str | None = None
    for i, char in enumerate(source):
        if in_string:
            if char == in_string and source[i - 1] != "\\":
                in_string = None
            continue
        if char in "\"'":
            in_string = char
        elif char == "(":
            paren += 1
            if i in starts:
                open_macros.append(paren)
                depths.append(len(open_macros))
        elif char == ")":
            if open_macros and open_macros[-1] == paren:
                open_macros.pop()
            paren -= 1
    return depths


def element_count(value: Any, limit: int = 1_000_000) -> int:
    """The largest number of elements of one list, map or string inside ``value``."""
    best = 0
    stack = [value]
    seen = 0
    while stack and seen < limit:
        item = stack.pop()
        seen += 1
        if isinstance(item, Mapping):
            best = max(best, len(item))
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            best = max(best, len(item))
            stack.extend(item)
        elif isinstance(item, str):
            best = max(best, len(item) // 10)
    return best


def _wrap(name: str, function: Any) -> Any:
    def call(*args: Any) -> Any:
        try:
            return function(*args)
        except LibraryError as err:
            _failure.error = err
            raise
        except (TypeError, ValueError, ArithmeticError, KeyError, IndexError):
            _failure.error = no_such_overload()
            raise

    call.__name__ = name
    return call


_WRAPPED: dict[str, Any] = {}
_bound = threading.local()  # this thread's contexts and the activation being evaluated


def _bind(activation: Mapping[str, Any]) -> Any:
    """A context with the library functions whose variables are ``activation``.

    Building a context costs more than most evaluations, so each thread keeps its
    contexts and resolves variables through a resolver reading the activation of the
    evaluation under way. The resolver cannot answer null (None falls through), so
    variables bound to null are constants of their own context, one context per set
    of null-bound names."""
    contexts: dict[frozenset[str], Any] | None = getattr(_bound, "contexts", None)
    if contexts is None:
        contexts = _bound.contexts = {}
    nulls = frozenset(name for name, value in activation.items() if value is None)
    context = contexts.get(nulls)
    if context is None:
        context = engine.Context(dict.fromkeys(nulls), _wrapped_functions())
        context.set_variable_resolver(_resolve)
        contexts[nulls] = context
    _bound.activation = activation
    return context


def _resolve(name: str) -> Any:
    activation: Mapping[str, Any] = _bound.activation
    return activation.get(name)


def _wrapped_functions() -> dict[str, Any]:
    if not _WRAPPED:
        _WRAPPED.update({n: _wrap(n, f) for n, f in library.functions().items()})
    return _WRAPPED


def _eval_message(err: Exception, failure: LibraryError | None) -> str:
    if failure is not None:
        return str(failure)
    text = str(err)
    if isinstance(err, KeyError):
        return f"no such key: {text.strip(chr(39))}"
    if isinstance(err, ZeroDivisionError):
        return "division by zero" if "division" in text else "modulus by zero"
    if isinstance(err, OverflowError):
        return "integer overflow"
    if isinstance(err, IndexError):
        return text
    if text.startswith("Undefined variable or function"):
        name = text.split("'")[1] if "'" in text else text
        return f"no such attribute(s): {name}"
    if text.startswith("No such overload") or text.startswith("Unsupported operation"):
        return "no such overload"
    match = re.match(r"Function '(\w+)' error: (.*?)\. Check function", text)
    if match:
        return match.group(2)
    return text
