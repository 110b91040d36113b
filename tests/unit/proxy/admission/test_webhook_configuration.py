"""Webhook configurations, ValidatingAdmissionPolicies and their bindings: their
validation with kube-apiserver's 422 messages (each compared with a real
kube-apiserver for the same object), and a webhook configuration that
got past validation (stored before it, or written to etcd directly) failing its call
per failurePolicy instead of crashing the request."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from proxy import apierrors
from proxy.admission.webhook import client
from proxy.kube.validation.strategies import BUILTIN_STRATEGIES
from proxy.registry.resources import ResourceInfo
from proxy.registry.validation.strategy import validate_create

JSON = dict[str, Any]
REG = "admissionregistration.k8s.io"
VWC = ResourceInfo(REG, "v1", "ValidatingWebhookConfiguration",
                   "validatingwebhookconfigurations", False, ("create",))  # fmt: skip
MWC = ResourceInfo(REG, "v1", "MutatingWebhookConfiguration",
                   "mutatingwebhookconfigurations", False, ("create",))  # fmt: skip
RULE: JSON = {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
              "resources": ["configmaps"]}  # fmt: skip


def _validate_create(obj: JSON, resource: ResourceInfo) -> None:
    """``validate_create`` with the kind's rules, as the composition root gives them."""
    validate_create(obj, resource, BUILTIN_STRATEGIES.get((resource.group, resource.kind)))


def configuration(kind: str, *webhooks: JSON) -> JSON:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "rv-bad"}, "webhooks": list(webhooks)}  # fmt: skip


def hook(url: str) -> JSON:
    return {"name": "a.b.c", "clientConfig": {"url": url}, "rules": [RULE],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}  # fmt: skip


def message(obj: JSON, resource: ResourceInfo) -> str:
    with pytest.raises(apierrors.StatusError) as exc:
        _validate_create(obj, resource)
    assert exc.value.code == 422
    text: str = exc.value.body["message"]
    return text


PREFIX = 'ValidatingWebhookConfiguration.admissionregistration.k8s.io "rv-bad" is invalid: '
FORM = "; desired format: https://host[/path]"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("not a url", "[webhooks[0].clientConfig.url: Invalid value: \"\": 'https' is the only "
         f"allowed URL scheme{FORM}, webhooks[0].clientConfig.url: Invalid value: \"\": host "
         f"must be specified{FORM}]"),
        ("http://127.0.0.1:1/x", "webhooks[0].clientConfig.url: Invalid value: \"http\": "
         f"'https' is the only allowed URL scheme{FORM}"),
        ("https://", 'webhooks[0].clientConfig.url: Invalid value: "": host must be '
         f"specified{FORM}"),
        ("https://127.0.0.1:1/x?q=1", 'webhooks[0].clientConfig.url: Invalid value: "q=1": '
         "query parameters are not permitted in the URL"),
        ("https://user@127.0.0.1/x", 'webhooks[0].clientConfig.url: Invalid value: "user": '
         "user information is not permitted in the URL"),
        ("https://127.0.0.1:1/x#f", 'webhooks[0].clientConfig.url: Invalid value: "f": '
         "fragments are not permitted in the URL"),
        ("https://[::1", 'webhooks[0].clientConfig.url: Required value: url must be a valid URL: '
         f"parse \"https://[::1\": missing ']' in host{FORM}"),
    ],
)  # fmt: skip
def test_webhook_urls_as_upstream(url: str, expected: str) -> None:
    assert message(configuration("ValidatingWebhookConfiguration", hook(url)), VWC) == (
        PREFIX + expected
    )


def test_good_urls_and_services_pass() -> None:
    for url in ("https://127.0.0.1:1/x", "https://h:99999/x", "https://h/x/"):
        _validate_create(configuration("ValidatingWebhookConfiguration", hook(url)), VWC)
    service = {**hook(""), "clientConfig": {"service": {"namespace": "ns", "name": "s"}}}
    _validate_create(configuration("MutatingWebhookConfiguration", service), MWC)


