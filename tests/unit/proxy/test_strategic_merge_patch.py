"""Strategic merge patch: upstream's patch_test.go cases (MergeItem) and Pod/Deployment
patches as kubectl apply sends them, against hand-worked expectations."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from proxy.apimachinery.validation.go_values import go_format
from proxy.openapi.schemas import SchemaNode, kind_schema
from proxy.patch.strategic import (
    StrategicMergePatchError,
    apply_strategic_merge_patch,
    parse_patch_body,
)


def merge_item_schema(depth: int = 4) -> dict[str, Any]:
    """upstream's MergeItem test struct as a schema with the same patch tags."""
    item: dict[str, Any] = {"type": "object", "properties": {}}
    if depth > 0:
        item = merge_item_schema(depth - 1)
    scalar = {"type": "string"}
    props: dict[str, Any] = {
        "name": scalar,
        "value": scalar,
        "other": scalar,
        "mergingList": {
            "type": "array",
            "items": item,
            "x-kubernetes-patch-strategy": "merge",
            "x-kubernetes-patch-merge-key": "name",
        },
        "nonMergingList": {"type": "array", "items": item},
        "mergingIntList": {
            "type": "array",
            "items": {"type": "integer"},
            "x-kubernetes-patch-strategy": "merge",
        },
        "nonMergingIntList": {"type": "array", "items": {"type": "integer"}},
        "mergeItemPtr": {
            **item,
            "x-kubernetes-patch-strategy": "merge",
            "x-kubernetes-patch-merge-key": "name",
        },
        "simpleMap": {"type": "object", "additionalProperties": scalar},
        "replacingItem": {"x-kubernetes-patch-strategy": "replace"},
        "retainKeysMap": {
            "type": "object",
            "x-kubernetes-patch-strategy": "retainKeys",
            "properties": {
                "name": scalar,
                "value": scalar,
                "other": scalar,
                "simpleMap": {"type": "object", "additionalProperties": scalar},
                "mergingIntList": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "x-kubernetes-patch-strategy": "merge",
                },
                "mergingList": {
                    "type": "array",
                    "items": item,
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "name",
                },
                "nonMergingList": {"type": "array", "items": item},
            },
        },
        "retainKeysMergingList": {
            "type": "array",
            "items": item,
            "x-kubernetes-patch-strategy": "merge,retainKeys",
            "x-kubernetes-patch-merge-key": "name",
        },
    }
    return {"type": "object", "properties": props}


MERGE_ITEM = SchemaNode(merge_item_schema())

