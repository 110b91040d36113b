"""Webhook configuration validation (``k8s.io/kubernetes/pkg/apis/admissionregistration/
validation``: ``ValidateValidatingWebhookConfiguration`` and its mutating twin).

Checked as upstream, in its order: each webhook's fully qualified name, rules
(operations, groups, versions, resources, scope), ``failurePolicy``, ``matchPolicy``,
``reinvocationPolicy`` (mutating), ``sideEffects``, ``timeoutSeconds`` and client config
(``proxy.admission.webhook.validation``), then its
``admissionReviewVersions``, then duplicate names. Then its ``matchConditions``
(names, expressions compiled). Not checked here: label selectors.

ValidatingAdmissionPolicy (``validateValidatingAdmissionPolicySpec``): failurePolicy,
matchConstraints with resource rules, at least one validation or audit annotation, each
validation's expression compiled (cel-go's message), messageExpression, reason; its
binding: policyName, validationActions. Not checked: type checking (an expression of
the wrong result type is reported when it runs), paramKind, variables.
"""

from __future__ import annotations

from typing import Any

from proxy import cel
from proxy.admission.webhook.validation import validate_client_config
from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList, GoLiteral
from proxy.apimachinery.validation.go_values import string_slice
from proxy.apimachinery.validation.names import (
    is_dns1035_label,
    is_dns1123_subdomain,
    name_is_dns_subdomain,
)
from proxy.apimachinery.validation.object_meta import validate_object_meta, validate_qualified_name

__all__ = [
    "VALIDATORS",
    "validate_binding",
    "validate_binding_update",
    "validate_mutating",
    "validate_mutating_update",
    "validate_policy",
    "validate_policy_update",
    "validate_validating",
    "validate_validating_update",
]

JSON = dict[str, Any]
_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_SCOPES = ["*", "Cluster", "Namespaced"]
_REVIEW_VERSIONS = ["v1", "v1beta1"]


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _has_wildcard(values: list[Any]) -> bool:
    return len(values) > 1 and "*" in values


def _rule(rule: JSON, path: str) -> ErrorList:
    errs: ErrorList = []
    operations = _list(rule.get("operations"))
    ops_path = field.child(path, "operations")
    if not operations:
        errs.append(field.required(ops_path))
    if _has_wildcard(operations):
        literal = GoLiteral(
            "[]admissionregistration.OperationType{"
            + ", ".join(field.go_quote(str(o)) for o in operations)
            + "}"
        )
        errs.append(
            field.invalid(ops_path, literal, "if '*' is present, must not specify other operations")
        )
    for i, op in enumerate(operations):
        if op not in _OPERATIONS:
            errs.append(field.not_supported(field.index(ops_path, i), op, _OPERATIONS))
    for key, word in (("apiGroups", "API groups"), ("apiVersions", "API versions")):
        values = _list(rule.get(key))
        at = field.child(path, key)
        if not values:
            errs.append(field.required(at))
        if _has_wildcard(values):
            errs.append(
                field.invalid(
                    at, string_slice(values), f"if '*' is present, must not specify other {word}"
                )
            )
        if key == "apiVersions":
            errs += [field.required(field.index(at, i)) for i, v in enumerate(values) if not v]
    resources = _list(rule.get("resources"))
    at = field.child(path, "resources")
    if not resources:
        errs.append(field.required(at))
    errs += [field.required(field.index(at, i)) for i, r in enumerate(resources) if not r]
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(field.not_supported(field.child(path, "scope"), scope, _SCOPES))
    return errs  # fmt: skip


def _supported(hook: JSON, key: str, values: list[str], path: str) -> ErrorList:
    value = hook.get(key)
    if value is not None and value not in values:
        return [field.not_supported(field.child(path, key), value, values)]
    return []


