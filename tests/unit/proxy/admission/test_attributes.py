"""The request-scoped sinks admission writes and audit reads."""

from __future__ import annotations

from aiohttp.test_utils import make_mocked_request

from proxy.admission.attributes import (
    add_audit_annotation,
    add_warning,
    audit_annotations,
    request_warnings,
)


def test_audit_annotations_first_value_wins() -> None:
    request = make_mocked_request("POST", "/api/v1/namespaces/a/pods")
    assert audit_annotations(request) == {}
    add_audit_annotation(request, "pod-security.kubernetes.io/enforce-policy", "baseline:latest")
    add_audit_annotation(request, "pod-security.kubernetes.io/enforce-policy", "restricted:v1.30")
    add_audit_annotation(request, "hook.example.com/seen", "true")
    assert audit_annotations(request) == {
        "pod-security.kubernetes.io/enforce-policy": "baseline:latest",
        "hook.example.com/seen": "true"}
    add_audit_annotation(None, "k", "v")  # no request (a unit of admission alone): ignored


def test_warnings_in_order_without_repeats() -> None:
    request = make_mocked_request("POST", "/api/v1/namespaces/a/pods")
    for text in ("b", "a", "b", ""):
        add_warning(request, text)
    assert request_warnings(request) == ["b", "a"]