# (description, original, patch, expected) — from upstream's customStrategicMergePatch,
# createStrategicMergePatch (patch = threeWay applied to current → result) and raw cases.
UPSTREAM_CASES = yaml.safe_load(
    """
- - unique scalars when merging lists
  - {mergingIntList: [1, 2]}
  - {mergingIntList: [2, 3]}
  - {mergingIntList: [1, 2, 3]}
- - delete map from nested map
  - {simpleMap: {key1: 1, key2: 1}}
  - {simpleMap: {$patch: delete}}
  - {simpleMap: {}}
- - delete all items from merging list
  - {mergingList: [{name: 1}, {name: 2}]}
  - {mergingList: [{$patch: replace}]}
  - {mergingList: []}
- - merge empty merging lists
  - {mergingList: []}
  - {mergingList: []}
  - {mergingList: []}
- - delete all keys from map
  - {name: 1, value: 1}
  - {$patch: replace}
  - {}
- - add key and delete all keys from map
  - {name: 1, value: 1}
  - {other: a, $patch: replace}
  - {other: a}
- - delete all duplicate entries in a merging list
  - {mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]}
  - {mergingList: [{name: 1, $patch: delete}, {name: 3, $patch: delete}]}
  - {mergingList: [{name: 2, value: a}]}
- - retainKeys map can add a field when no retainKeys directive present
  - {retainKeysMap: {name: foo}}
  - {retainKeysMap: {value: bar}}
  - {retainKeysMap: {name: foo, value: bar}}
- - retainKeys map can delete a field when no retainKeys directive present
  - {retainKeysMap: {name: foo, value: a}}
  - {retainKeysMap: {value: null}}
  - {retainKeysMap: {name: foo}}
- - retainKeys map merge an empty map
  - {retainKeysMap: {name: foo, value: a}}
  - {retainKeysMap: {}}
  - {retainKeysMap: {name: foo, value: a}}
- - retainKeys list can change a field when no retainKeys directive present
  - {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  - {retainKeysMergingList: [{name: foo, value: b}]}
  - {retainKeysMergingList: [{name: bar}, {name: foo, value: b}]}
- - preserve the order from the patch in a merging list
  - {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  - {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]}
  - {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]}
- - preserve the order from the patch in a merging list 2
  - {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  - {mergingList: [{name: 3, value: c}, {name: 1, value: a}]}
  - {mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]}
- - preserve the order from the patch in a merging int list
  - {mergingIntList: [1, 2, 3]}
  - {mergingIntList: [3, 1, 2]}
  - {mergingIntList: [3, 1, 2]}
- - preserve the order from the patch in a merging int list 2
  - {mergingIntList: [1, 2, 3]}
  - {mergingIntList: [3, 1]}
  - {mergingIntList: [2, 3, 1]}
- - $setElementOrder contains item that is not present in the list to be merged
  - {mergingList: [{name: 1}, {name: 3}]}
  - $setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  - {mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}
- - $setElementOrder contains item that is not present in the int list to be merged
  - {mergingIntList: [1, 3]}
  - {$setElementOrder/mergingIntList: [3, 2, 1]}
  - {mergingIntList: [3, 1]}
- - $deleteFromPrimitiveList of nonexistent item should not add the item to the list
  - {mergingIntList: [1, 2]}
  - {$deleteFromPrimitiveList/mergingIntList: [3]}
  - {mergingIntList: [1, 2]}
- - $deleteFromPrimitiveList on empty primitive list should not add the item
  - {mergingIntList: null}
  - {$deleteFromPrimitiveList/mergingIntList: [3]}
  - {mergingIntList: null}
- - $deleteFromPrimitiveList on nonexistent primitive list should not add the list
  - {foo: [bar]}
  - {$deleteFromPrimitiveList/mergingIntList: [3]}
  - {foo: [bar]}
- - $deleteFromPrimitiveList deletes from a list with merge patch strategy
  - {mergingIntList: [1, 2, 3]}
  - {$deleteFromPrimitiveList/mergingIntList: [2]}
  - {mergingIntList: [1, 3]}
- - $deleteFromPrimitiveList deletes from a list without merge patch strategy
  - {nonMergingIntList: [1, 2, 3]}
  - {$deleteFromPrimitiveList/nonMergingIntList: [2]}
  - {nonMergingIntList: [1, 3]}
- - nil original
  - {name: 1, other: a}
  - {value: 1}
  - {name: 1, value: 1, other: a}
- - add field and delete field from map
  - {name: 1, other: a}
  - {name: null, value: 1}
  - {value: 1, other: a}
- - delete field from nested map
  - {simpleMap: {key1: 1, key2: 1, other: a}}
  - {simpleMap: {key2: null}}
  - {simpleMap: {key1: 1, other: a}}
- - replace list of scalars
  - {nonMergingIntList: [1, 4]}
  - {nonMergingIntList: [2, 3]}
  - {nonMergingIntList: [2, 3]}
- - delete all maps from merging list with conflict
  - {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  - {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  - {mergingList: []}
- - defined null values should not be stored
  - {name: a, other: a}
  - {name: 1, value: 1, other: null}
  - {name: 1, value: 1}
- - nested patch merge with empty list (two way)
  - {name: hi}
  - {mergingList: [{name: hello}, {$patch: delete, name: doesntexist}]}
  - {name: hi, mergingList: [{name: hello}]}
- - nested patch merge with empty list (three way)
  - {name: hi, mergingList: [{name: hello2}]}
  - $setElementOrder/mergingList: [{name: hello}, {name: doesntexist}]
    mergingList: [{name: hello}, {$patch: delete, name: doesntexist}]
  - {name: hi, mergingList: [{name: hello}, {name: hello2}]}
- - delete items in lists of scalars
  - {mergingIntList: [1, 2, 3, 4]}
  - {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  - {mergingIntList: [1, 2, 4]}
- - delete all duplicate items in lists of scalars
  - {mergingIntList: [1, 2, 3, 3, 4]}
  - {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  - {mergingIntList: [1, 2, 4]}
- - add and delete items in lists of scalars
  - {mergingIntList: [1, 2, 3]}
  - $setElementOrder/mergingIntList: [1, 2, 4]
    $deleteFromPrimitiveList/mergingIntList: [3]
    mergingIntList: [4]
  - {mergingIntList: [1, 2, 4]}
- - merge lists of maps
  - {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  - $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  - mergingList:
    - {name: 4, value: 4}
    - {name: 1, other: a}
    - {name: 2, value: 2, other: b}
    - {name: 3, value: 3}
- - server-only items keep their place between patch items
  - {mergingList: [{name: 1}, {name: 2}, {name: 3}]}
  - $setElementOrder/mergingList: [{name: 1}, {name: 3}]
    mergingList: [{name: 3, value: x}]
  - {mergingList: [{name: 1}, {name: 2}, {name: 3, value: x}]}
- - replace strategy replaces the whole map
  - {replacingItem: {a: 1, b: {c: 2}}}
  - {replacingItem: {b: {d: 3}}}
  - {replacingItem: {b: {d: 3}}}
- - non merging list of maps is replaced
  - {nonMergingList: [{name: 1, value: a}, {name: 2}]}
  - {nonMergingList: [{name: 1}]}
  - {nonMergingList: [{name: 1}]}
- - merge into map held by pointer
  - {mergeItemPtr: {name: a, value: 1}}
  - {mergeItemPtr: {other: b}}
  - {mergeItemPtr: {name: a, value: 1, other: b}}
- - retainKeys directive clears fields not listed
  - {retainKeysMap: {name: foo, value: a, other: b}}
  - {retainKeysMap: {$retainKeys: [name, simpleMap], simpleMap: {k: v}}}
  - {retainKeysMap: {name: foo, simpleMap: {k: v}}}
- - retainKeys directive in a merging list element
  - {retainKeysMergingList: [{name: foo, value: a, other: b}]}
  - {retainKeysMergingList: [{name: foo, $retainKeys: [name, other], other: c}]}
  - {retainKeysMergingList: [{name: foo, other: c}]}
- - null in a new subtree is dropped
  - {}
  - {simpleMap: {a: x, b: null}}
  - {simpleMap: {a: x}}
- - directive in a new subtree is applied
  - {}
  - {retainKeysMap: {$retainKeys: [name], name: n}}
  - {retainKeysMap: {name: n}}
- - directive elements of a new list are dropped
  - {}
  - {mergingList: [{name: 1}, {$patch: replace}, {name: 2, $patch: delete}]}
  - {mergingList: [{name: 1}]}
- - replace directive inside merging list
  - {mergingList: [{name: 1}, {name: 2}]}
  - {mergingList: [{name: 3, value: x}, {$patch: replace}]}
  - {mergingList: [{name: 3, value: x}]}
- - type change replaces the value
  - {value: [a]}
  - {value: {x: 1}}
  - {value: {x: 1}}
"""
)


