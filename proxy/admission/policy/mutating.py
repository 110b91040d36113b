"""The MutatingAdmissionPolicy plugin (kube's ``policy/mutating``; GA in 1.36, on by
default in 1.37), in the mutating phase before the mutating webhooks.

For each binding (by name) whose policy matches (``matchConstraints``, the binding's
``matchResources``), with each params object of its ``paramRef``: ``matchConditions``
must hold, ``variables`` are computed, then each of ``mutations`` changes the object:

- ``patchType: ApplyConfiguration``: ``applyConfiguration.expression`` builds a partial
  object (``Object{spec: Object.spec{replicas: 1}}``) merged into the object: maps key
  by key, anything else (lists included) replaced — upstream merges with server-side
  apply's rules, so lists with merge keys (``containers`` by name) are merged there;
- ``patchType: JSONPatch``: ``jsonPatch.expression`` gives a list of
  ``JSONPatch{op, path, value, from}`` applied in order.

Object construction is rewritten to map literals for the engine
(``proxy.admission.policy.object_literals``), without upstream's type checking. An
expression that errors, or a patch that cannot be applied, fails the request under
``failurePolicy: Fail`` (the default) and is skipped under ``Ignore``.
``reinvocationPolicy`` is not acted on (policies run once).
"""

from __future__ import annotations

import logging
from typing import Any

import jsonpatch

from proxy import apierrors, cel
from proxy.admission.attributes import Attributes
from proxy.admission.interfaces import Plugin, PluginDeps
from proxy.admission.policy.activation import Activation, evaluate
from proxy.admission.policy.matching import ParamsNotFound, applicable, params_for
from proxy.admission.policy.object_literals import rewrite

__all__ = ["MutatingAdmissionPolicy", "merge"]

log = logging.getLogger("watchcache.admission")

JSON = dict[str, Any]


class _Failed(Exception):
    pass


def merge(target: Any, patch: Any) -> Any:
    """``patch`` merged into ``target``: maps key by key (a null value removes the
    key), anything else replaced."""
    if not isinstance(target, dict) or not isinstance(patch, dict):
        return patch
    merged = dict(target)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge(target.get(key), value)
    return merged


class MutatingAdmissionPolicy(Plugin):
    name = "MutatingAdmissionPolicy"
    mutating = True

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        assert deps.sources is not None, "built without the configuration source"
        self.source = deps.sources

    async def admit(self, attrs: Attributes) -> None:
        if attrs.object is None:
            return
        async for policy, binding, namespace in applicable(
                self.source, "mutatingadmissionpolicies", attrs, self.lookup):  # fmt: skip
            await self._apply(policy, binding, attrs, namespace)

    async def _apply(self, policy: JSON, binding: JSON, attrs: Attributes,
                     namespace: JSON | None) -> None:
        pname, bname = policy["metadata"]["name"], binding["metadata"]["name"]
        ignore = (policy.get("spec") or {}).get("failurePolicy") == "Ignore"
        try:
            params_list = await params_for(policy, binding, attrs, self.lookup)
            for params in params_list:
                self._mutate(policy, attrs, Activation(attrs, params, namespace))
        except (ParamsNotFound, _Failed) as e:
            reason = str(e) or ("failed to configure binding: no params found for policy "
                                "binding with `Deny` parameterNotFoundAction")
            message = (f"MutatingAdmissionPolicy '{pname}' with binding '{bname}' denied "
                       f"request: {reason}")
            if ignore:
                log.info("%s (failurePolicy Ignore)", message)
                return
            raise apierrors.forbidden(attrs.resource.qualified, attrs.name, message) from None

    def _mutate(self, policy: JSON, attrs: Attributes, activation: Activation) -> None:
        spec = policy.get("spec") or {}
        for condition in spec.get("matchConditions") or ():
            if _run(str(condition.get("expression") or ""), activation) is False:
                return
        for variable in spec.get("variables") or ():
            activation.set_variable(str(variable.get("name")),
                                    _run(str(variable.get("expression") or ""), activation))
        for mutation in spec.get("mutations") or ():
            if mutation.get("patchType") == "JSONPatch":
                expression = str((mutation.get("jsonPatch") or {}).get("expression") or "")
                ops = cel.to_json(_run(expression, activation))
                try:
                    attrs.object = jsonpatch.apply_patch(attrs.object, ops)
                except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException,
                        TypeError) as e:
                    raise _Failed(f"JSONPatch '{expression}' could not be applied: {e}") from None
            else:
                expression = str((mutation.get("applyConfiguration") or {}).get("expression")
                                 or "")
                attrs.object = merge(attrs.object, cel.to_json(_run(rewrite(expression),
                                                                    activation)))
            activation.values["object"] = cel.from_json(attrs.object)


def _run(expression: str, activation: Activation) -> Any:
    try:
        return evaluate(rewrite(expression), activation)
    except (cel.CompileError, cel.EvalError) as e:
        raise _Failed(f"expression '{expression}' resulted in error: {e}") from None