def test_every_webhook_field_as_upstream() -> None:
    """kube-apiserver's answer (causes in its order) for one configuration wrong
    everywhere it checks."""
    first = {
        "name": "ab",
        "clientConfig": {"service": {"namespace": "default", "name": "x", "port": 0, "path": "x"}},
        "rules": [
            {
                "operations": ["CREATE", "*"],
                "apiGroups": [],
                "apiVersions": ["v1"],
                "resources": [""],
            }
        ],
        "failurePolicy": "Maybe",
        "matchPolicy": "Some",
        "timeoutSeconds": 31,
        "sideEffects": "Some",
        "admissionReviewVersions": ["v9", "v9"],
    }
    second = {
        "name": "ab",
        "clientConfig": {"url": "https://u:p@h:1/x?q#f"},
        "rules": [],
        "sideEffects": "None",
        "admissionReviewVersions": [],
    }
    third = {"name": "a.b.c", "clientConfig": {"url": "https://h", "service": {}},
             "admissionReviewVersions": ["v1"]}  # fmt: skip
    obj = configuration("MutatingWebhookConfiguration", first, second, third)
    assert message(obj, MWC) == (
        'MutatingWebhookConfiguration.admissionregistration.k8s.io "rv-bad" is invalid: ['
        'webhooks[0].name: Invalid value: "ab": should be a domain with at least three segments '
        "separated by dots, webhooks[0].rules[0].operations: Invalid value: "
        '[]admissionregistration.OperationType{"CREATE", "*"}: if \'*\' is present, must not '
        "specify other operations, webhooks[0].rules[0].apiGroups: Required value, "
        "webhooks[0].rules[0].resources[0]: Required value, webhooks[0].failurePolicy: "
        'Unsupported value: "Maybe": supported values: "Fail", "Ignore", webhooks[0].matchPolicy: '
        'Unsupported value: "Some": supported values: "Equivalent", "Exact", '
        'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", '
        '"NoneOnDryRun", webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be '
        "between 1 and 30 seconds, webhooks[0].clientConfig.service.port: Invalid value: 0: port "
        "is not valid: must be between 1 and 65535, inclusive, "
        "webhooks[0].clientConfig.service.path: Invalid value: \"x\": must start with a '/', "
        'webhooks[0].clientConfig.service.path: Invalid value: "x": segment[0] may not be empty, '
        'webhooks[0].admissionReviewVersions[1]: Invalid value: "v9": duplicate version, '
        'webhooks[0].admissionReviewVersions: Invalid value: []string{"v9", "v9"}: must include '
        'at least one of v1, v1beta1, webhooks[1].name: Invalid value: "ab": should be a domain '
        "with at least three segments separated by dots, webhooks[1].clientConfig.url: Invalid "
        'value: "u:p": user information is not permitted in the URL, '
        'webhooks[1].clientConfig.url: Invalid value: "f": fragments are not permitted in the '
        'URL, webhooks[1].clientConfig.url: Invalid value: "q": query parameters are not '
        "permitted in the URL, webhooks[1].admissionReviewVersions: Required value: must specify "
        'one of v1, v1beta1, webhooks[1].name: Duplicate value: "ab", webhooks[2].sideEffects: '
        "Required value: must specify one of None, NoneOnDryRun, webhooks[2].clientConfig: "
        "Required value: exactly one of url or service is required]"
    )


@pytest.mark.parametrize(
    ("url", "ca_bundle"),
    [
        ("not a url", ""),
        ("https://", ""),
        ("https://127.0.0.1:1/x", base64.b64encode(b"garbage").decode()),
        ("https://127.0.0.1:1/x", "!!!"),
    ],
)
async def test_a_stored_bad_target_fails_the_call_not_the_server(url: str, ca_bundle: str) -> None:
    target = await client.resolve({"url": url, "caBundle": ca_bundle}, lookup=None)  # type: ignore[arg-type]
    with pytest.raises(client.WebhookCallError):
        await client.call(target, {"request": {"uid": "u"}}, 1)


VAP = ResourceInfo(REG, "v1", "ValidatingAdmissionPolicy", "validatingadmissionpolicies",
                   False, ("create",))  # fmt: skip
VAPB = ResourceInfo(REG, "v1", "ValidatingAdmissionPolicyBinding",
                    "validatingadmissionpolicybindings", False, ("create",))  # fmt: skip