def _webhook(hook: JSON, path: str, mutating: bool) -> ErrorList:
    name, name_path = str(hook.get("name") or ""), field.child(path, "name")
    errs: ErrorList = []
    if not name:
        errs.append(field.required(name_path))
    elif failures := is_dns1123_subdomain(name):
        errs.append(field.invalid(name_path, name, ",".join(failures)))
    elif len(name.split(".")) < 3:
        errs.append(field.invalid(name_path, name,
                                  "should be a domain with at least three segments separated "
                                  "by dots"))  # fmt: skip
    for i, rule in enumerate(_list(hook.get("rules"))):
        errs += _rule(_dict(rule), field.index(field.child(path, "rules"), i))
    errs += _supported(hook, "failurePolicy", ["Fail", "Ignore"], path)
    errs += _supported(hook, "matchPolicy", ["Equivalent", "Exact"], path)
    if mutating:
        errs += _supported(hook, "reinvocationPolicy", ["IfNeeded", "Never"], path)
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errs.append(field.required(field.child(path, "sideEffects"),
                                   "must specify one of None, NoneOnDryRun"))  # fmt: skip
    errs += _supported(hook, "sideEffects", ["None", "NoneOnDryRun"], path)
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        errs.append(
            field.invalid(
                field.child(path, "timeoutSeconds"),
                timeout,
                "the timeout value must be between 1 and 30 seconds",
            )
        )
    errs += validate_client_config(_dict(hook.get("clientConfig")),
                                   field.child(path, "clientConfig"))  # fmt: skip
    errs += _match_conditions(_list(hook.get("matchConditions")),
                              field.child(path, "matchConditions"))  # fmt: skip
    return errs


def _review_versions(versions: list[Any], path: str) -> ErrorList:
    if not versions:
        return [field.required(path, "must specify one of v1, v1beta1")]
    errs: ErrorList = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        version = str(version)
        if version in seen:
            errs.append(field.invalid(field.index(path, i), version, "duplicate version"))
            continue
        seen.add(version)
        errs += [field.invalid(field.index(path, i), version, m)
                 for m in is_dns1035_label(version)]  # fmt: skip
    if not seen.intersection(_REVIEW_VERSIONS):
        errs.append(field.invalid(path, string_slice([str(v) for v in versions]),
                                  "must include at least one of v1, v1beta1"))  # fmt: skip
    return errs


def _configuration(obj: JSON, mutating: bool) -> ErrorList:
    errs = validate_object_meta(_dict(obj.get("metadata")), False, name_is_dns_subdomain,
                                core=False)  # fmt: skip
    names: set[str] = set()
    for i, hook in enumerate(_list(obj.get("webhooks"))):
        hook, path = _dict(hook), field.index("webhooks", i)
        errs += _webhook(hook, path, mutating)
        errs += _review_versions(_list(hook.get("admissionReviewVersions")),
                                 field.child(path, "admissionReviewVersions"))  # fmt: skip
        name = str(hook.get("name") or "")
        if name and name in names:
            errs.append(field.duplicate(field.child(path, "name"), name))
        names.add(name)
    return errs


def validate_validating(obj: JSON) -> ErrorList:
    return _configuration(obj, mutating=False)


def validate_validating_update(new: JSON, old: JSON) -> ErrorList:
    return _configuration(new, mutating=False)


def validate_mutating(obj: JSON) -> ErrorList:
    return _configuration(obj, mutating=True)


def validate_mutating_update(new: JSON, old: JSON) -> ErrorList:
    return _configuration(new, mutating=True)


# the variables a policy's expressions may use (the admission plugin's declarations)
_POLICY_VARIABLES = {
    name: cel.DYN
    for name in (
        "object",
        "oldObject",
        "request",
        "params",
        "namespaceObject",
        "variables",
        "authorizer",
    )
}
_REASONS = ["Forbidden", "Invalid", "RequestEntityTooLarge"]
_ACTIONS = ["Audit", "Deny", "Warn"]


# a webhook's matchConditions see no params, namespace object or variables
_WEBHOOK_VARIABLES = {name: cel.DYN for name in ("object", "oldObject", "request", "authorizer")}


def _match_conditions(conditions: list[Any], path: str) -> ErrorList:
    """``validateMatchConditions``: per condition its expression (required, compiled),
    then its name (required, a qualified name, unique)."""
    errs: ErrorList = []
    names: set[str] = set()
    for i, condition in enumerate(conditions):
        condition, at = _dict(condition), field.index(path, i)
        expression = str(condition.get("expression") or "")
        if not expression:
            errs.append(field.required(field.child(at, "expression")))
        else:
            errs += _compiles(expression, field.child(at, "expression"), _WEBHOOK_VARIABLES)
        name = str(condition.get("name") or "")
        if not name:
            errs.append(field.required(field.child(at, "name")))
        else:
            errs += validate_qualified_name(name, field.child(at, "name"))
        if name and name in names:
            errs.append(field.duplicate(field.child(at, "name"), name))
        names.add(name)
    return errs


