"""Field errors and ObjectMeta validation: apimachinery's ``field/errors_test.go`` and
``api/validation/objectmeta_test.go`` cases, with upstream's message formats."""

from __future__ import annotations

from proxy.apimachinery.validation import field, go_values
from proxy.apimachinery.validation.names import name_is_dns_subdomain
from proxy.apimachinery.validation.object_meta import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    validate_annotations,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
)


def _bodies(errs: list[field.FieldError]) -> list[str]:
    return [str(e) for e in errs]


def test_error_bodies_print_values_as_go_does() -> None:
    assert str(field.required("a.b")) == "a.b: Required value"
    assert str(field.required("a", "why")) == "a: Required value: why"
    assert str(field.invalid("a", "x\ty", "bad")) == 'a: Invalid value: "x\\ty": bad'
    assert str(field.invalid("a", 7, "bad")) == "a: Invalid value: 7: bad"
    assert str(field.invalid("a", True, "bad")) == "a: Invalid value: true: bad"
    assert str(field.invalid("a", None, "bad")) == 'a: Invalid value: "null": bad'
    assert str(field.invalid("a", 1.5, "bad")) == "a: Invalid value: 1.5: bad"
    assert str(field.duplicate("a", "x")) == 'a: Duplicate value: "x"'
    assert str(field.not_found("a", "x")) == 'a: Not found: "x"'
    assert str(field.not_supported("a", "x", ["b", "c"])) == (
        'a: Unsupported value: "x": supported values: "b", "c"'
    )
    assert str(field.forbidden("a", "no")) == "a: Forbidden: no"
    assert str(field.too_long("a", 10)) == "a: Too long: may not be more than 10 bytes"
    assert str(field.too_many("a", 5, 3)) == "a: Too many: 5: must have at most 3 items"
    assert field.type_invalid("a", "s", "d").type == "FieldValueTypeInvalid"
    assert str(field.invalid("a", go_values.string_slice(["x", "y"]), "d")) == (
        'a: Invalid value: []string{"x", "y"}: d'
    )
    assert go_values.string_map({"b": "2", "a": "1"}).text == 'map[string]string{"a":"1", "b":"2"}'
    assert go_values.string_map(None).text == "map[string]string(nil)"


def test_new_invalid_aggregates_once_and_keeps_every_cause() -> None:
    errs = [field.required("a"), field.invalid("b", "x", "bad"), field.required("a")]
    status = field.to_status("Deployment.apps", "d", errs).body
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["message"] == (
        'Deployment.apps "d" is invalid: [a: Required value, b: Invalid value: "x": bad]'
    )
    assert status["details"]["name"] == "d"
    assert status["details"]["group"] == "apps" and status["details"]["kind"] == "Deployment"
    assert [c["field"] for c in status["details"]["causes"]] == ["a", "b", "a"]
    one = field.to_status("Pod", "p", [field.required("a"), field.required("a")])
    assert one.message == 'Pod "p" is invalid: a: Required value'


def _meta(**kw: object) -> dict[str, object]:
    return {"name": "test", "namespace": "test", **kw}


