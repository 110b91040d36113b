"""Field validation: upstream's field_validation_test.go bodies and expectations
(document order, unknown-and-duplicate reported once), pruning, schema causes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy import apierrors
from proxy.apimachinery.validation import field
from proxy.openapi.schemas import kind_schema
from proxy.registry.resources import ResourceInfo
from proxy.registry.validation.field_validation import (
    StrictDecodingError,
    find_duplicate_fields,
    prune_unknown_fields,
    strict_decoding_errors,
    validate_fields,
    validate_patched,
    validate_yaml_fields,
)
from proxy.registry.validation.request_body import validate_written
from proxy.registry.validation.schema import schema_violations
from proxy.request.warning import warning_header
from proxy.request.write_options import FieldValidationOptionError, parse_field_validation

DEPLOYMENT = kind_schema("apps", "v1", "Deployment")
POD = kind_schema("", "v1", "Pod")

# upstream's invalidBodyJSON (test/integration/apiserver/field_validation_test.go)
INVALID_BODY = b"""
{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "dupename",
    "name": "deployment",
    "labels": {"app": "nginx"},
    "unknownMeta": "metaVal"
  },
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {
        "containers": [{
          "name":  "nginx",
          "image": "nginx:latest",
          "unknownNested": "val1",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}
"""

UPSTREAM_ERRORS = [
    'duplicate field "metadata.name"',
    'unknown field "metadata.unknownMeta"',
    'unknown field "spec.unknown1"',
    'unknown field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    'unknown field "spec.template.spec.containers[0].unknownNested"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
]


def test_strict_decoding_errors_match_upstream_order_and_wording() -> None:
    assert strict_decoding_errors(INVALID_BODY, DEPLOYMENT) == UPSTREAM_ERRORS


def test_strict_mode_raises_upstream_message() -> None:
    obj = json.loads(INVALID_BODY)
    with pytest.raises(StrictDecodingError) as info:
        validate_fields(obj, DEPLOYMENT, "Strict", raw=INVALID_BODY)
    err = info.value
    assert str(err) == (
        'strict decoding error: duplicate field "metadata.name", unknown field '
        '"metadata.unknownMeta", unknown field "spec.unknown1", unknown field '
        '"spec.unknownDupe", duplicate field "spec.paused", unknown field '
        '"spec.template.spec.containers[0].unknownNested", duplicate field '
        '"spec.template.spec.containers[0].imagePullPolicy"'
    )
    assert err.for_create("Deployment", "v1").startswith(
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
    )


def test_warn_mode_prunes_and_warns_ignore_prunes_silently() -> None:
    obj = json.loads(INVALID_BODY)
    cleaned, warnings = validate_fields(obj, DEPLOYMENT, "Warn", raw=INVALID_BODY)
    assert warnings == UPSTREAM_ERRORS
    assert "unknownMeta" not in cleaned["metadata"]
    assert "unknown1" not in cleaned["spec"] and "unknownDupe" not in cleaned["spec"]
    container = cleaned["spec"]["template"]["spec"]["containers"][0]
    assert container == {"name": "nginx", "image": "nginx:latest", "imagePullPolicy": "Never"}
    assert cleaned["spec"]["paused"] is False  # the last duplicate wins, as in Go
    assert cleaned["metadata"]["labels"] == {"app": "nginx"}  # map keys are never unknown
    ignored, none = validate_fields(obj, DEPLOYMENT, "Ignore", raw=INVALID_BODY)
    assert none == []
    assert ignored == cleaned
    assert "unknown1" in obj["spec"]  # the input is not modified


def test_without_raw_body_only_unknown_fields_are_seen() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"foo": 1}}
    with pytest.raises(StrictDecodingError, match=r'unknown field "spec.foo"$'):
        validate_fields(obj, POD, "Strict")
    assert validate_fields(obj, POD, "Warn")[1] == ['unknown field "spec.foo"']


def test_clean_object_passes_strict() -> None:
    body = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"a":"b"}},'
    body += b'"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1"}}}]}}'
    obj = json.loads(body)
    assert validate_fields(obj, POD, "Strict", raw=body) == (obj, [])


def test_unknown_kind_reports_only_duplicates() -> None:
    body = b'{"spec": {"a": 1, "a": 2, "anything": {"x": [1]}}}'
    assert strict_decoding_errors(body, None) == ['duplicate field "spec.a"']
    assert find_duplicate_fields(body) == ["spec.a"]
    assert find_duplicate_fields(b'{"items":[{"k":1,"k":2}]}') == ["items[0].k"]


def test_preserve_unknown_and_raw_extension_fields_are_not_pruned() -> None:
    # metadata.managedFields[].fieldsV1 is free-form JSON: nothing in it is unknown.
    obj = {
        "metadata": {"managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
        "spec": {"containers": [{"name": "c", "bogus": True}]},
    }
    cleaned, removed = prune_unknown_fields(obj, POD)
    assert removed == ["spec.containers[0].bogus"]
    assert cleaned["metadata"] == obj["metadata"]


def test_parse_field_validation() -> None:
    assert parse_field_validation(None) == "Warn"
    assert parse_field_validation("") == "Warn"
    assert parse_field_validation("Strict") == "Strict"
    with pytest.raises(FieldValidationOptionError) as info:
        parse_field_validation("strict", "PatchOptions")
    assert str(info.value) == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: '
        '"strict": supported values: "", "Ignore", "Strict", "Warn"'
    )
    assert info.value.status_code == 422
    assert info.value.causes[0]["field"] == "fieldValidation"


def test_patch_strict_error_is_invalid_on_field_patch() -> None:
    err = StrictDecodingError(['unknown field "spec.foo"'])
    message, causes = err.for_patch({"spec": {"foo": 1}})
    assert message == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[foo:1]]": '
        'strict decoding error: unknown field "spec.foo"'
    )
    assert causes == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "map[spec:map[foo:1]]": '
            'strict decoding error: unknown field "spec.foo"',
            "field": "patch",
        }
    ]


def test_warning_header() -> None:
    assert warning_header('unknown field "spec.foo"') == '299 - "unknown field \\"spec.foo\\""'


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def test_schema_violations_name_the_field() -> None:
    obj = pod(
        containers=[{"image": "i", "ports": [{"containerPort": "80"}]}],
        terminationGracePeriodSeconds="30",
        hostNetwork="yes",
    )
    causes = schema_violations(obj, POD)
    assert [(c.type, c.field) for c in causes] == [
        ("FieldValueRequired", "spec.containers[0].name"),
        ("FieldValueTypeInvalid", "spec.containers[0].ports[0].containerPort"),
        ("FieldValueTypeInvalid", "spec.terminationGracePeriodSeconds"),
        ("FieldValueTypeInvalid", "spec.hostNetwork"),
    ]
    assert causes[1].body == (
        'Invalid value: "string": spec.containers[0].ports[0].containerPort in body must be '
        'of type integer: "string"'
    )
    assert field.to_status("Pod", "p", causes[:1]).message == (
        'Pod "p" is invalid: spec.containers[0].name: Required value'
    )
    assert field.to_status("Pod", "p", causes[:2]).message.startswith('Pod "p" is invalid: [spec.')
    assert field.to_status("Pod", "p", causes[:1]).body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value",
            "field": "spec.containers[0].name",
        }
    ]
    # kinds with their own validation do not get the schema's required fields
    assert [c.field for c in schema_violations(obj, POD, required=False)][:1] == [
        "spec.containers[0].ports[0].containerPort"
    ]


def test_schema_accepts_int_or_string_quantities_and_nulls_and_skips_status() -> None:
    obj = pod(
        containers=[
            {
                "name": "c",
                "resources": {"limits": {"cpu": 1, "memory": "1Gi"}, "requests": None},
                "livenessProbe": {"httpGet": {"port": "http"}},
                "readinessProbe": {"httpGet": {"port": 8080}},
            }
        ]
    )
    obj["status"] = {"containerStatuses": [{"name": "c"}]}  # image, ready ... missing
    assert schema_violations(obj, POD) == []
    assert schema_violations(obj, None) == []
    bad = pod(containers=[{"name": "c", "readinessProbe": {"httpGet": {"port": True}}}])
    assert [c.field for c in schema_violations(bad, POD)] == [
        "spec.containers[0].readinessProbe.httpGet.port"
    ]
    assert str(field.required("x")) == "x: Required value"


def test_validate_patched_reports_patch_duplicates_then_unknown_fields() -> None:
    raw = b'{"spec": {"replicas": 2, "replicas": 3, "bogus": 1}}'
    patched = {"kind": "Deployment", "spec": {"replicas": 3, "bogus": 1}}
    expected = ['duplicate field "spec.replicas"', 'unknown field "spec.bogus"']
    with pytest.raises(StrictDecodingError) as info:
        validate_patched(patched, DEPLOYMENT, "Strict", raw_patch=raw)
    assert info.value.errors == expected
    cleaned, warnings = validate_patched(patched, DEPLOYMENT, "Warn", raw_patch=raw)
    assert (cleaned, warnings) == ({"kind": "Deployment", "spec": {"replicas": 3}}, expected)
    assert validate_patched(patched, DEPLOYMENT, "Ignore", raw_patch=raw)[1] == []


# upstream's invalidBodyYAML
INVALID_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: dupename
  name: deployment
  unknownMeta: metaVal
  labels:
    app: nginx
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never"""


def test_yaml_body_strict_error_matches_upstream() -> None:
    with pytest.raises(StrictDecodingError) as info:
        validate_yaml_fields(INVALID_YAML, DEPLOYMENT, "Strict")
    assert str(info.value) == (
        "strict decoding error: yaml: unmarshal errors:\n"
        '  line 5: key "name" already set in map\n'
        '  line 12: key "unknownDupe" already set in map\n'
        '  line 14: key "paused" already set in map\n'
        '  line 28: key "imagePullPolicy" already set in map, '
        'unknown field "metadata.unknownMeta", '
        'unknown field "spec.template.spec.containers[0].unknownNested", '
        'unknown field "spec.unknown1", unknown field "spec.unknownDupe"'
    )


def test_yaml_body_warnings_are_one_per_line() -> None:
    cleaned, warnings = validate_yaml_fields(INVALID_YAML, DEPLOYMENT, "Warn")
    assert warnings == [
        'line 5: key "name" already set in map',
        'line 12: key "unknownDupe" already set in map',
        'line 14: key "paused" already set in map',
        'line 28: key "imagePullPolicy" already set in map',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
    ]
    assert cleaned["metadata"] == {"name": "deployment", "labels": {"app": "nginx"}}
    assert validate_yaml_fields(INVALID_YAML, DEPLOYMENT, "Ignore")[1] == []


# -- format: byte (base64) ---------------------------------------------------------------

_SECRET = ResourceInfo("", "v1", "Secret", "secrets", True, ("create",))
_APISERVICE = ResourceInfo("apiregistration.k8s.io", "v1", "APIService", "apiservices", False,
                           ("create",))  # fmt: skip


@pytest.mark.parametrize(
    ("text", "offset"),
    # kube-apiserver's answers for a Secret's data value
    [("!!!", 0), ("abc", 0), ("YQ", 0), ("abcde", 4), ("a=bc", 1), ("YQ==YQ==", 4),
     ("YQ=a", 2), ("YQ\nYQ==", 5), ("YQ==", None), ("YWI=", None), ("", None)],
)  # fmt: skip
def test_byte_fields_must_be_base64_as_go_decodes_them(text: str, offset: int | None) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"a": text}}
    if offset is None:
        validate_written(secret, None, _SECRET, "Warn", required=False)
        return
    with pytest.raises(apierrors.StatusError) as exc:
        validate_written(secret, None, _SECRET, "Warn", required=False)
    assert (exc.value.code, exc.value.body["message"]) == (
        400,
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input '
        f"byte {offset}",
    )


def test_a_ca_bundle_that_is_not_base64_is_400() -> None:
    """Upstream: APIService (and webhook configurations, CRD conversion webhooks) with
    a caBundle that is not base64 cannot be decoded: 400, nothing stored."""
    obj = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": "v1.x.example.com"},
           "spec": {"group": "x.example.com", "version": "v1", "caBundle": "!!notbase64",
                    "groupPriorityMinimum": 1, "versionPriority": 1}}  # fmt: skip
    with pytest.raises(apierrors.StatusError) as exc:
        validate_written(obj, None, _APISERVICE, "Warn", required=False)
    assert exc.value.body["message"] == (
        'APIService in version "v1" cannot be handled as a APIService: illegal base64 data at '
        "input byte 0"
    )