@pytest.mark.parametrize(
    ("original", "patch", "expected"),
    [case[1:] for case in UPSTREAM_CASES],
    ids=[case[0] for case in UPSTREAM_CASES],
)
def test_upstream_merge_item_cases(
    original: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    before = copy.deepcopy((original, patch))
    assert apply_strategic_merge_patch(original, patch, MERGE_ITEM) == expected
    assert (original, patch) == before  # inputs untouched


ERROR_CASES = yaml.safe_load(
    """
- - should check if order in $setElementOrder and patch list match
  - {mergingList: [{name: 1}, {name: 3}, {name: 2}]}
  - $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  - "doesn't match"
  - 500
- - should check if order in $setElementOrder and int patch list match
  - {mergingIntList: [1, 3, 2]}
  - {$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3, 1]}
  - "doesn't match"
  - 500
- - missing merge key should error out
  - {mergingList: [{name: 1, value: a}]}
  - {mergingList: [{value: b}]}
  - "map: map[value:b] does not contain declared merge key: name"
  - 500
- - delete directive without merge key
  - {mergingList: [{name: 1}]}
  - {mergingList: [{$patch: delete}]}
  - "does not contain declared merge key: name"
  - 500
- - merge directive in list
  - {mergingList: [{name: 1}]}
  - {mergingList: [{$patch: merge, name: 1}]}
  - "merging lists cannot yet be specified in the patch"
  - 500
- - unknown map directive
  - {name: 1}
  - {$patch: bogus}
  - "unknown patch type: bogus in map: map[$patch:bogus]"
  - 500
- - retainKeys must be a list
  - {retainKeysMap: {name: a}}
  - {retainKeysMap: {$retainKeys: name}}
  - "invalid patch format of retainKeys"
  - 400
- - patch content not in retainKeys
  - {retainKeysMap: {name: a}}
  - {retainKeysMap: {$retainKeys: [name], value: b}}
  - "patch content doesn't match retainKeys list"
  - 422
- - deleteFromPrimitiveList without field
  - {mergingIntList: [1]}
  - {$deleteFromPrimitiveList: [1]}
  - "invalid patch format of primitive list"
  - 400
- - setElementOrder without field
  - {mergingIntList: [1]}
  - {$setElementOrder: [1]}
  - "invalid patch format of setElementOrder list"
  - 400
- - lists of lists
  - {mergingIntList: [[1]]}
  - {mergingIntList: [[2]]}
  - "lists of lists are not supported"
  - 422
- - mixed element types
  - {mergingIntList: [1]}
  - {mergingIntList: [a]}
  - "list element types are not identical"
  - 500
"""
)


@pytest.mark.parametrize(
    ("original", "patch", "message", "code"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_upstream_error_cases(
    original: dict[str, Any], patch: dict[str, Any], message: str, code: int
) -> None:
    with pytest.raises(StrategicMergePatchError) as info:
        apply_strategic_merge_patch(original, patch, MERGE_ITEM)
    assert message in str(info.value)
    assert info.value.status_code == code
    assert isinstance(info.value, ValueError)
    assert info.value.reason == {400: "BadRequest", 422: "Invalid", 500: ""}[code]


# ------------------------------------------------------------- real Pod schemas

POD = kind_schema("", "v1", "Pod")
DEPLOYMENT = kind_schema("apps", "v1", "Deployment")


def pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": list(containers), **spec},
    }


def test_pod_change_image_merges_container_by_name() -> None:
    live = pod(
        {"name": "a", "image": "nginx:1", "ports": [{"containerPort": 80}]},
        {"name": "b", "image": "busybox"},
    )
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "image": "nginx:2"}],
        }
    }
    out = apply_strategic_merge_patch(live, patch, POD)
    assert out["spec"]["containers"] == [
        {"name": "a", "image": "nginx:2", "ports": [{"containerPort": 80}]},
        {"name": "b", "image": "busybox"},
    ]