def _compiles(
    expression: str, path: str, variables: dict[str, cel.CelType] = _POLICY_VARIABLES
) -> ErrorList:
    try:
        cel.compile(expression, variables)
    except cel.CompileError as e:
        return [field.invalid(path, expression, f"compilation failed: {e.message}")]
    return []


def _validation(rule: JSON, path: str) -> ErrorList:
    errs: ErrorList = []
    expression = str(rule.get("expression") or "")
    if not expression.strip():
        errs.append(field.required(field.child(path, "expression"), "expression is not specified"))
    else:
        errs += _compiles(expression, field.child(path, "expression"))
    message_expression = str(rule.get("messageExpression") or "")
    at = field.child(path, "messageExpression")
    if message_expression and not message_expression.strip():
        errs.append(field.invalid(at, message_expression, "must be non-empty if specified"))
    elif message_expression:
        errs += _compiles(message_expression, at)
    errs += _supported(rule, "reason", _REASONS, path)
    return errs


def _policy(obj: JSON) -> ErrorList:
    errs = validate_object_meta(_dict(obj.get("metadata")), False, name_is_dns_subdomain,
                                core=False)  # fmt: skip
    spec = _dict(obj.get("spec"))
    errs += _supported(spec, "failurePolicy", ["Fail", "Ignore"], "spec")
    match = spec.get("matchConstraints")
    if not isinstance(match, dict):
        errs.append(field.required("spec.matchConstraints"))
    else:
        rules = _list(match.get("resourceRules"))
        for i, rule in enumerate(rules):
            errs += _rule(_dict(rule), f"spec.matchConstraints.resourceRules[{i}]")
        if not rules:
            errs.append(field.required("spec.matchConstraints.resourceRules"))
    validations = _list(spec.get("validations"))
    if not validations and not _list(spec.get("auditAnnotations")):
        for key in ("validations", "auditAnnotations"):
            errs.append(field.required(f"spec.{key}",
                                       "validations or auditAnnotations must contain at least "
                                       "one item"))  # fmt: skip
    for i, rule in enumerate(validations):
        errs += _validation(_dict(rule), f"spec.validations[{i}]")
    return errs


def validate_policy(obj: JSON) -> ErrorList:
    return _policy(obj)


def validate_policy_update(new: JSON, old: JSON) -> ErrorList:
    return _policy(new)


def _binding(obj: JSON) -> ErrorList:
    errs = validate_object_meta(_dict(obj.get("metadata")), False, name_is_dns_subdomain,
                                core=False)  # fmt: skip
    spec = _dict(obj.get("spec"))
    policy = str(spec.get("policyName") or "")
    if not policy:
        errs.append(field.required("spec.policyName"))
    else:
        errs += [field.invalid("spec.policyName", policy, m)
                 for m in name_is_dns_subdomain(policy, False)]  # fmt: skip
    actions = [str(a) for a in _list(spec.get("validationActions"))]
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in _ACTIONS:
            errs.append(field.not_supported(f"spec.validationActions[{i}]", action, _ACTIONS))
        if action in seen:
            errs.append(field.duplicate(f"spec.validationActions[{i}]", action))
        seen.add(action)
    if {"Deny", "Warn"} <= seen:
        literal = GoLiteral(
            "[]admissionregistration.ValidationAction{"
            + ", ".join(field.go_quote(a) for a in actions)
            + "}"
        )
        errs.append(field.invalid("spec.validationActions", literal,
                                  "must not contain both Deny and Warn (repeating the same "
                                  "validation failure information in the API response and "
                                  "headers serves no purpose)"))  # fmt: skip
    if not seen:
        errs.append(field.required("spec.validationActions",
                                   "at least one validation action is required"))  # fmt: skip
    return errs


def validate_binding(obj: JSON) -> ErrorList:
    return _binding(obj)


def validate_binding_update(new: JSON, old: JSON) -> ErrorList:
    return _binding(new)


# kind -> (create, update) validation, for the kinds' strategies
VALIDATORS = {
    "ValidatingWebhookConfiguration": (validate_validating, validate_validating_update),
    "MutatingWebhookConfiguration": (validate_mutating, validate_mutating_update),
    "ValidatingAdmissionPolicy": (validate_policy, validate_policy_update),
    "ValidatingAdmissionPolicyBinding": (validate_binding, validate_binding_update),
}
