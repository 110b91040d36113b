"""prune as upstream's pkg/apiserver/schema/pruning (pruning_test.go); the reported
paths are those of kube-apiserver's ``unknown field "<path>"`` warnings for the same
object."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.apiextensions.schema import prune
from tests.unit.proxy.apiextensions.widget_schema import WIDGET_SCHEMA, widget


def test_unknown_fields_match_kube_apiserver_warnings() -> None:
    obj = widget(
        size=1,
        ports=[{"name": "a", "zz": 1, "aa": 2}],
        oneof={"c": 1},
        embedded={
            "apiVersion": "v1",
            "kind": "X",
            "metadata": {"name": "a", "zfoo": 1, "afoo": 2},
            "spec": {"x": 1},
        },
        b=1,
        a=2,
    )
    removed = prune(obj, WIDGET_SCHEMA)
    assert removed == [
        "spec.a",
        "spec.b",
        "spec.oneof.c",
        "spec.ports[0].aa",
        "spec.ports[0].zz",
        "spec.embedded.metadata.afoo",
        "spec.embedded.metadata.zfoo",
    ]
    assert obj["spec"] == {
        "size": 1,
        "ports": [{"name": "a"}],
        "oneof": {},
        # below preserve-unknown-fields everything but metadata's unknown fields stays
        "embedded": {"apiVersion": "v1", "kind": "X", "metadata": {"name": "a"}, "spec": {"x": 1}},
    }


CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], list[str]]] = [
    (
        "empty schema keeps only TypeMeta and ObjectMeta at the root",
        {"type": "object"},
        {"apiVersion": "v1", "kind": "K", "metadata": {"name": "x", "foo": 1}, "spec": {}},
        {"apiVersion": "v1", "kind": "K", "metadata": {"name": "x", "foo": 1}},
        ["spec"],
    ),
    (
        "preserve-unknown-fields at the root",
        {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        {"kind": "K", "spec": {"a": 1}, "x": [1]},
        {"kind": "K", "spec": {"a": 1}, "x": [1]},
        [],
    ),
    (
        "specified parts below preserve-unknown-fields are still pruned",
        {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        },
        {"spec": {"a": 1, "b": 2}, "other": {"c": 3}},
        {"spec": {"a": 1}, "other": {"c": 3}},
        ["spec.b"],
    ),
    (
        "additionalProperties and items",
        {
            "type": "object",
            "properties": {
                "m": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}},
                    },
                },
                "l": {"type": "array", "items": {"type": "object", "properties": {}}},
            },
        },
        {"m": {"k": {"a": "x", "b": "y"}}, "l": [{"z": 1}, {}]},
        {"m": {"k": {"a": "x"}}, "l": [{}, {}]},
        ["l[0].z", "m.k.b"],
    ),
    (
        "int-or-string and untyped preserved values",
        {
            "type": "object",
            "properties": {
                "p": {"x-kubernetes-int-or-string": True},
                "f": {"x-kubernetes-preserve-unknown-fields": True},
            },
        },
        {"p": "80", "f": {"deep": {"x": 1}}},
        {"p": "80", "f": {"deep": {"x": 1}}},
        [],
    ),
]


@pytest.mark.parametrize(
    ("schema", "obj", "expected", "removed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_prune(
    schema: dict[str, Any], obj: dict[str, Any], expected: dict[str, Any], removed: list[str]
) -> None:
    assert prune(obj, schema) == removed
    assert obj == expected
