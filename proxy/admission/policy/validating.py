"""The ValidatingAdmissionPolicy plugin (kube's ``policy/validating``).

For each binding (sorted by name) whose policy exists and whose match (the policy's
``matchConstraints``, then the binding's ``matchResources``) covers the request, with
each params object of its ``paramRef``: the policy's ``matchConditions`` must hold,
its ``variables`` are computed in order, then each ``validations`` expression must be
true. A false one gives ``message``, else ``messageExpression``'s value, else
``failed expression: <expr>``, and is acted on per the binding's
``validationActions``:

- Deny: ``<resource> "<name>" is forbidden: ValidatingAdmissionPolicy 'p' with binding
  'b' denied request: <message>``, code by ``reason`` (Invalid 422 by default,
  Forbidden 403, Unauthorized 401, RequestEntityTooLarge 413);
- Warn: ``Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b':
  <message>`` as a Warning;
- Audit: the ``validation.policy.admission.k8s.io/validation_failure`` audit annotation.

An expression that errors is a failure ``expression '<expr>' resulted in error: <err>``
under ``failurePolicy: Fail`` (the default) and ignored under ``Ignore``.
``auditAnnotations`` add ``<policy>/<key>`` annotations.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from proxy import apierrors, cel
from proxy.admission.attributes import Attributes
from proxy.admission.chain import PluginDeps
from proxy.admission.interfaces import Plugin
from proxy.admission.policy.activation import Activation, evaluate
from proxy.admission.policy.matching import ParamsNotFound, applicable, params_for

__all__ = ["ValidatingAdmissionPolicy"]

log = logging.getLogger("watchcache.admission")

JSON = dict[str, Any]

_CODES = {"Invalid": 422, "Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413}


class _Failure(Exception):
    def __init__(self, message: str, reason: str = "Invalid", index: int = 0) -> None:
        super().__init__(message)
        self.message, self.reason, self.index = message, reason, index


def _deny(attrs: Attributes, text: str, reason: str) -> apierrors.StatusError:
    res, _, group = attrs.resource.qualified.partition(".")
    details: JSON = {"name": attrs.name}
    if group:
        details["group"] = group
    details["kind"] = res
    details["causes"] = [{"message": text}]
    return apierrors.StatusError(apierrors.status_body(
        _CODES.get(reason, 422), reason,
        f'{attrs.resource.qualified} "{attrs.name}" is forbidden: {text}', details))


class ValidatingAdmissionPolicy(Plugin):
    name = "ValidatingAdmissionPolicy"
    validating = True

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        assert deps.sources is not None, "built without the configuration source"
        self.source = deps.sources

    async def validate(self, attrs: Attributes) -> None:
        async for policy, binding, namespace in applicable(
                self.source, "validatingadmissionpolicies", attrs, self.lookup):  # fmt: skip
            await self._apply(policy, binding, attrs, namespace)

    async def _apply(self, policy: JSON, binding: JSON, attrs: Attributes,
                     namespace: JSON | None) -> None:
        pname, bname = policy["metadata"]["name"], binding["metadata"]["name"]
        prefix = f"ValidatingAdmissionPolicy '{pname}' with binding '{bname}'"
        actions = list((binding.get("spec") or {}).get("validationActions") or ())
        ignore = (policy.get("spec") or {}).get("failurePolicy") == "Ignore"
        try:
            params_list = await params_for(policy, binding, attrs, self.lookup)
        except ParamsNotFound:
            if not ignore:
                raise _deny(attrs, f"{prefix} denied request: failed to configure binding: "
                            "no params found for policy binding with `Deny` "
                            "parameterNotFoundAction", "Invalid") from None
            return
        for params in params_list:
            try:
                failure = self._evaluate(policy, attrs, Activation(attrs, params, namespace))
            except _Failure as e:  # an expression that errored
                if ignore:
                    log.info("%s: %s (failurePolicy Ignore)", prefix, e.message)
                    continue
                failure = e
            if failure is not None:
                self._act(attrs, actions, prefix, pname, bname, failure)

    def _evaluate(self, policy: JSON, attrs: Attributes, activation: Activation) -> _Failure | None:
        """The first failed validation, or None; _Failure raised for an error."""
        spec = policy.get("spec") or {}
        for condition in spec.get("matchConditions") or ():
            if self._run(str(condition.get("expression") or ""), activation) is False:
                return None
        for variable in spec.get("variables") or ():
            activation.set_variable(str(variable.get("name")),
                                    self._run(str(variable.get("expression") or ""), activation))
        for annotation in spec.get("auditAnnotations") or ():
            value = self._run(str(annotation.get("valueExpression") or ""), activation)
            if value is not None:
                attrs.add_annotation(f"{policy['metadata']['name']}/{annotation.get('key')}",
                                     str(cel.to_json(value)))
        for index, validation in enumerate(spec.get("validations") or ()):
            expression = str(validation.get("expression") or "")
            if self._run(expression, activation) is True:
                continue
            message = validation.get("message")
            if not message and validation.get("messageExpression"):
                try:
                    message = str(cel.to_json(evaluate(validation["messageExpression"],
                                                       activation)))
                except (cel.CompileError, cel.EvalError):
                    message = ""
            return _Failure(message or f"failed expression: {expression}",
                            str(validation.get("reason") or "Invalid"), index)
        return None

    @staticmethod
    def _run(expression: str, activation: Activation) -> Any:
        try:
            return evaluate(expression, activation)
        except (cel.CompileError, cel.EvalError) as e:
            raise _Failure(f"expression '{expression}' resulted in error: {e}") from None

    @staticmethod
    def _act(attrs: Attributes, actions: list[str], prefix: str, pname: str, bname: str,
             failure: _Failure) -> None:
        if "Audit" in actions:
            record = [{"message": failure.message, "policy": pname, "binding": bname,
                       "expressionIndex": failure.index, "validationActions": actions}]
            attrs.add_annotation("validation.policy.admission.k8s.io/validation_failure",
                                 orjson.dumps(record).decode())
        if "Warn" in actions:
            attrs.add_warning(f"Validation failed for {prefix}: {failure.message}")
        if "Deny" in actions:
            raise _deny(attrs, f"{prefix} denied request: {failure.message}", failure.reason)
