"""The admissionregistration.k8s.io group's defaults
(``pkg/apis/admissionregistration/v1/defaults.go``): webhooks, their rules and service
references, and admission policies with their bindings."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, child, default_nil, dicts, member

__all__ = ["DEFAULTERS"]


def _rule(rule: JSON) -> None:
    """``SetDefaults_Rule``: scope ``*``."""
    default_nil(rule, "scope", "*")


def _webhook(hook: JSON, mutating: bool) -> None:
    """``SetDefaults_ValidatingWebhook`` / ``SetDefaults_MutatingWebhook``, their rules
    and ``SetDefaults_ServiceReference`` (port 443)."""
    default_nil(hook, "failurePolicy", "Fail")
    default_nil(hook, "matchPolicy", "Equivalent")
    default_nil(hook, "namespaceSelector", {})
    default_nil(hook, "objectSelector", {})
    default_nil(hook, "timeoutSeconds", 10)
    if mutating:
        default_nil(hook, "reinvocationPolicy", "Never")
    for rule in dicts(hook, "rules"):
        _rule(rule)
    config = member(hook, "clientConfig")
    service = member(config, "service") if config is not None else None
    if service is not None:
        default_nil(service, "port", 443)


def validating_webhook_configuration(obj: JSON) -> None:
    for hook in dicts(obj, "webhooks"):
        _webhook(hook, mutating=False)


def mutating_webhook_configuration(obj: JSON) -> None:
    for hook in dicts(obj, "webhooks"):
        _webhook(hook, mutating=True)


def _match_resources(match: JSON | None) -> None:
    """``SetDefaults_MatchResources`` and its rules' scope."""
    if match is None:
        return
    default_nil(match, "matchPolicy", "Equivalent")
    default_nil(match, "namespaceSelector", {})
    default_nil(match, "objectSelector", {})
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in dicts(match, key):
            _rule(rule)


def admission_policy(obj: JSON) -> None:
    """``SetDefaults_ValidatingAdmissionPolicySpec`` (and the mutating policy's):
    failurePolicy Fail; its matchConstraints."""
    spec = child(obj, "spec")
    if spec is not None:
        default_nil(spec, "failurePolicy", "Fail")
        _match_resources(member(spec, "matchConstraints"))


def admission_policy_binding(obj: JSON) -> None:
    """A binding's matchResources and ``SetDefaults_ParamRef`` (Deny when the param is
    missing)."""
    spec = member(obj, "spec")
    if spec is None:
        return
    _match_resources(member(spec, "matchResources"))
    if (param_ref := member(spec, "paramRef")) is not None:
        default_nil(param_ref, "parameterNotFoundAction", "Deny")


DEFAULTERS: dict[str, Callable[[JSON], None]] = {
    "ValidatingWebhookConfiguration": validating_webhook_configuration,
    "MutatingWebhookConfiguration": mutating_webhook_configuration,
    "ValidatingAdmissionPolicy": admission_policy,
    "MutatingAdmissionPolicy": admission_policy,
    "ValidatingAdmissionPolicyBinding": admission_policy_binding,
    "MutatingAdmissionPolicyBinding": admission_policy_binding,
}