def test_object_meta_name_namespace_and_generate_name() -> None:
    errs = validate_object_meta({"namespace": "ns"}, True, name_is_dns_subdomain)
    assert _bodies(errs) == ["metadata.name: Required value: name or generateName is required"]
    errs = validate_object_meta({"name": "x"}, True, name_is_dns_subdomain)
    assert _bodies(errs) == ["metadata.namespace: Required value"]
    errs = validate_object_meta({"name": "x", "namespace": "n"}, False, name_is_dns_subdomain)
    assert _bodies(errs) == ["metadata.namespace: Forbidden: not allowed on this type"]
    errs = validate_object_meta(
        {"name": "x", "generateName": "Bad-", "namespace": "n"}, True, name_is_dns_subdomain
    )
    assert [e.field for e in errs] == ["metadata.generateName"]
    errs = validate_object_meta(_meta(generation=-1), True, name_is_dns_subdomain)
    assert _bodies(errs) == [
        "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_owner_references() -> None:
    ok = {"apiVersion": "customresourceVersion", "kind": "k", "name": "name", "uid": "1"}
    assert validate_object_meta(_meta(ownerReferences=[ok]), True, name_is_dns_subdomain) == []
    event = {"apiVersion": "v1", "kind": "Event", "name": "name", "uid": "1"}
    errs = validate_object_meta(_meta(ownerReferences=[event]), True, name_is_dns_subdomain)
    assert errs[0].body.endswith("/v1, Kind=Event is disallowed from being an owner")
    two = [
        {**ok, "kind": "customresourceKind2", "uid": "2", "controller": True},
        {**ok, "kind": "customresourceKind3", "uid": "3", "controller": True},
    ]
    errs = validate_object_meta(_meta(ownerReferences=two), True, name_is_dns_subdomain)
    assert errs[0].body.endswith(
        'Only one reference can have Controller set to true. Found "true" in references for '
        "customresourceKind2/name and customresourceKind3/name"
    )
    empty = {"apiVersion": "", "kind": "", "name": "", "uid": ""}
    errs = validate_object_meta(_meta(ownerReferences=[empty]), True, name_is_dns_subdomain)
    assert _bodies(errs) == [
        'metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": kind must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
    ]


def test_finalizers() -> None:
    both = _meta(finalizers=["orphan", "foregroundDeletion"])
    errs = validate_object_meta(both, True, name_is_dns_subdomain)
    assert _bodies(errs) == [
        'metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: '
        "finalizer orphan and foregroundDeletion cannot be both set"
    ]
    errs = validate_object_meta(_meta(finalizers=["custom"]), True, name_is_dns_subdomain)
    assert _bodies(errs) == [
        'metadata.finalizers[0]: Invalid value: "custom": name is neither a standard '
        "finalizer name nor is it fully qualified"
    ]
    old = _meta(deletionTimestamp="2024-01-02T03:04:05Z", finalizers=["x/a"])
    new = {**old, "finalizers": ["x/a", "y/b"]}
    assert _bodies(validate_object_meta_update(new, old)) == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        'deleted, found new finalizers []string{"y/b"}'
    ]
    assert validate_object_meta_update({**old, "finalizers": []}, old) == []
    live = _meta(finalizers=["x/a"])
    assert validate_object_meta_update({**live, "finalizers": ["x/a", "y/b"]}, live) == []


def test_update_keeps_identity_fields() -> None:
    old = _meta(uid="u1", creationTimestamp="2024-01-02T03:04:05Z")
    errs = validate_object_meta_update({**old, "uid": "u2"}, old)
    assert _bodies(errs) == ['metadata.uid: Invalid value: "u2": field is immutable']
    errs = validate_object_meta_update({**old, "creationTimestamp": "2025-01-02T03:04:05Z"}, old)
    assert _bodies(errs) == [
        "metadata.creationTimestamp: Invalid value: 2025-01-02 03:04:05 +0000 UTC: field is "
        "immutable"
    ]
    errs = validate_object_meta_update({**old, "generation": 1}, {**old, "generation": 2})
    assert _bodies(errs) == ["metadata.generation: Invalid value: 1: must not be decremented"]


def test_annotations() -> None:
    for good in ({"simple": "bar"}, {"1.2.3.4/5678": "bar"}, {"UpperCase123": "bar"},
                 {"a": "b" * (TOTAL_ANNOTATION_SIZE_LIMIT - 1)}):  # fmt: skip
        assert validate_annotations(good, "a") == [], good
    errs = validate_annotations({"only/one/slash": "bar"}, "metadata.annotations")
    assert len(errs) == 1 and "a qualified name must consist" in errs[0].body
    errs = validate_annotations({"a" * 254: "bar"}, "f")
    assert len(errs) == 1 and "name part must be no more than 63 characters" in errs[0].body
    big = {"a": "b" * TOTAL_ANNOTATION_SIZE_LIMIT}
    assert _bodies(validate_annotations(big, "metadata.annotations")) == [
        "metadata.annotations: Too long: may not be more than 262144 bytes"
    ]


def test_labels_and_selectors() -> None:
    errs = validate_labels({"app": "-bad"}, "metadata.labels")
    assert errs[0].field == "metadata.labels" and errs[0].body.startswith('Invalid value: "-bad"')
    selector = {"matchExpressions": [{"key": "a", "operator": "In"},
                                     {"key": "b", "operator": "Exists", "values": ["x"]},
                                     {"key": "c", "operator": "Near"}]}  # fmt: skip
    assert _bodies(validate_label_selector(selector, "spec.selector")) == [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'",
        "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when "
        "`operator` is 'Exists' or 'DoesNotExist'",
        'spec.selector.matchExpressions[2].operator: Invalid value: "Near": not a valid '
        "selector operator",
    ]