def test_kubectl_apply_removes_a_container_and_changes_image() -> None:
    """The three-way patch kubectl 1.37 sends on the second apply of the e2e manifest."""
    live = pod({"name": "a", "image": "nginx:1"}, {"name": "sidecar", "image": "busybox"})
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [
                {"name": "a", "image": "nginx:2"},
                {"$patch": "delete", "name": "sidecar"},
            ],
        }
    }
    out = apply_strategic_merge_patch(live, patch, POD)
    assert out["spec"]["containers"] == [{"name": "a", "image": "nginx:2"}]


def test_pod_env_by_name_and_ports_by_container_port() -> None:
    live = pod(
        {
            "name": "a",
            "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
            "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}],
        }
    )
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "a",
                    "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}],
                    "ports": [{"containerPort": 80, "name": "web"}],
                }
            ]
        }
    }
    out = apply_strategic_merge_patch(live, patch, POD)
    c = out["spec"]["containers"][0]
    assert c["env"] == [
        {"name": "X", "value": "1"},
        {"name": "Y", "value": "3"},
        {"name": "Z", "value": "4"},
    ]
    assert c["ports"] == [{"containerPort": 80, "name": "web"}, {"containerPort": 443}]


def test_pod_volume_mounts_by_mount_path_and_volumes_retain_keys() -> None:
    live = pod(
        {"name": "a", "volumeMounts": [{"name": "v", "mountPath": "/data"}]},
        volumes=[{"name": "v", "emptyDir": {}}],
    )
    patch = {
        "spec": {
            "containers": [{"name": "a", "volumeMounts": [{"name": "w", "mountPath": "/data"}]}],
            "volumes": [
                {"name": "v", "$retainKeys": ["configMap", "name"], "configMap": {"name": "c"}}
            ],
        }
    }
    out = apply_strategic_merge_patch(live, patch, POD)
    assert out["spec"]["containers"][0]["volumeMounts"] == [{"name": "w", "mountPath": "/data"}]
    # retainKeys drops emptyDir: a volume has exactly one source.
    assert out["spec"]["volumes"] == [{"name": "v", "configMap": {"name": "c"}}]


