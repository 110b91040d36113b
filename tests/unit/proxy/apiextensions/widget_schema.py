"""The schemas of the test CRDs ``widgets.crdschema.example.com`` and
``gizmos.crdschema.example.com``: the same CRDs were created in a real kube-apiserver
and the tests' expected messages are its answers."""

from __future__ import annotations

from typing import Any

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": 'self.metadata.name != "forbidden"', "message": "name forbidden"}
    ],
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "x-kubernetes-validations": [
                {"rule": "self.size <= 10"},
                {"rule": "self.size != 7", "message": "seven is unlucky"},
                {
                    "rule": "self.size != 8",
                    "messageExpression": "'size eight is bad'",
                    "reason": "FieldValueForbidden",
                    "fieldPath": ".size",
                },
                {"rule": "self.size == oldSelf.size", "message": "immutable"},
            ],
            "properties": {
                "size": {"type": "integer", "minimum": 0, "maximum": 100, "multipleOf": 1},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "name": {
                    "type": "string",
                    "minLength": 2,
                    "maxLength": 5,
                    "pattern": "^[a-z]+$",
                    "x-kubernetes-validations": [
                        {"rule": 'self != "zz"', "messageExpression": "string(1/0)"},
                        {"rule": 'self != "yy"', "messageExpression": '""'},
                    ],
                },
                "color": {"type": "string", "enum": ["red", "green"]},
                "when": {"type": "string", "format": "date-time"},
                "ip": {"type": "string", "format": "ipv4"},
                "uid": {"type": "string", "format": "uuid"},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {
                    "type": "array",
                    "maxItems": 2,
                    "minItems": 1,
                    "x-kubernetes-list-type": "set",
                    "items": {
                        "type": "string",
                        "x-kubernetes-validations": [
                            {"rule": 'self != "bad"', "reason": "FieldValueDuplicate"},
                            {"rule": 'self != "worse"', "messageExpression": 'self + " is worse"'},
                            {
                                "rule": 'self != "req"',
                                "reason": "FieldValueRequired",
                                "message": "req not allowed",
                            },
                        ],
                    },
                },
                "ports": {
                    "type": "array",
                    "maxItems": 10,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "x-kubernetes-validations": [
                            {"rule": "!has(self.p) || self.p > 0", "fieldPath": ".p"},
                            {"rule": "self.name == oldSelf.name || true"},
                            {
                                "rule": "!has(oldSelf.p) || self.p >= oldSelf.p",
                                "message": "p may only grow",
                            },
                        ],
                        "properties": {
                            "name": {"type": "string", "maxLength": 10},
                            "p": {"type": "integer"},
                        },
                    },
                },
                "labels": {
                    "type": "object",
                    "maxProperties": 1,
                    "minProperties": 1,
                    "additionalProperties": {"type": "string"},
                    "x-kubernetes-validations": [
                        {"rule": 'self["z"] == "1"'},
                        {
                            "rule": 'self.all(k, self[k] != "x")',
                            "fieldPath": ".z",
                            "reason": "FieldValueDuplicate",
                        },
                    ],
                },
                "nullable": {"type": "string", "nullable": True},
                "defaulted": {"type": "string", "default": "dflt"},
                "flag": {"type": "boolean"},
                "embedded": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "oneof": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                    "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                },
                "notx": {"type": "string", "not": {"enum": ["x"]}},
            },
        }
    },
}


def widget(name: str = "w1", /, **spec: Any) -> dict[str, Any]:
    """A Widget custom resource with ``spec``."""
    return {
        "apiVersion": "crdschema.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "crdschema"},
        "spec": spec,
    }


GIZMO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "ios": {
                    "x-kubernetes-int-or-string": True,
                    "maxLength": 3,
                    "pattern": "^[0-9]+%?$",
                    "maximum": 10,
                    "x-kubernetes-validations": [{"rule": "self > 1"}],
                },
                "half": {
                    "type": "number",
                    "multipleOf": 0.5,
                    "maximum": 2.5,
                    "exclusiveMaximum": True,
                },
                "uni": {"type": "string", "maxLength": 3},
                "matrix": {
                    "type": "array",
                    "items": {"type": "array", "items": {"type": "integer", "maximum": 5}},
                },
                "ints": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "integer"},
                },
                "objs": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {
                        "type": "object",
                        "x-kubernetes-map-type": "atomic",
                        "properties": {
                            "a": {"type": "integer"},
                            "b": {"type": "number"},
                            "c": {"type": "string"},
                        },
                    },
                },
                "kv": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["k", "v"],
                    "items": {
                        "type": "object",
                        "required": ["k", "v"],
                        "properties": {
                            "k": {"type": "string"},
                            "v": {"type": "integer"},
                            "z": {"type": "string"},
                        },
                    },
                },
                "res": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "properties": {
                            "spec": {"type": "object", "properties": {"n": {"type": "integer"}}}
                        },
                    },
                },
                "deep": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"x": {"type": "string"}},
                        "x-kubernetes-validations": [
                            {
                                "rule": "has(self.x)",
                                "fieldPath": ".x",
                                "reason": "FieldValueRequired",
                                "message": "x required",
                            }
                        ],
                    },
                },
                "emb": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "required": ["spec"],
                    "properties": {
                        "spec": {
                            "type": "object",
                            "properties": {"n": {"type": "integer", "maximum": 3}},
                        }
                    },
                },
            },
        }
    },
}
