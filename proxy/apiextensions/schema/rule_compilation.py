"""The CEL side of validating a CRD's schema: the fields of each
``x-kubernetes-validations`` rule, compilation of ``rule`` and ``messageExpression``,
``oldSelf`` only where old values correlate, and the estimated cost of every rule
against ``StaticEstimatedCostLimit`` (per rule, times how many times it can run) and
of all rules against ``StaticEstimatedCRDCostLimit``.

Costs are the engine's estimates (docs/cel.md): collections without ``maxItems`` /
``maxProperties`` / ``maxLength`` are as large as a 3 MiB request allows, as upstream
assumes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from proxy import cel
from proxy.apiextensions.schema import field_check
from proxy.apiextensions.schema.rules import RULE_VARIABLES, parse_field_path
from proxy.apiextensions.schema.structural import Schema
from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList, GoLiteral

__all__ = [
    "CostTotal",
    "Site",
    "check_rule_fields",
    "check_total",
    "child_cardinality",
    "compile_node_rules",
]

STATIC_ESTIMATED_COST_LIMIT = 10_000_000
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000
_MAX_REQUEST_BYTES = 3 * 1024 * 1024
_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid",
            "FieldValueRequired"]  # fmt: skip
_TOTAL_COST_NAME = "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema"
_NEWLINES = re.compile(r"[\n\r]+")
_ADVICE = (
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where "
    "arrays, maps, and strings are declared)"
)


def check_rule_fields(schema: Schema, path: str, errs: ErrorList) -> None:
    """The static checks of each rule's fields (no compilation)."""
    for i, rule in enumerate(schema.get("x-kubernetes-validations") or ()):
        if not isinstance(rule, Mapping):
            continue
        at = f"{path}.x-kubernetes-validations[{i}]"
        text = str(rule.get("rule") or "")
        message = str(rule.get("message") or "")
        if not text.strip():
            errs.append(field.required(field.child(at, "rule"), "rule is not specified"))
        elif message and not message.strip():
            errs.append(
                field.invalid(
                    field.child(at, "message"), message, "message must be non-empty if specified"
                )
            )
        elif _NEWLINES.search(message.strip()):
            errs.append(
                field.invalid(
                    field.child(at, "message"), message, "message must not contain line breaks"
                )
            )
        elif _NEWLINES.search(text.strip()) and not message.strip():
            errs.append(
                field.required(
                    field.child(at, "message"),
                    "message must be specified if rule contains line breaks",
                )
            )
        expression = str(rule.get("messageExpression") or "")
        if expression and not expression.strip():
            errs.append(
                field.required(
                    field.child(at, "messageExpression"),
                    "messageExpression must be non-empty if specified",
                )
            )
        reason = rule.get("reason")
        if reason is not None and reason not in _REASONS:
            errs.append(field.not_supported(field.child(at, "reason"), reason, _REASONS))
        _check_field_path(rule.get("fieldPath"), schema, field.child(at, "fieldPath"), errs)


def _check_field_path(value: Any, schema: Schema, at: str, errs: ErrorList) -> None:
    if not isinstance(value, str) or not value:
        return
    if not value.strip():
        errs.append(field.invalid(at, value, "fieldPath must be non-empty if specified"))
    if _NEWLINES.search(value):
        errs.append(field.invalid(at, value, "fieldPath must not contain line breaks"))
    if isinstance(parse_field_path(value, schema), str):
        errs.append(field.invalid(at, value, "fieldPath must be a valid path"))


# ------------------------------------------------------------------ compilation


@dataclass
class CostTotal:
    """The estimated cost of every rule of one schema, and where each was."""

    total: int = 0
    expensive: list[tuple[int, str]] = dc_field(default_factory=list)

    def observe(self, path: str, cost: int) -> None:
        self.total += cost
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT // 100:
            return  # under 1% of the limit: never named as a contributor
        self.expensive.append((cost, path))
        self.expensive.sort(key=lambda e: -e[0])
        del self.expensive[4:]