def policy(kind: str, spec: JSON) -> JSON:
    return {"apiVersion": f"{REG}/v1", "kind": kind, "metadata": {"name": "rv-bad"},
            "spec": spec}  # fmt: skip


def test_an_empty_policy_as_upstream() -> None:
    assert message(policy("ValidatingAdmissionPolicy", {}), VAP) == (
        'ValidatingAdmissionPolicy.admissionregistration.k8s.io "rv-bad" is invalid: ['
        "spec.matchConstraints: Required value, spec.validations: Required value: validations "
        "or auditAnnotations must contain at least one item, spec.auditAnnotations: Required "
        "value: validations or auditAnnotations must contain at least one item]"
    )


def test_policy_expressions_are_compiled_as_upstream() -> None:
    spec = {"failurePolicy": "Maybe", "matchConstraints": {"resourceRules": [RULE]},
            "validations": [{"expression": "object.("}, {"expression": "1 +"},
                            {"expression": "", "reason": "Bogus"}]}  # fmt: skip
    assert message(policy("ValidatingAdmissionPolicy", spec), VAP) == (
        'ValidatingAdmissionPolicy.admissionregistration.k8s.io "rv-bad" is invalid: ['
        'spec.failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore", '
        'spec.validations[0].expression: Invalid value: "object.(": compilation failed: ERROR: '
        "<input>:1:8: Syntax error: no viable alternative at input '.('\n | object.(\n"
        ' | .......^, spec.validations[1].expression: Invalid value: "1 +": compilation failed: '
        "ERROR: <input>:1:4: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', "
        "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
        "IDENTIFIER}\n | 1 +\n | ...^, spec.validations[2].expression: Required value: "
        'expression is not specified, spec.validations[2].reason: Unsupported value: "Bogus": '
        'supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"]'
    )
    good = {"matchConstraints": {"resourceRules": [RULE]},
            "validations": [{"expression": "object.metadata.name != 'x'",
                             "messageExpression": "'no ' + object.metadata.name"}]}  # fmt: skip
    _validate_create(policy("ValidatingAdmissionPolicy", good), VAP)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, "[spec.policyName: Required value, spec.validationActions: Required value: at "
             "least one validation action is required]"),
        ({"policyName": "x", "validationActions": ["Deny", "Deny", "Boom"]},
         '[spec.validationActions[1]: Duplicate value: "Deny", spec.validationActions[2]: '
         'Unsupported value: "Boom": supported values: "Audit", "Deny", "Warn"]'),
        ({"policyName": "x", "validationActions": ["Deny", "Warn"]},
         "spec.validationActions: Invalid value: []admissionregistration.ValidationAction"
         '{"Deny", "Warn"}: must not contain both Deny and Warn (repeating the same validation '
         "failure information in the API response and headers serves no purpose)"),
    ],
)  # fmt: skip
def test_bindings_as_upstream(spec: JSON, expected: str) -> None:
    assert message(policy("ValidatingAdmissionPolicyBinding", spec), VAPB) == (
        'ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io "rv-bad" is invalid: '
        + expected
    )


def test_match_conditions_as_upstream() -> None:
    conditions = [{"name": "", "expression": ""}, {"name": "x", "expression": "params.x"},
                  {"name": "x", "expression": "true"},
                  {"name": "Bad Name", "expression": "object.("}]  # fmt: skip
    obj = configuration("ValidatingWebhookConfiguration",
                        {**hook("https://h/x"), "matchConditions": conditions})  # fmt: skip
    assert message(obj, VWC) == PREFIX + (
        "[webhooks[0].matchConditions[0].expression: Required value, "
        "webhooks[0].matchConditions[0].name: Required value, "
        'webhooks[0].matchConditions[1].expression: Invalid value: "params.x": compilation '
        "failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n"
        " | params.x\n | ^, webhooks[0].matchConditions[2].name: Duplicate value: \"x\", "
        'webhooks[0].matchConditions[3].expression: Invalid value: "object.(": compilation '
        "failed: ERROR: <input>:1:8: Syntax error: no viable alternative at input '.('\n"
        " | object.(\n | .......^, webhooks[0].matchConditions[3].name: Invalid value: "
        "\"Bad Name\": name part must consist of alphanumeric characters, '-', '_' or '.', and "
        "must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]"
    )
