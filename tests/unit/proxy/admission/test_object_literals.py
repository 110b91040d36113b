"""MutatingAdmissionPolicy's object constructions as map literals, and the merge of an
apply configuration."""

from __future__ import annotations

import pytest

from proxy.admission.policy.mutating import merge
from proxy.admission.policy.object_literals import rewrite


@pytest.mark.parametrize(("expression", "expected"), [
    ("Object{spec: Object.spec{replicas: 1}}", '{"spec": {"replicas": 1}}'),
    ('[JSONPatch{op: "add", path: "/a", value: "b{x: y}"}]',
     '[{"op": "add","path": "/a","value": "b{x: y}"}]'),
    ('Object{a: g({"x": 1}, 2), b: [1, 2]}', '{"a": g({"x": 1}, 2),"b": [1, 2]}'),
    ('"a" in {"a": 1} && x.y == 1', '"a" in {"a": 1} && x.y == 1'),
    ("object.spec.replicas > 1 ? {'k': 'v'} : {}", "object.spec.replicas > 1 ? {'k': 'v'} : {}"),
])
def test_rewrite(expression: str, expected: str) -> None:
    assert rewrite(expression) == expected


def test_merge() -> None:
    target = {"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"list": [1, 2]}}
    patch = {"metadata": {"labels": {"b": "2"}}, "spec": {"list": [3]}}
    assert merge(target, patch) == {"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}},
                                    "spec": {"list": [3]}}
    assert merge(target, {"spec": None}) == {"metadata": target["metadata"]}