def check_total(total: CostTotal, path: str) -> ErrorList:
    """The errors when all rules together exceed ``StaticEstimatedCRDCostLimit``."""
    errs: ErrorList = []
    if total.total <= STATIC_ESTIMATED_CRD_COST_LIMIT:
        return errs
    for _, where in total.expensive:
        errs.append(
            field.forbidden(
                where,
                "contributed to estimated rule cost total "
                "exceeding cost limit for entire OpenAPIv3 schema",
            )
        )
    errs.append(
        field.forbidden(
            path, _cost_message(_TOTAL_COST_NAME, total.total, STATIC_ESTIMATED_CRD_COST_LIMIT)
        )
    )
    return errs


def child_cardinality(schema: Schema, key: str, cardinality: int) -> int:
    """How many times a rule of ``schema[key]`` (``items`` or
    ``additionalProperties``) can run, given how often ``schema``'s can."""
    if key == "items":
        items = schema.get("items")
        return cardinality * _bound(
            schema.get("maxItems"), _min_size(items if isinstance(items, Mapping) else {})
        )
    return cardinality * _bound(schema.get("maxProperties"), 4)


@dataclass(frozen=True)
class Site:
    """Where the rules being compiled sit: their schema node, whether it is the
    resource root, how often they can run, and the uncorrelatable ancestor (if any)
    below which ``oldSelf`` is refused."""

    schema: Schema
    root: bool = False
    cardinality: int = 1
    forbid_old: str | None = None


def compile_node_rules(site: Site, path: str, errs: ErrorList, total: CostTotal) -> None:
    """Compile the rules of one schema node; append their errors and costs."""
    for i, rule in enumerate(site.schema.get("x-kubernetes-validations") or ()):
        if isinstance(rule, Mapping):
            _compile_rule(rule, f"{path}.x-kubernetes-validations[{i}]", site, errs, total)


def _compile(expression: str, site: Site) -> cel.Program:
    """Compile, then check the fields read from ``self`` against the schema."""
    program = cel.compile(expression, RULE_VARIABLES)
    problem = field_check.undefined_field(expression, site.schema, site.root)
    if problem is not None:
        raise cel.CompileError(problem)
    return program