def test_pod_tolerations_are_atomic_and_replaced() -> None:
    live = pod({"name": "a"}, tolerations=[{"key": "k1", "operator": "Exists"}])
    patch = {"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}}
    out = apply_strategic_merge_patch(live, patch, POD)
    assert out["spec"]["tolerations"] == [{"key": "k2", "operator": "Exists"}]


def test_finalizers_merge_as_a_set_and_delete_from_primitive_list() -> None:
    live = pod({"name": "a"})
    live["metadata"]["finalizers"] = ["x", "y"]
    out = apply_strategic_merge_patch(live, {"metadata": {"finalizers": ["y", "z"]}}, POD)
    assert out["metadata"]["finalizers"] == ["x", "y", "z"]
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}
    out = apply_strategic_merge_patch(out, patch, POD)
    assert out["metadata"]["finalizers"] == ["y", "z"]


def test_null_deletes_a_label_and_labels_merge() -> None:
    live = pod({"name": "a"})
    patch = {"metadata": {"labels": {"app": None, "tier": "fe"}}}
    out = apply_strategic_merge_patch(live, patch, POD)
    assert out["metadata"]["labels"] == {"tier": "fe"}


def test_command_and_args_lists_are_replaced() -> None:
    live = pod({"name": "a", "command": ["sh", "-c"], "args": ["sleep 1"]})
    patch = {"spec": {"containers": [{"name": "a", "args": ["sleep 2"]}]}}
    out = apply_strategic_merge_patch(live, patch, POD)
    assert out["spec"]["containers"][0] == {
        "name": "a",
        "command": ["sh", "-c"],
        "args": ["sleep 2"],
    }


