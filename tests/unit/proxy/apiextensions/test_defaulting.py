"""apply_defaults as upstream's pkg/apiserver/schema/defaulting (algorithm_test.go,
prunenulls_test.go); the Widget case is what kube-apiserver stored for the same
object."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.apiextensions.schema import apply_defaults
from tests.unit.proxy.apiextensions.widget_schema import WIDGET_SCHEMA, widget


def test_widget_defaults_match_kube_apiserver() -> None:
    # kube-apiserver stored: {"defaulted": "dflt", "nullable": null, "size": 1}
    obj = widget(size=1, defaulted=None, nullable=None, flag=None, tags=None)
    apply_defaults(obj, WIDGET_SCHEMA)
    assert obj["spec"] == {"size": 1, "defaulted": "dflt", "nullable": None}


CASES: list[tuple[str, dict[str, Any], Any, Any]] = [
    (
        "absent fields get a copy of the default, nested defaults apply inside it",
        {
            "type": "object",
            "properties": {
                "a": {
                    "type": "object",
                    "default": {"x": 1},
                    "properties": {
                        "x": {"type": "integer"},
                        "y": {"type": "string", "default": "why"},
                    },
                }
            },
        },
        {},
        {"a": {"x": 1, "y": "why"}},
    ),
    (
        "null of a nullable field stays null",
        {
            "type": "object",
            "properties": {"a": {"type": "string", "nullable": True, "default": "d"}},
        },
        {"a": None},
        {"a": None},
    ),
    (
        "null of a non-nullable field is defaulted",
        {"type": "object", "properties": {"a": {"type": "string", "default": "d"}}},
        {"a": None},
        {"a": "d"},
    ),
    (
        "null of a non-nullable field without default is dropped",
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {"a": None, "b": None},
        {"b": None},
    ),
    (
        "map values and list items",
        {
            "type": "object",
            "properties": {
                "m": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"v": {"type": "integer", "default": 3}},
                    },
                },
                "l": {"type": "array", "items": {"type": "string", "default": "i"}},
            },
        },
        {"m": {"k": {}}, "l": ["a", None]},
        {"m": {"k": {"v": 3}}, "l": ["a", "i"]},
    ),
    (
        "defaults are copies",
        {
            "type": "object",
            "properties": {
                "a": {"type": "array", "default": [1]},
                "b": {"type": "array", "default": [1]},
            },
        },
        {},
        {"a": [1], "b": [1]},
    ),
]


@pytest.mark.parametrize(
    ("schema", "obj", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_defaults(schema: dict[str, Any], obj: Any, expected: Any) -> None:
    apply_defaults(obj, schema)
    assert obj == expected


def test_default_values_are_not_shared_between_objects() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "default": [1]}}}
    first: dict[str, Any] = {}
    second: dict[str, Any] = {}
    apply_defaults(first, schema)
    apply_defaults(second, schema)
    first["a"].append(2)
    assert second == {"a": [1]}
    assert schema["properties"]["a"]["default"] == [1]  # type: ignore[index]
