"""validate_custom_resource against kube-apiserver's answers for the Widget CRD
(widget_schema.py), as upstream's pkg/apiserver/schema/cel/validation_test.go and
kube-openapi's validation tests state them. Each expected list is the causes of the
422 a real kube-apiserver answered for the same object (orders differ upstream: Go map
order), except where noted for 1.33+ (CEL failures print the bad scalar itself, and no
value for objects and arrays, where 1.32 printed the type name)."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.apiextensions.schema import apply_defaults, validate_custom_resource
from tests.unit.proxy.apiextensions.widget_schema import GIZMO_SCHEMA, WIDGET_SCHEMA, widget

NOT_CHECKED = (
    '<nil>: Invalid value: "null": some validation rules were not checked because the object '
    "was invalid; correct the existing errors to complete validation"
)

CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "kube-openapi checks, list types, combinators",
        widget(
            size=11,
            ratio=0,
            name="A",
            color="blue",
            when="x",
            ip="1.2.3",
            uid="u",
            port=1.5,
            tags=["a", "a", "b"],
            ports=[{"name": "a"}, {"name": "a"}],
            labels={},
            nullable=None,
            flag="yes",
            notx="x",
            oneof={"a": "1", "b": "2"},
        ),
        [
            "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties",
            'spec.port: Invalid value: "number": spec.port in body must be of type '
            'integer,string: "number"',
            'spec.uid: Invalid value: "u": spec.uid in body must be of type uuid: "u"',
            "spec.tags: Too many: 3: must have at most 2 items",
            '<nil>: Invalid value: "": "spec.notx" must not validate the schema (not)',
            'spec.color: Unsupported value: "blue": supported values: "red", "green"',
            'spec.flag: Invalid value: "string": spec.flag in body must be of type boolean: '
            '"string"',
            'spec.when: Invalid value: "x": spec.when in body must be of type date-time: "x"',
            'spec.ip: Invalid value: "1.2.3": spec.ip in body must be of type ipv4: "1.2.3"',
            "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0",
            '<nil>: Invalid value: "": "spec.oneof" must validate one and only one schema '
            "(oneOf). Found 2 valid alternatives",
            'spec.name: Invalid value: "A": spec.name in body should be at least 2 chars long',
            'spec.ports[1]: Duplicate value: map[string]interface {}{"name":"a"}',
            'spec.tags[1]: Duplicate value: "a"',
            NOT_CHECKED,
        ],
    ),
    (
        "lengths, counts, embedded resource",
        widget(
            size=7,
            name="abcdefg",
            tags=[],
            labels={"a": "1", "b": "2"},
            port=True,
            embedded={"kind": "X"},
        ),
        [
            "spec.name: Too long: may not be more than 5 bytes",
            "spec.labels: Too many: 2: must have at most 1 items",
            'spec.port: Invalid value: "boolean": spec.port in body must be of type '
            'integer,string: "boolean"',
            "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
            "spec.embedded.apiVersion: Required value: must not be empty",
            NOT_CHECKED,
        ],
    ),
    (
        "type and required",
        widget(size=8, name=5, ports=[{"p": 1}]),
        [
            'spec.name: Invalid value: "integer": spec.name in body must be of type string: '
            '"integer"',
            "spec.ports[0].name: Required value",
            NOT_CHECKED,
        ],
    ),
    (
        "embedded kind",
        widget(size=1, embedded={"apiVersion": "v1", "metadata": {"name": "x"}}),
        ["spec.embedded.kind: Required value: must not be empty", NOT_CHECKED],
    ),
    ("required", widget(name="ab"), ["spec.size: Required value", NOT_CHECKED]),
    (
        "spec of the wrong type",
        {**widget(), "spec": "str"},
        [
            'spec: Invalid value: "string": spec in body must be of type object: "string"',
            NOT_CHECKED,
        ],
    ),
    (
        "maximum, exclusive minimum, oneOf none valid, pattern",
        widget(size=101, name="ab1", ratio=-1, oneof={}),
        [
            "spec.size: Invalid value: 101: spec.size in body should be less than or equal to 100",
            "spec.ratio: Invalid value: -1: spec.ratio in body should be greater than 0",
            '<nil>: Invalid value: "": "spec.oneof" must validate one and only one schema '
            "(oneOf). Found none valid",
            "spec.oneof.a: Required value",
            "spec.name: Invalid value: \"ab1\": spec.name in body should match '^[a-z]+$'",
            NOT_CHECKED,
        ],
    ),
    # an Invalid error does not block CEL rules (no "not checked" cause)
    (
        "minimum",
        widget(size=-1),
        ["spec.size: Invalid value: -1: spec.size in body should be greater than or equal to 0"],
    ),
    (
        "map value type",
        widget(size=1, labels={"a": 5}),
        [
            'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type '
            'string: "integer"',
            NOT_CHECKED,
        ],
    ),
    (
        "unsupported value blocks rules",
        widget(size=1, color="blue"),
        ['spec.color: Unsupported value: "blue": supported values: "red", "green"', NOT_CHECKED],
    ),
    ("non-nullable nulls are dropped by defaulting", widget(size=1, tags=None, labels=None), []),
    # CEL rules (1.32 printed `Invalid value: "object": failed rule: ...`)
    ("rule", widget(size=11), ["spec: Invalid value: failed rule: self.size <= 10"]),
    ("message", widget(size=7), ["spec: Invalid value: seven is unlucky"]),
    (
        "messageExpression, reason, fieldPath",
        widget(size=8),
        ["spec.size: Forbidden: size eight is bad"],
    ),
    (
        "runtime error",
        widget(size=1, labels={"y": "x"}),
        [
            'spec.labels: Invalid value: "object": no such key: z evaluating rule: '
            'self["z"] == "1"',
            "spec.labels.[z]: Duplicate value",
        ],
    ),
    (
        "Duplicate reason on a scalar",
        widget(size=1, tags=["bad"]),
        ['spec.tags[0]: Duplicate value: "bad"'],
    ),
    (
        "messageExpression on a scalar",
        widget(size=1, tags=["worse"]),
        ['spec.tags[0]: Invalid value: "worse": worse is worse'],
    ),
    (
        "Required reason",
        widget(size=1, tags=["req"]),
        ["spec.tags[0]: Required value: req not allowed"],
    ),
    (
        "messageExpression error falls back",
        widget(size=1, name="zz"),
        ['spec.name: Invalid value: "zz": failed rule: self != "zz"'],
    ),
    (
        "empty messageExpression falls back",
        widget(size=1, name="yy"),
        ['spec.name: Invalid value: "yy": failed rule: self != "yy"'],
    ),
    (
        "fieldPath on a list item",
        widget(size=1, ports=[{"name": "a", "p": -1}]),
        ["spec.ports[0].p: Invalid value: failed rule: !has(self.p) || self.p > 0"],
    ),
    (
        "root rule sees metadata.name",
        widget("forbidden", size=1),
        ["<nil>: Invalid value: name forbidden"],
    ),
]


@pytest.mark.parametrize(("obj", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_create_matches_kube_apiserver(obj: dict[str, Any], expected: list[str]) -> None:
    apply_defaults(obj, WIDGET_SCHEMA)
    got = [str(e) for e in validate_custom_resource(obj, None, WIDGET_SCHEMA)]
    assert sorted(got) == sorted(expected)
    if NOT_CHECKED in expected:
        assert got[-1] == NOT_CHECKED


UPDATES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("transition rule", widget(size=2), widget(size=3), ["spec: Invalid value: immutable"]),
    (
        "transition rule on a map-list item correlated by key",
        widget(size=1, ports=[{"name": "a", "p": 5}]),
        widget(size=1, ports=[{"name": "b", "p": 1}, {"name": "a", "p": 4}]),
        ["spec.ports[1]: Invalid value: p may only grow"],
    ),
    # ratcheting (CRDValidationRatcheting): an unchanged invalid value is not an error,
    # a changed one is
    (
        "unchanged invalid value ratchets",
        widget(size=1, name="A1"),
        widget(size=1, name="A1", color="red"),
        [],
    ),
    (
        "changed invalid value",
        widget(size=1, name="A1"),
        widget(size=1, name="B1"),
        ["spec.name: Invalid value: \"B1\": spec.name in body should match '^[a-z]+$'"],
    ),
    (
        "unchanged value failing a rule ratchets",
        widget(size=1, tags=["bad"]),
        widget(size=1, tags=["bad"], color="red"),
        [],
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "expected"), [c[1:] for c in UPDATES], ids=[c[0] for c in UPDATES]
)
def test_update(old: dict[str, Any], new: dict[str, Any], expected: list[str]) -> None:
    got = [str(e) for e in validate_custom_resource(new, old, WIDGET_SCHEMA)]
    assert sorted(got) == sorted(expected)


def test_rules_share_one_runtime_budget() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.a.all(x, self.a.all(y, x != y || x == y))"},
                    {"rule": "true"},
                ],
                "properties": {"a": {"type": "array", "items": {"type": "integer"}}},
            }
        },
    }
    got = validate_custom_resource(widget(a=list(range(1500))), None, schema)
    # upstream: the per-call limit stops all further rules
    assert [str(e) for e in got] == [
        "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': "
        "no further validation rules will be run due to call cost exceeds limit for rule: "
        "self.a.all(x, self.a.all(y, x != y || x == y))"
    ]


def gizmo(**spec: Any) -> dict[str, Any]:
    return {**widget(), "kind": "Gizmo", "spec": spec}


GIZMO_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "int-or-string maxLength",
        gizmo(ios="1234"),
        ["spec.ios: Too long: may not be more than 3 bytes", NOT_CHECKED],
    ),
    (
        "int-or-string maximum",
        gizmo(ios=11),
        ["spec.ios: Invalid value: 11: spec.ios in body should be less than or equal to 10"],
    ),
    (
        "int-or-string pattern, then a rule comparing a string to an int",
        gizmo(ios="5x"),
        [
            "spec.ios: Invalid value: \"5x\": spec.ios in body should match '^[0-9]+%?$'",
            "spec.ios: Invalid value: \"\": 'no such overload': call arguments did not match a "
            "supported operator, function or macro signature for rule: self > 1",
        ],
    ),
    # 1.32: `Invalid value: "": failed rule: self > 1` (the untyped schema's type)
    ("int-or-string rule", gizmo(ios=1), ["spec.ios: Invalid value: 1: failed rule: self > 1"]),
    (
        "multipleOf",
        gizmo(half=0.7),
        ["spec.half: Invalid value: 0.7: spec.half in body should be a multiple of 0.5"],
    ),
    (
        "exclusiveMaximum",
        gizmo(half=2.5),
        ["spec.half: Invalid value: 2.5: spec.half in body should be less than 2.5"],
    ),
    (
        "maxLength counts characters",
        gizmo(uni="éééé"),
        ["spec.uni: Too long: may not be more than 3 bytes", NOT_CHECKED],
    ),
    ("maxLength counts characters, not bytes", gizmo(uni="ééé"), []),
    (
        "nested arrays",
        gizmo(matrix=[[1, 6], [7]]),
        [
            "spec.matrix[0][1]: Invalid value: 6: spec.matrix[0][1] in body should be less than "
            "or equal to 5",
            "spec.matrix[1][0]: Invalid value: 7: spec.matrix[1][0] in body should be less than "
            "or equal to 5",
        ],
    ),
    ("set of integers", gizmo(ints=[1, 2, 1]), ["spec.ints[2]: Duplicate value: 1"]),
    (
        "set of atomic objects",
        gizmo(objs=[{"a": 1, "b": 1.5, "c": "x"}, {"a": 1, "b": 1.5, "c": "x"}]),
        ['spec.objs[1]: Duplicate value: map[string]interface {}{"a":1, "b":1.5, "c":"x"}'],
    ),
    (
        "map list with two keys",
        gizmo(kv=[{"k": "a", "v": 1, "z": "q"}, {"k": "a", "v": 1}]),
        ['spec.kv[1]: Duplicate value: map[string]interface {}{"k":"a", "v":1}'],
    ),
    (
        "embedded resource in a list",
        gizmo(res=[{"kind": "Y"}]),
        ["spec.res[0].apiVersion: Required value: must not be empty", NOT_CHECKED],
    ),
    (
        "embedded apiVersion",
        gizmo(res=[{"apiVersion": "a/b/c", "kind": "X"}]),
        ['spec.res[0].apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c'],
    ),
    (
        "embedded metadata",
        gizmo(
            res=[
                {
                    "apiVersion": "v1",
                    "kind": "X",
                    "metadata": {
                        "name": "Bad_Name",
                        "generateName": "x",
                        "namespace": "Bad NS",
                        "labels": {"a b": "c"},
                    },
                }
            ]
        ),
        [
            'spec.res[0].metadata.namespace: Invalid value: "Bad NS": a lowercase RFC 1123 label '
            "must consist of lower case alphanumeric characters or '-', and must start and end "
            "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            'spec.res[0].metadata.labels: Invalid value: "a b": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ],
    ),
    (
        "inside an embedded resource",
        gizmo(emb={"apiVersion": "v1", "kind": "X", "spec": {"n": "s"}}),
        [
            'spec.emb.spec.n: Invalid value: "string": spec.emb.spec.n in body must be of type '
            'integer: "string"',
            NOT_CHECKED,
        ],
    ),
    (
        "required inside an embedded resource",
        gizmo(emb={"apiVersion": "v1", "kind": "X"}),
        ["spec.emb.spec: Required value", NOT_CHECKED],
    ),
    # CEL rules address map values as path[key]
    (
        "rule below a map",
        gizmo(deep={"a": {}, "b": {"x": "1"}}),
        ["spec.deep[a].x: Required value: x required"],
    ),
    ("integral floats are integers", gizmo(half=1.0, matrix=[[1.0]]), []),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in GIZMO_CASES], ids=[c[0] for c in GIZMO_CASES]
)
def test_gizmo_matches_kube_apiserver(obj: dict[str, Any], expected: list[str]) -> None:
    got = [str(e) for e in validate_custom_resource(obj, None, GIZMO_SCHEMA)]
    assert sorted(got) == sorted(expected)