def _compile_rule(
    rule: Mapping[str, Any], at: str, site: Site, errs: ErrorList, total: CostTotal
) -> None:
    text = str(rule.get("rule") or "")
    try:
        program = _compile(text, site)
    except cel.CompileError as err:
        errs.append(
            field.invalid(
                field.child(at, "rule"), _rule_literal(rule), f"compilation failed: {err.message}"
            )
        )
        return
    size = _max_elements(site.schema)
    strings = sum(_string_cost(s) for s in field_check.read_fields(text, site.schema, site.root))
    cost = (program.estimated_cost(size) + _string_cost(site.schema) + strings) * site.cardinality
    if cost > STATIC_ESTIMATED_COST_LIMIT:
        errs.append(
            field.forbidden(
                field.child(at, "rule"),
                _cost_message("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT),
            )
        )
    total.observe(field.child(at, "rule"), cost)
    _compile_message_expression(rule, at, site, errs, total)
    if "oldSelf" in program.references:
        if site.forbid_old is not None:
            errs.append(
                field.invalid(
                    field.child(at, "rule"),
                    text,
                    "oldSelf cannot be used on "
                    f"the uncorrelatable portion of the schema within {site.forbid_old}",
                )
            )
    elif rule.get("optionalOldSelf") is not None:
        errs.append(
            field.invalid(
                field.child(at, "optionalOldSelf"),
                rule["optionalOldSelf"],
                "may not be set if oldSelf is not used in rule",
            )
        )


def _compile_message_expression(
    rule: Mapping[str, Any], at: str, site: Site, errs: ErrorList, total: CostTotal
) -> None:
    expression = rule.get("messageExpression")
    if not isinstance(expression, str) or not expression.strip():
        return
    where = field.child(at, "messageExpression")
    try:
        program = _compile(expression, site)
    except cel.CompileError as err:
        errs.append(
            field.invalid(
                where, _rule_literal(rule), f"messageExpression compilation failed: {err.message}"
            )
        )
        return
    if not program.references:
        # a constant: evaluate it to check its type, as the checker would
        try:
            value = program.evaluate({})
        except cel.EvalError:
            value = ""
        if not isinstance(value, str):
            errs.append(
                field.invalid(
                    where, _rule_literal(rule), "messageExpression must evaluate to a string"
                )
            )
            return
    cost = program.estimated_cost(_max_elements(site.schema)) * site.cardinality
    if cost > STATIC_ESTIMATED_COST_LIMIT:
        errs.append(
            field.forbidden(
                where,
                _cost_message(
                    "estimated messageExpression cost", cost, STATIC_ESTIMATED_COST_LIMIT
                ),
            )
        )
    total.observe(where, cost)


def _rule_literal(rule: Mapping[str, Any]) -> GoLiteral:
    """``%#v`` of the internal ``apiextensions.ValidationRule``."""
    reason = "(*apiextensions.FieldValueErrorReason)(nil)"
    if rule.get("reason") is not None:
        reason = "(*apiextensions.FieldValueErrorReason)(0xc000a1b2c0)"
    optional = "(*bool)(nil)" if rule.get("optionalOldSelf") is None else "(*bool)(0xc000a1b2c8)"
    q = field.go_quote
    return GoLiteral(
        f"apiextensions.ValidationRule{{Rule:{q(str(rule.get('rule') or ''))}, "
        f"Message:{q(str(rule.get('message') or ''))}, "
        f"MessageExpression:{q(str(rule.get('messageExpression') or ''))}, Reason:{reason}, "
        f"FieldPath:{q(str(rule.get('fieldPath') or ''))}, OptionalOldSelf:{optional}}}"
    )


def _cost_message(name: str, cost: int, limit: int) -> str:
    factor = cost / limit
    if factor > 100.0:
        shown = "more than 100x"
    elif factor < 1.5:
        shown = f"{factor:f}x"
    else:
        shown = f"{factor:.1f}x"
    return f"{name} exceeds budget by factor of {shown} {_ADVICE}"


# ---------------------------------------------------------------- size bounds


def _min_size(schema: Schema) -> int:
    """The fewest bytes one serialized value of ``schema`` takes, plus a separator."""
    kind = schema.get("type")
    if kind == "string":
        return 3  # "",
    if kind in ("object", "array"):
        return 3  # {},
    if kind == "boolean":
        return 5  # true,
    return 2  # 0,


def _bound(declared: Any, min_size: int) -> int:
    if isinstance(declared, int) and not isinstance(declared, bool) and declared >= 0:
        return max(declared, 1)
    return _MAX_REQUEST_BYTES // min_size


def _max_elements(schema: Schema) -> int:
    """The largest collection ``self`` can hold (what comprehensions iterate)."""
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return _bound(
            schema.get("maxItems"), _min_size(items if isinstance(items, Mapping) else {})
        )
    if kind == "object" and schema.get("additionalProperties") is not None:
        return _bound(schema.get("maxProperties"), 4)
    if kind == "object":
        props = schema.get("properties")
        best = 0
        if isinstance(props, Mapping):
            for sub in props.values():
                if isinstance(sub, Mapping) and sub.get("type") in ("array", "object"):
                    best = max(best, _max_elements(sub))
        return max(best, len(props) if isinstance(props, Mapping) else 0)
    return 1


def _string_cost(schema: Schema) -> int:
    """String operations cost a tenth of the string's length in cel-go."""
    if schema.get("type") != "string" and not schema.get("x-kubernetes-int-or-string"):
        return 0
    return _bound(schema.get("maxLength"), 1) // 10
