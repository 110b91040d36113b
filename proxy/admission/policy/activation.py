"""The CEL variables of admission expressions (kube's ``cel.Filter`` inputs):
``object``, ``oldObject``, ``request``, ``params``, ``namespaceObject``, ``variables``.
``authorizer`` is declared but has no value here (``proxy.cel`` has no authz library).

Expressions run on the shared engine (``proxy.cel``): small rules take microseconds, so
they run inline on the event loop.
"""

from __future__ import annotations

from typing import Any

from proxy import cel
from proxy.admission.attributes import Attributes
from proxy.admission.webhook.review import create_review

__all__ = ["DECLARED", "Activation", "evaluate"]

JSON = dict[str, Any]

DECLARED: dict[str, cel.CelType] = {name: cel.DYN for name in (
    "object", "oldObject", "request", "params", "namespaceObject", "variables", "authorizer")}


def request_of(attrs: Attributes) -> JSON:
    """The ``request`` variable: the AdmissionRequest without its objects."""
    request = dict(create_review(attrs)["request"])
    for key in ("object", "oldObject"):
        request.pop(key, None)
    return request


class Activation:
    """The bound variables of one evaluation (``variables`` grows as they are
    computed, each seeing the ones before it)."""

    def __init__(self, attrs: Attributes, params: JSON | None = None,
                 namespace: JSON | None = None) -> None:
        self.values: dict[str, Any] = {
            "object": cel.from_json(attrs.object),
            "oldObject": cel.from_json(attrs.old_object),
            "request": cel.from_json(request_of(attrs)),
            "params": cel.from_json(params),
            "namespaceObject": cel.from_json(namespace),
        }
        self._variables: JSON = {}
        self.values["variables"] = cel.from_json(self._variables)

    def set_variable(self, name: str, value: Any) -> None:
        self._variables[name] = cel.to_json(value)
        self.values["variables"] = cel.from_json(self._variables)


def evaluate(expression: str, activation: Activation) -> Any:
    """The value of ``expression``; ``cel.CompileError`` / ``cel.EvalError``."""
    program = cel.compile(expression, DECLARED)
    return program.evaluate(activation.values, cost_limit=cel.PER_CALL_LIMIT)