def test_deployment_template_containers_merge_and_strategy_retain_keys() -> None:
    live = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {"spec": {"containers": [{"name": "a", "image": "i:1"}]}},
        },
    }
    patch = {
        "spec": {
            "replicas": 3,
            "template": {"spec": {"containers": [{"name": "b", "image": "j"}]}},
        }
    }
    out = apply_strategic_merge_patch(live, patch, DEPLOYMENT)
    assert out["spec"]["replicas"] == 3
    assert out["spec"]["template"]["spec"]["containers"] == [
        {"name": "a", "image": "i:1"},
        {"name": "b", "image": "j"},
    ]
    # Without a schema every list is replaced (custom resources are not SMP-patchable).
    out = apply_strategic_merge_patch(live, patch, None)
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "b", "image": "j"}]


def test_patch_directive_delete_on_whole_object() -> None:
    assert apply_strategic_merge_patch(pod({"name": "a"}), {"$patch": "delete"}, POD) == {}


def test_parse_patch_body() -> None:
    assert parse_patch_body(b'{"a": 1}') == {"a": 1}
    assert parse_patch_body(b"") == {}
    with pytest.raises(StrategicMergePatchError) as info:
        parse_patch_body(b"[1]")
    assert info.value.status_code == 400
    assert "cannot unmarshal array into Go value of type map[string]interface {}" in str(info.value)
    with pytest.raises(StrategicMergePatchError) as info:
        parse_patch_body(b"{nope")
    assert info.value.status_code == 400


def test_go_format_prints_like_go() -> None:
    assert go_format({"b": 1.0, "a": [True, None, "x"]}) == "map[a:[true <nil> x] b:1]"


def test_real_kubectl_apply_patch_on_a_deployment() -> None:
    """The patch kubectl 1.37 sent for a second ``apply -f`` (captured; annotation cut):
    image changed, a container, an env var and a label removed, a port added, the volume
    source switched (retainKeys) and the atomic tolerations replaced."""
    live = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", "tier": "fe"}},
        "spec": {
            "replicas": 2,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.25",
                            "ports": [{"containerPort": 80}],
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        },
                        {"name": "sidecar", "image": "busybox", "args": ["sleep", "3600"]},
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "tolerations": [{"key": "k1", "operator": "Exists"}],
                }
            },
        },
    }
    patch = {
        "metadata": {"labels": {"tier": None}},
        "spec": {
            "replicas": 3,
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "nginx"}],
                    "$setElementOrder/volumes": [{"name": "data"}],
                    "containers": [
                        {
                            "$setElementOrder/env": [{"name": "B"}],
                            "$setElementOrder/ports": [
                                {"containerPort": 80},
                                {"containerPort": 443},
                            ],
                            "env": [{"name": "B", "value": "3"}, {"$patch": "delete", "name": "A"}],
                            "image": "nginx:1.27",
                            "name": "nginx",
                            "ports": [{"containerPort": 443}],
                        },
                        {"$patch": "delete", "name": "sidecar"},
                    ],
                    "tolerations": [{"key": "k2", "operator": "Exists"}],
                    "volumes": [
                        {
                            "$retainKeys": ["configMap", "name"],
                            "configMap": {"name": "cfg"},
                            "emptyDir": None,
                            "name": "data",
                        }
                    ],
                }
            },
        },
    }
    out = apply_strategic_merge_patch(live, patch, DEPLOYMENT)
    assert out["metadata"]["labels"] == {"app": "web"}
    assert out["spec"] == {
        "replicas": 3,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "nginx",
                        "image": "nginx:1.27",
                        "ports": [{"containerPort": 80}, {"containerPort": 443}],
                        "env": [{"name": "B", "value": "3"}],
                    }
                ],
                "volumes": [{"name": "data", "configMap": {"name": "cfg"}}],
                "tolerations": [{"key": "k2", "operator": "Exists"}],
            }
        },
    }


def test_deployment_strategy_switch_to_recreate_with_retain_keys() -> None:
    live = {
        "kind": "Deployment",
        "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}},
    }
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = apply_strategic_merge_patch(live, patch, DEPLOYMENT)
    assert out["spec"]["strategy"] == {"type": "Recreate"}
