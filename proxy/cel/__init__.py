"""The server's CEL engine: one environment with Kubernetes' CEL libraries, compiled
programs cached, evaluation with named variables and a runtime cost limit.

Used by CRD validation rules (``self``, ``oldSelf``) and by admission policies
(``object``, ``oldObject``, ``request``, ``params``, ``namespaceObject``,
``variables``, ...)::

    program = cel.compile("self.replicas <= 5", {"self": cel.DYN})
    ok = program.evaluate({"self": cel.from_json(spec)}, cost_limit=cel.PER_CALL_LIMIT)

Errors: :class:`CompileError` from :func:`compile`, :class:`EvalError` (and its
:class:`CostLimitError`) from :meth:`Program.evaluate`. docs/cel.md says which engine
runs underneath and what it does not cover.
"""

from __future__ import annotations

from proxy.cel.environment import DYN, CelType, Program, compile, element_count
from proxy.cel.errors import CelError, CompileError, CostLimitError, EvalError
from proxy.cel.values import from_json, opaque, to_json, type_name

__all__ = [
    "DYN",
    "PER_CALL_LIMIT",
    "RUNTIME_CEL_COST_BUDGET",
    "CelError",
    "CelType",
    "CompileError",
    "CostLimitError",
    "EvalError",
    "Program",
    "compile",
    "element_count",
    "from_json",
    "opaque",
    "to_json",
    "type_name",
]

PER_CALL_LIMIT = 1_000_000
"""cel-go's per-evaluation limit Kubernetes sets (``celconfig.PerCallLimit``)."""

RUNTIME_CEL_COST_BUDGET = 10_000_000
"""The runtime budget of all rules of one custom resource write
(``celconfig.RuntimeCELCostBudget``)."""
