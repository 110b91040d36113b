"""``x-kubernetes-validations``: evaluation of the CEL rules of a custom resource
(``pkg/apiserver/schema/cel/validation.go``) and the correlation of old values that
transition rules (``oldSelf``) and ratcheting need.

Rules of a node run before those of its children. ``self`` is the node's value;
``oldSelf`` the correlated old value: the same property, the same map key, the item
with the same key in a ``map`` list or the same value in a ``set`` list; items of
atomic lists have none. A rule that refers to ``oldSelf`` runs only when there is
one, unless it sets ``optionalOldSelf`` (then ``oldSelf`` is an optional).

The runtime cost of all rules of one object is bounded by
``RUNTIME_CEL_COST_BUDGET``, each evaluation by ``PER_CALL_LIMIT``, with the
engine's estimated costs (docs/cel.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proxy import cel
from proxy.apiextensions.schema.structural import (
    JSON,
    MISSING,
    Schema,
    correlated_children,
    map_value_schema,
)
from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList, FieldError

__all__ = ["RULE_VARIABLES", "parse_field_path", "validate_rules"]

RULE_VARIABLES: dict[str, cel.CelType] = {"self": cel.DYN, "oldSelf": cel.DYN}
_REASONS = ("FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired",
            "FieldValueDuplicate")  # fmt: skip
_OUT_OF_BUDGET = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)


class _Stop(Exception):
    """No further rules run (the budget is spent or one call exceeded its limit)."""


@dataclass
class _Budget:
    remaining: int


def validate_rules(obj: JSON, old: JSON, schema: Schema) -> ErrorList:
    """The errors of every rule of ``schema`` on ``obj`` (``old`` is
    :data:`validation.MISSING` on create)."""
    errs: ErrorList = []
    with contextlib.suppress(_Stop):
        _node(obj, old, schema, "", errs, _Budget(cel.RUNTIME_CEL_COST_BUDGET), root=True)
    return errs


def _node(
    value: JSON,
    old: JSON,
    schema: Schema,
    path: str,
    errs: ErrorList,
    budget: _Budget,
    root: bool = False,
) -> None:
    if value is None:
        return  # rules validate non-null values only
    if schema.get("x-kubernetes-validations"):
        _rules_of(value, old, schema, path, errs, budget, root)
    for item, old_item, sub, child in correlated_children(
        value, old, schema, path, root, keyed=True
    ):
        _node(item, old_item, sub, child, errs, budget)


def _self_value(value: JSON, root: bool) -> Any:
    if root and isinstance(value, Mapping):
        # at the root, metadata exposes only name and generateName (WithTypeAndObjectMeta)
        shown = dict(value)
        meta = value.get("metadata")
        if isinstance(meta, Mapping):
            shown["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
        return shown
    return value  # the engine converts (copies) values as it binds them


def _rules_of(
    value: JSON,
    old: JSON,
    schema: Schema,
    path: str,
    errs: ErrorList,
    budget: _Budget,
    root: bool,
) -> None:
    type_name = str(schema.get("type") or "")
    self_value = _self_value(value, root)
    old_value = MISSING if old is MISSING else _self_value(old, root)
    unchanged = old is not MISSING and old == value
    for rule in schema.get("x-kubernetes-validations") or ():
        if not isinstance(rule, Mapping) or not rule.get("rule"):
            continue
        _one_rule(rule, self_value, old_value, unchanged, schema, type_name, path, errs, budget)


def _one_rule(
    rule: Mapping[str, Any],
    self_value: Any,
    old_value: Any,
    unchanged: bool,
    schema: Schema,
    type_name: str,
    path: str,
    errs: ErrorList,
    budget: _Budget,
) -> None:
    text = str(rule["rule"])
    shown = str(rule.get("message") or "").strip() or text.strip()
    try:
        program = cel.compile(text, RULE_VARIABLES)
    except cel.CompileError as err:
        errs.append(field.invalid(path, type_name, f"rule compile error: {err.message}"))
        return
    optional_old = rule.get("optionalOldSelf") is True
    uses_old = "oldSelf" in program.references
    activation: dict[str, Any] = {"self": self_value}
    if optional_old:
        activation["oldSelf"] = (
            cel.optional_none() if old_value is MISSING else cel.optional_of(old_value)
        )
    elif uses_old:
        if old_value is MISSING:
            return  # transition rules need an old value
        activation["oldSelf"] = old_value
    cost = program.runtime_cost(cel.element_count(self_value) if program.iterates else 0)
    if cost > budget.remaining:
        errs.append(field.invalid(path, type_name, _OUT_OF_BUDGET))
        raise _Stop
    if cost > cel.PER_CALL_LIMIT:
        errs.append(
            field.invalid(
                path,
                type_name,
                f"'{cel.CostLimitError().message}': no further validation rules will be run "
                f"due to call cost exceeds limit for rule: {shown}",
            )
        )
        raise _Stop
    budget.remaining -= cost
    try:
        result = program.evaluate(activation)
    except cel.EvalError as err:
        if err.message.startswith("no such overload"):
            detail = (
                f"'{err.message}': call arguments did not match a supported operator, "
                f"function or macro signature for rule: {shown}"
            )
        else:
            detail = f"{err.message} evaluating rule: {shown}"
        errs.append(field.invalid(path, type_name, detail))
        return
    if result is True or (unchanged and not uses_old):
        return  # ratcheting: an unchanged value's failures are not errors
    errs.append(_failure(rule, activation, schema, type_name, self_value, path, budget))


def _failure(
    rule: Mapping[str, Any],
    activation: Mapping[str, Any],
    schema: Schema,
    type_name: str,
    self_value: Any,
    path: str,
    budget: _Budget,
) -> FieldError:
    detail = _message_expression(rule, activation, budget)
    if detail is None:
        message = str(rule.get("message") or "").strip()
        detail = message or f"failed rule: {str(rule['rule']).strip()}"
    target = path
    rule_path = rule.get("fieldPath")
    if isinstance(rule_path, str) and rule_path:
        normalized = parse_field_path(rule_path, schema)
        if isinstance(normalized, tuple):
            target = field.child(path, normalized[0])
    omit = type_name in ("object", "array")
    reason = rule.get("reason")
    if reason == "FieldValueForbidden":
        return field.forbidden(target, detail)
    if reason == "FieldValueRequired":
        return field.required(target, detail)
    if reason == "FieldValueDuplicate":
        if omit:
            return FieldError("FieldValueDuplicate", target, "Duplicate value")
        return field.duplicate(target, cel.to_json(self_value))
    if omit:
        return FieldError("FieldValueInvalid", target, f"Invalid value: {detail}")
    return field.invalid(target, cel.to_json(self_value), detail)


def _message_expression(
    rule: Mapping[str, Any], activation: Mapping[str, Any], budget: _Budget
) -> str | None:
    expression = rule.get("messageExpression")
    if not isinstance(expression, str) or not expression:
        return None
    try:
        program = cel.compile(expression, RULE_VARIABLES)
        budget.remaining -= program.runtime_cost(cel.element_count(activation.get("self")))
        result = program.evaluate(activation)
    except cel.CelError:
        return None  # upstream logs it and falls back to the rule's message
    if not isinstance(result, str):
        return None
    text = result.strip()
    if not text or "\n" in text or len(text) > 5 * 1024:
        return None
    return text


def parse_field_path(json_path: str, schema: Schema) -> tuple[str, Schema] | str:
    """A rule's ``fieldPath`` (``.a.b``, ``.a['k.x']``) resolved in ``schema``: the
    normalized path (``a.b``, ``a[k.x]``) and the schema it reaches, or the reason it
    is not valid (``ValidFieldPath``)."""
    tokens = _tokens(json_path)
    if isinstance(tokens, str):
        return tokens
    parts: list[str] = []
    node: Schema = schema
    for name in tokens:
        props = node.get("properties")
        if isinstance(props, Mapping):
            sub = props.get(name)
            if not isinstance(sub, Mapping):
                return "does not refer to a valid field"
            parts.append(("." if parts else "") + name)
            node = sub
        elif (extra := map_value_schema(node)) is not None:
            parts.append(f"[{name}]")
            node = extra
        else:
            return "does not refer to a valid field"
    return "".join(parts), node


def _tokens(json_path: str) -> list[str] | str:
    names: list[str] = []
    i = 0
    while i < len(json_path):
        char = json_path[i]
        if char == ".":
            end = i + 1
            while end < len(json_path) and json_path[end] not in ".[]":
                end += 1
            if end == i + 1:
                return "unexpected end of JSON path"
            names.append(json_path[i + 1 : end])
            i = end
        elif char == "[":
            close = json_path.find("']", i + 2)
            if not json_path.startswith("['", i) or close < 0:
                return f"expected single quoted string but got {json_path[i + 1 :]}"
            names.append(json_path[i + 2 : close].replace("\\'", "'").replace("\\\\", "\\"))
            i = close + 2
        else:
            token = re.match(r"[^.\[\]]*", json_path[i:])
            return f"expected [ or . but got: {token.group(0) if token else json_path[i:]}"
    return names
