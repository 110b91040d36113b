"""A webhook's ``matchConditions``: CEL expressions over ``object``, ``oldObject`` and
``request`` that must all be true for the hook to be called (kube's ``matchconditions``
matcher). A false condition skips the hook; one that cannot be compiled or evaluated is
a failed call (``failed to evaluate match conditions``), handled per failurePolicy.
``authorizer`` has no value here (docs/admission.md)."""

from __future__ import annotations

from typing import Any

from proxy import cel
from proxy.admission.attributes import Attributes
from proxy.admission.policy.activation import Activation, evaluate
from proxy.admission.webhook.review import CallFailed

__all__ = ["hold"]

JSON = dict[str, Any]


async def hold(spec: JSON, attrs: Attributes) -> bool:
    """Whether every match condition of ``spec`` is true; ``CallFailed`` on an error."""
    conditions = spec.get("matchConditions") or ()
    if not conditions:
        return True
    activation = Activation(attrs)
    errors = []
    for condition in conditions:
        try:
            value = evaluate(str(condition.get("expression") or ""), activation)
        except (cel.CompileError, cel.EvalError) as e:
            errors.append(f"{condition.get('name', '')}: {e}")
            continue
        if value is False:
            return False  # any false condition skips the hook, even after errors
    if errors:
        raise CallFailed(f"failed to evaluate match conditions: {'; '.join(errors)}")
    return True
