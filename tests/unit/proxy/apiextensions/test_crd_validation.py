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


def test_group_is_immutable() -> None:
    old = _widget()
    new = _widget(group="other.example.com")
    new["metadata"]["name"] = "gadgets.other.example.com"
    errs = validate_crd(new, old)
    assert [str(e) for e in errs] == [
        'spec.group: Invalid value: "other.example.com": field is immutable'
    ]


def test_stored_versions_must_stay_in_spec() -> None:
    old = _widget()
    new = _widget()
    new["status"] = {"storedVersions": ["v0", "v1"]}
    errs = validate_crd(new, old)
    # upstream: "must appear in spec.versions" for a stored version no longer listed
    assert [str(e) for e in errs] == [
        'status.storedVersions[0]: Invalid value: "v0": must appear in spec.versions'
    ]


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
