"""validate_crd against kube-apiserver's answers: each case of
crd_validation_cases.json is a CRD posted to a real kube-apiserver (dryRun) with the
causes of the 422 it answered (reason, field, message), as in upstream's
pkg/apis/apiextensions/validation/validation_test.go tables."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from proxy.apiextensions.schema import validate_crd

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "crd_validation_cases.json").read_text()
)


def _defaulted(crd: dict[str, Any]) -> dict[str, Any]:
    """The CRD as SetDefaults_CustomResourceDefinition leaves it."""
    crd = copy.deepcopy(crd)
    names = crd["spec"].setdefault("names", {})
    if names.get("kind"):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    crd["spec"].setdefault("conversion", {"strategy": "None"})
    return crd


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_crd_validation_matches_kube_apiserver(case: dict[str, Any]) -> None:
    got = sorted((e.type, e.field, e.body) for e in validate_crd(_defaulted(case["crd"]), None))
    expected = sorted((c["reason"], c["field"], c["message"]) for c in case["causes"])
    assert got == expected


def _widget(**spec: Any) -> dict[str, Any]:
    crd = _defaulted(CASES[0]["crd"])
    crd["spec"].update(spec)
    return crd


def _established(crd: dict[str, Any]) -> dict[str, Any]:
    crd = copy.deepcopy(crd)
    crd["status"] = {
        "storedVersions": ["v1"],
        "conditions": [{"type": "Established", "status": "True"}],
    }
    return crd


def _renamed_version(crd: dict[str, Any]) -> None:
    crd["spec"]["versions"][0]["name"] = "v2"


def _status_root(crd: dict[str, Any]) -> None:
    version = crd["spec"]["versions"][0]
    version["subresources"] = {"status": {}}
    version["schema"]["openAPIV3Schema"]["allOf"] = [{"required": ["spec"]}]


ROOT_FIELDS = (
    "Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum "
    "MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items "
    "Properties ExternalDocs Example XPreserveUnknownFields XValidations"
)

# kube-apiserver's answers to PUTs of an Established CRD
UPDATES: list[tuple[str, Any, list[str]]] = [
    (
        "group",
        lambda c: c["spec"].update(group="other.example.com"),
        ['spec.group: Invalid value: "other.example.com": field is immutable'],
    ),
    (
        "scope",
        lambda c: c["spec"].update(scope="Cluster"),
        ['spec.scope: Invalid value: "Cluster": field is immutable'],
    ),
    (
        "kind",
        lambda c: c["spec"]["names"].update(kind="Gizmo2"),
        ['spec.names.kind: Invalid value: "Gizmo2": field is immutable'],
    ),
    (
        "plural",
        lambda c: c["spec"]["names"].update(plural="gizmos2"),
        ['spec.names.plural: Invalid value: "gizmos2": field is immutable'],
    ),
    (
        "stored version removed",
        _renamed_version,
        ['status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions'],
    ),
    # upstream prints the whole internal JSONSchemaProps struct as the value
    (
        "root fields with the status subresource",
        _status_root,
        [
            "spec.validation.openAPIV3Schema: Invalid value: apiextensions.JSONSchemaProps{...}: "
            f"only [{ROOT_FIELDS}] fields are allowed at the root of the schema if the status "
            "subresource is enabled"
        ],
    ),
]


@pytest.mark.parametrize(
    ("change", "expected"), [u[1:] for u in UPDATES], ids=[u[0] for u in UPDATES]
)
def test_update_matches_kube_apiserver(change: Any, expected: list[str]) -> None:
    old = _established(_defaulted(CASES[0]["crd"]))
    new = copy.deepcopy(old)
    change(new)
    assert [str(e) for e in validate_crd(new, old)] == expected


def test_scope_may_change_before_the_crd_is_established() -> None:
    old = _defaulted(CASES[0]["crd"])
    old["status"] = {"storedVersions": ["v1"]}
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    assert validate_crd(new, old) == []


def test_cel_cost_factor_is_printed_with_one_decimal() -> None:
    rule = {"rule": "self.a.all(x, self.a.all(y, x != y || true))"}
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [rule],
                "properties": {
                    "a": {
                        "type": "array",
                        "maxItems": 4000,
                        "items": {"type": "string", "maxLength": 5},
                    }
                },
            }
        },
    }
    crd = _widget()
    crd["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": schema}
    errs = validate_crd(crd, None)
    assert len(errs) == 1
    assert errs[0].field == (
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    )
    assert errs[0].body.startswith("Forbidden: estimated rule cost exceeds budget by factor of 1.")
