"""Server-side apply and managedFields, case by case, ported from upstream's behaviour
(k8s.io/apiserver's ``endpoints/handlers/fieldmanager`` tests, structured-merge-diff's
merge tests and ``test/integration/apiserver/apply``). Each case states kube-apiserver's
answer; the FieldsV1 documents were compared with a real kube-apiserver for the same
requests."""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from proxy import apierrors
from proxy.fieldmanager import FieldManager, custom_type, manager_or_user_agent
from proxy.fieldmanager import managed_fields as mf
from proxy.fieldmanager.fieldpath import PathElement, Set

JSON = dict[str, Any]


@dataclass
class Clock:
    """Seconds advance by one per reading."""

    second: int = 0

    def __call__(self) -> datetime.datetime:
        self.second += 1
        return datetime.datetime(2026, 1, 1, 0, 0, 0, tzinfo=datetime.UTC) + datetime.timedelta(
            seconds=self.second
        )


@dataclass
class Obj:
    """One object written by several managers, as the REST handlers drive the field manager."""

    group: str
    version: str
    kind: str
    live: JSON | None = None
    clock: Clock = field(default_factory=Clock)
    schema: JSON | None = None  # a custom kind's (its CRD version's openAPIV3Schema)

    def fm(self, subresource: str = "") -> FieldManager:
        reset = Set.of((PathElement.field("spec"),)) if subresource == "status" else None
        atom = custom_type(self.schema) if self.schema is not None else None
        return FieldManager(
            self.group, self.version, self.kind, subresource, reset, self.clock, atom=atom
        )

    def apply(self, config: JSON, manager: str, force: bool = False, sub: str = "") -> JSON:
        self.live = self.fm(sub).apply(self.live, config, manager, force)
        return self.live

    def update(self, new: JSON, manager: str, sent: Any = None, sub: str = "") -> JSON:
        entries = self.fm(sub).update(self.live, new, manager, sent)
        obj: JSON = json.loads(json.dumps(new))
        obj.setdefault("metadata", {}).pop("managedFields", None)
        if entries:
            obj["metadata"]["managedFields"] = entries
        self.live = obj
        return obj

    def managers(self) -> dict[str, JSON]:
        """manager (with operation/subresource) → fieldsV1."""
        out: dict[str, JSON] = {}
        for e in (self.live or {}).get("metadata", {}).get("managedFields") or []:
            name = f"{e['manager']}/{e['operation']}" + (
                f"/{e['subresource']}" if e.get("subresource") else ""
            )
            out[name] = e["fieldsV1"]
        return out

    def entries(self) -> list[JSON]:
        return list((self.live or {}).get("metadata", {}).get("managedFields") or [])


def deployment(replicas: int | None = 2, image: str = "nginx:1.25", **meta: Any) -> JSON:
    spec: JSON = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "web", "image": image, "ports": [{"containerPort": 80}]}]
            },
        },
    }
    if replicas is not None:
        spec = {"replicas": replicas, **spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ssa-demo", "namespace": "ns", "labels": {"app": "web"}, **meta},
        "spec": spec,
    }


def configmap(data: dict[str, str] | None = None, **meta: Any) -> JSON:
    obj: JSON = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", **meta}}
    if data is not None:
        obj["data"] = data
    return obj


def status_error(exc: pytest.ExceptionInfo[apierrors.StatusError]) -> JSON:
    body: JSON = exc.value.body
    return body


# -- FieldsV1 ------------------------------------------------------------------------

# kube-apiserver's answer to `kubectl apply --server-side` of deployment() (byte for byte)
KUBE_APPLY_FIELDS = (
    '{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},'
    '"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":'
    '{"k:{\\"name\\":\\"web\\"}":{".":{},"f:image":{},"f:name":{},"f:ports":'
    '{"k:{\\"containerPort\\":80,\\"protocol\\":\\"TCP\\"}":{".":{},"f:containerPort":{}}}}}}}}}'
)


def test_create_on_apply_owns_exactly_what_was_sent() -> None:
    o = Obj("apps", "v1", "Deployment")
    o.apply(deployment(), "kubectl")
    [entry] = o.entries()
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == (
        "kubectl",
        "Apply",
        "apps/v1",
    )
    assert entry["time"] == "2026-01-01T00:00:01Z"
    assert json.dumps(entry["fieldsV1"], separators=(",", ":")) == KUBE_APPLY_FIELDS


def test_fields_v1_round_trips_and_orders_as_upstream() -> None:
    doc = json.loads(KUBE_APPLY_FIELDS)
    assert Set.from_fields_v1(doc).to_fields_v1() == doc
    s = Set.of(
        (PathElement.at(1),), (PathElement.value("b"),), (PathElement.value(2),),
        (PathElement.key({"name": "x"}),), (PathElement.field("z"),), (PathElement.field("a"),),
        (PathElement.value(True),),
    )  # fmt: skip
    # fields < keys < values (numbers < strings < bools) < indexes
    assert list(s.to_fields_v1()) == [
        "f:a", "f:z", 'k:{"name":"x"}', "v:2", 'v:"b"', "v:true", "i:1",
    ]  # fmt: skip


@pytest.mark.parametrize("garbage", [{"f:a": 1}, {"x:y": {}}, {"k:[1]": {}}, [], "f:a"], ids=repr)
def test_fields_v1_garbage_is_refused(garbage: Any) -> None:
    with pytest.raises(ValueError):
        Set.from_fields_v1(garbage)


def test_update_on_create_marks_added_maps_and_items_as_upstream() -> None:
    """kubectl create deployment: "." on labels and on the container (added), none on
    spec/template (Go's zero Deployment has them)."""
    o = Obj("apps", "v1", "Deployment")
    obj = deployment(replicas=1)
    obj["spec"]["template"]["spec"]["containers"] = [
        {"name": "nginx", "image": "nginx", "resources": {}}
    ]
    o.update(obj, "kubectl-create")
    assert o.managers()["kubectl-create/Update"] == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:replicas": {}, "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:containers": {'k:{"name":"nginx"}': {
                    ".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}},
            },
        },
    }  # fmt: skip


# -- apply: conflicts, force, shared ownership, removal ------------------------------------


def applied_then_scaled() -> Obj:
    """kubectl apply --server-side, then kubectl scale --replicas=3."""
    o = Obj("apps", "v1", "Deployment")
    live = o.apply(deployment(), "kubectl")
    scaled = json.loads(json.dumps(live))
    scaled["spec"]["replicas"] = 3
    o.update(scaled, "kubectl", sub="scale")
    return o


def test_conflict_with_an_updater_names_its_subresource_and_version() -> None:
    o = applied_then_scaled()
    with pytest.raises(apierrors.StatusError) as exc:
        o.apply(deployment(replicas=4), "kubectl")
    body = status_error(exc)
    assert body["code"] == 409 and body["reason"] == "Conflict"
    assert body["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
        "using apps/v1: .spec.replicas"
    )
    assert body["details"]["causes"] == [{
        "reason": "FieldManagerConflict",
        "message": 'conflict with "kubectl" with subresource "scale" using apps/v1',
        "field": ".spec.replicas",
    }]  # fmt: skip


def test_conflicts_with_several_managers_are_listed_by_manager() -> None:
    o = Obj("apps", "v1", "Deployment")
    o.apply(deployment(replicas=4), "kubectl")
    o.apply(deployment(replicas=4), "x")
    with pytest.raises(apierrors.StatusError) as exc:
        o.apply(deployment(replicas=5), "other")
    assert status_error(exc)["message"] == (
        'Apply failed with 2 conflicts: conflicts with "kubectl":\n- .spec.replicas\n'
        'conflicts with "x":\n- .spec.replicas'
    )


def test_force_takes_the_fields_and_drops_emptied_managers() -> None:
    o = applied_then_scaled()
    o.apply(deployment(replicas=4), "x", force=True)
    assert o.live is not None and o.live["spec"]["replicas"] == 4
    assert set(o.managers()) == {"kubectl/Apply", "x/Apply"}  # the scale entry is gone
    assert "f:replicas" not in o.managers()["kubectl/Apply"]["f:spec"]


def test_same_value_is_shared_and_survives_one_owner_leaving() -> None:
    o = Obj("", "v1", "ConfigMap")
    o.apply(configmap({"a": "1", "b": "2"}), "one")
    o.apply(configmap({"a": "1"}), "two")  # same value: no conflict, shared
    assert o.managers()["two/Apply"] == {"f:data": {"f:a": {}}}
    o.apply(configmap({"c": "3"}), "one")  # one stops sending a and b
    assert o.live is not None and o.live["data"] == {"a": "1", "c": "3"}  # b removed, a kept
    assert o.managers() == {
        "two/Apply": {"f:data": {"f:a": {}}},
        "one/Apply": {"f:data": {"f:c": {}}},
    }


def test_noop_apply_keeps_the_object_and_sets_no_time() -> None:
    o = Obj("", "v1", "ConfigMap")
    o.apply(configmap({"a": "1"}), "one")
    o.apply(configmap({"a": "1"}), "two")
    # an entry without time sorts first (kube-apiserver lists two before one)
    assert [(e["manager"], e.get("time")) for e in o.entries()] == [
        ("two", None),
        ("one", "2026-01-01T00:00:01Z"),
    ]
    before = json.dumps(o.live)
    o.apply(configmap({"a": "1"}), "one")
    assert json.dumps(o.live) == before


def test_removal_spares_fields_an_updater_changed() -> None:
    o = Obj("", "v1", "ConfigMap")
    live = o.apply(configmap({"a": "1", "b": "2"}), "applier")
    edited = json.loads(json.dumps(live))
    edited["data"]["b"] = "edited"
    o.update(edited, "kubectl-edit")  # the editor now owns data.b
    o.apply(configmap({"a": "1"}), "applier")
    assert o.live is not None and o.live["data"] == {"a": "1", "b": "edited"}


# -- list and map types ----------------------------------------------------------------


def test_set_list_items_are_owned_by_value_and_removed_with_them() -> None:
    o = Obj("", "v1", "ConfigMap")
    o.apply(configmap({"a": "1"}, finalizers=["b.io/x", "a.io/y"]), "one")
    assert o.managers()["one/Apply"]["f:metadata"] == {
        "f:finalizers": {'v:"a.io/y"': {}, 'v:"b.io/x"': {}}
    }
    o.apply(configmap({"a": "1"}), "one")
    assert o.live is not None and "finalizers" not in o.live["metadata"]


def test_map_list_items_of_two_appliers_merge() -> None:
    o = Obj("apps", "v1", "Deployment")
    o.apply(deployment(), "one")
    side = deployment(replicas=None)
    side["metadata"] = {"name": "ssa-demo", "namespace": "ns"}
    side["spec"] = {"template": {"spec": {"containers": [{"name": "side", "image": "envoy"}]}}}
    o.apply(side, "two")
    assert o.live is not None
    names = [c["name"] for c in o.live["spec"]["template"]["spec"]["containers"]]
    assert names == ["web", "side"]
    assert o.managers()["two/Apply"] == {"f:spec": {"f:template": {"f:spec": {"f:containers": {
        'k:{"name":"side"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}  # fmt: skip


def test_atomic_list_and_atomic_map_are_owned_whole() -> None:
    pod: JSON = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "args": ["a", "b"]}],
                 "tolerations": [{"key": "k", "operator": "Exists"}],
                 "nodeSelector": {"disk": "ssd"}},
    }  # fmt: skip
    o = Obj("", "v1", "Pod")
    o.apply(pod, "one")
    spec = o.managers()["one/Apply"]["f:spec"]
    assert spec["f:tolerations"] == {}  # x-kubernetes-list-type: atomic
    assert spec["f:containers"]['k:{"name":"c"}']["f:args"] == {}
    assert spec["f:nodeSelector"] == {}  # x-kubernetes-map-type: atomic
    other = json.loads(json.dumps(pod))
    other["spec"]["tolerations"] = [{"key": "k2", "operator": "Exists"}]
    with pytest.raises(apierrors.StatusError) as exc:
        o.apply(other, "two")
    assert status_error(exc)["details"]["causes"][0]["field"] == ".spec.tolerations"


def test_atomic_struct_selector_is_one_field() -> None:
    o = Obj("apps", "v1", "Deployment")
    o.apply(deployment(), "one")
    assert o.managers()["one/Apply"]["f:spec"]["f:selector"] == {}  # LabelSelector: atomic


# -- updates: buckets, cap, managedFields sent by the client --------------------------------


def test_update_entries_are_per_manager_and_version_and_merge_over_time() -> None:
    o = Obj("", "v1", "ConfigMap")
    o.update(configmap({"a": "1"}), "ctl")
    o.update(configmap({"a": "1", "b": "2"}), "ctl")
    assert o.managers() == {"ctl/Update": {"f:data": {".": {}, "f:a": {}, "f:b": {}}}}
    assert o.entries()[0]["time"] == "2026-01-01T00:00:02Z"


def test_more_than_ten_updaters_fold_into_ancient_changes() -> None:
    o = Obj("", "v1", "ConfigMap")
    data: dict[str, str] = {}
    for i in range(12):
        data = {**data, f"k{i}": "v"}
        o.update(configmap(data), f"m{i:02d}")
    names = [e["manager"] for e in o.entries()]
    assert len(names) == 10 and names[0] == "ancient-changes"
    assert "m00" not in names and "m02" not in names and "m03" in names
    assert o.managers()["ancient-changes/Update"]["f:data"].keys() >= {"f:k0", "f:k1", "f:k2"}


def test_empty_managed_fields_reset_and_stop_tracking_updates() -> None:
    o = Obj("", "v1", "ConfigMap")
    live = o.update(configmap({"a": "1"}), "ctl")
    o.update({**live, "data": {"a": "2"}}, "other", sent=[])
    assert o.entries() == []
    o.update(configmap({"a": "3"}), "later")  # an object without managedFields: untracked
    assert o.entries() == []
    o.apply(configmap({"a": "4"}), "applier")  # apply always tracks
    assert list(o.managers()) == ["applier/Apply"]


def test_garbage_managed_fields_keep_the_live_ones() -> None:
    o = Obj("", "v1", "ConfigMap")
    o.update(configmap({"a": "1"}), "ctl")
    o.update(configmap({"a": "1"}), "other", sent=[{"manager": "zz", "operation": "Bogus"}])
    assert list(o.managers()) == ["ctl/Update"]


def test_valid_managed_fields_sent_by_a_client_replace_the_live_ones() -> None:
    o = Obj("", "v1", "ConfigMap")
    o.update(configmap({"a": "1"}), "ctl")
    sent = [{"manager": "zz", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {}}}]  # fmt: skip
    o.update(configmap({"a": "1"}), "other", sent=sent)
    assert o.entries() == sent  # no time: the client sent none


# -- subresources ---------------------------------------------------------------------


def test_status_update_is_recorded_with_its_subresource() -> None:
    o = Obj("apps", "v1", "Deployment")
    live = o.apply(deployment(), "kubectl")
    new = json.loads(json.dumps(live))
    new["status"] = {"observedGeneration": 7}
    o.update(new, "curl", sub="status")
    status = [e for e in o.entries() if e.get("subresource") == "status"]
    assert [(e["manager"], e["fieldsV1"]) for e in status] == [
        ("curl", {"f:status": {"f:observedGeneration": {}}})  # Go's zero status is {}
    ]


def test_status_apply_does_not_own_spec() -> None:
    o = Obj("apps", "v1", "Deployment")
    o.apply(deployment(), "kubectl")
    cfg = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ssa-demo"},
           "spec": {"replicas": 9}, "status": {"replicas": 2}}  # fmt: skip
    o.apply(cfg, "ctrl", sub="status")
    assert o.managers()["ctrl/Apply/status"] == {"f:status": {"f:replicas": {}}}


# -- CSA → SSA, errors, names ------------------------------------------------------------


def test_kubectl_may_take_what_its_last_applied_annotation_lists() -> None:
    last = '{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"cm"}}\n'
    o = Obj("", "v1", "ConfigMap")
    ann = {"kubectl.kubernetes.io/last-applied-configuration": last}
    o.update(configmap({"a": "1"}, annotations=ann), "kubectl-client-side-apply")
    with pytest.raises(apierrors.StatusError):
        o.apply(configmap({"a": "2"}), "someone-else")
    o.apply(configmap({"a": "2"}), "kubectl")  # the upgrade: no conflict for kubectl
    assert o.live is not None
    assert (
        o.live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        == '{"apiVersion":"v1","data":{"a":"2"},"kind":"ConfigMap","metadata":{"name":"cm"}}\n'
    )


@pytest.mark.parametrize(
    ("config", "code", "message"),
    [
        ({**configmap(), "kind": "Secret"}, 400, "invalid object type: /v1, Kind=Secret"),
        ({**configmap(), "apiVersion": "v2"}, 400, "invalid object type: /v2, Kind=ConfigMap"),
        (configmap(managedFields=[]), 400, "metadata.managedFields must be nil"),
        ({**configmap(namespace="ns"), "bogus": 1}, 500,
         "failed to create typed patch object (ns/cm; /v1, Kind=ConfigMap): .bogus: "
         "field not declared in schema"),
        (configmap(finalizers=["a.io/x", "a.io/x"]), 500,
         "failed to create typed patch object (/cm; /v1, Kind=ConfigMap): .metadata.finalizers: "
         'duplicate entries for key [="a.io/x"]'),
        (configmap(finalizers=["a", "a", "b", "b"]), 500,
         "failed to create typed patch object (/cm; /v1, Kind=ConfigMap): errors:\n"
         '  .metadata.finalizers: duplicate entries for key [="a"]\n'
         '  .metadata.finalizers: duplicate entries for key [="b"]'),
        ({**deployment(), "metadata": {"name": "d"}, "spec": {"template": {"spec": {
            "containers": [{"name": "web", "image": "i"}, {"name": "web", "image": "j"}]}}}},
         500, "failed to create typed patch object (/d; apps/v1, Kind=Deployment): "
         '.spec.template.spec.containers: duplicate entries for key [name="web"]'),
        ({**deployment(), "metadata": {"name": "d"}, "spec": {"template": {"spec": {
            "containers": [{"image": "i"}]}}}},
         500, "failed to create typed patch object (/d; apps/v1, Kind=Deployment): "
         ".spec.template.spec.containers: element 0: associative list with keys has an "
         'element that omits key field "name" (and doesn\'t have default value)'),
    ],
)  # fmt: skip
def test_apply_refuses_as_upstream(config: JSON, code: int, message: str) -> None:
    group, _, version = config["apiVersion"].rpartition("/")
    kind = config["kind"] if config["kind"] in ("ConfigMap", "Deployment") else "ConfigMap"
    with pytest.raises(apierrors.StatusError) as exc:
        Obj(group, version if group else "v1", kind).apply(config, "m")
    body = status_error(exc)
    assert (body["code"], body["message"]) == (code, message)


def test_an_empty_apply_gives_up_every_field_the_applier_owned() -> None:
    """Upstream: applying a configuration that sets nothing (kind, apiVersion and name
    only) removes what the applier alone owned and drops its entry; no error."""
    o = Obj("", "v1", "ConfigMap")
    o.apply(configmap({"a": "1"}), "one")
    o.apply(configmap({"b": "2"}), "two")
    live = o.apply(configmap(), "one")
    assert live["data"] == {"b": "2"}
    assert list(o.managers()) == ["two/Apply"]


def test_manager_from_user_agent_as_upstream() -> None:
    assert manager_or_user_agent("mine", "kubectl/v1.37") == "mine"
    assert manager_or_user_agent("", "kubectl/v1.37.1 (linux/amd64) kubernetes/abc") == "kubectl"
    assert manager_or_user_agent("", "py\tthon/1") == "python"
    assert len(manager_or_user_agent("", "x" * 200)) == 128


def test_registered_schema_drives_a_custom_resource() -> None:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["id"],
                      "items": {"type": "object", "properties": {"id": {"type": "string"},
                                                                 "v": {"type": "string"}}}}}}},
    }  # fmt: skip
    o = Obj("example.com", "v1", "Widget", schema=schema)
    cr = {"apiVersion": "example.com/v1", "kind": "Widget",
          "metadata": {"name": "w", "labels": {"a": "b"}},
          "spec": {"items": [{"id": "1", "v": "x"}]}}  # fmt: skip
    o.apply(cr, "one")
    assert o.managers()["one/Apply"] == {
        "f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {"f:items": {'k:{"id":"1"}': {".": {}, "f:id": {}, "f:v": {}}}},
    }


def test_identifiers_as_upstream() -> None:
    assert mf.identifier("k", "Apply", "apps/v1") == '{"manager":"k","operation":"Apply"}'
    assert mf.identifier("k", "Update", "v1", "status") == (
        '{"manager":"k","operation":"Update","apiVersion":"v1","subresource":"status"}'
    )


def test_kubectl_may_not_take_a_field_that_drifted_from_last_applied() -> None:
    """kubectl apply (client-side), kubectl scale, kubectl apply --server-side: the
    replicas differ from the annotation, so they are the scaler's: 409 (kube-apiserver)."""
    last = '{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"cm"}}\n'
    o = Obj("", "v1", "ConfigMap")
    ann = {"kubectl.kubernetes.io/last-applied-configuration": last}
    live = o.update(configmap({"a": "1"}, annotations=ann), "kubectl-client-side-apply")
    o.update({**live, "data": {"a": "5"}}, "kubectl-edit")
    with pytest.raises(apierrors.StatusError) as exc:
        o.apply(configmap({"a": "2"}), "kubectl")
    assert status_error(exc)["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a'
    )


def test_a_write_changing_only_managed_fields_times_keeps_the_stored_ones() -> None:
    from proxy.endpoints.handlers.managed import keep_times_of_noop

    entry = {"manager": "m", "operation": "Apply", "apiVersion": "v1",
             "time": "2026-01-01T00:00:01Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {}}}  # fmt: skip
    current = configmap({"a": "1"}, managedFields=[entry], resourceVersion="5")
    later = {**entry, "time": "2026-01-01T00:00:09Z"}
    updated = configmap({"a": "1"}, managedFields=[later])
    keep_times_of_noop(current, updated)
    assert updated["metadata"]["managedFields"] == [entry]  # nothing else changed: no write
    changed = configmap({"a": "2"}, managedFields=[later])
    keep_times_of_noop(current, changed)
    assert changed["metadata"]["managedFields"] == [later]


def _subtrees(s: Set) -> list[Set]:
    out = [s]
    for child in s.children.values():
        out.extend(_subtrees(child))
    return out


def test_field_set_is_built_level_by_level_without_empty_subtrees() -> None:
    """``to_field_set`` builds the tree node by node: what it owns is exactly the
    paths upstream's ToFieldSet lists (empty maps and nulls are members, a list only
    through its items, an empty declared list is nothing), and no subtree it keeps
    is empty."""
    from proxy.fieldmanager import typed_value as tv
    from proxy.fieldmanager.typed import resolve_type

    pod = {
        "metadata": {"labels": {}, "annotations": None, "finalizers": ["a"]},
        "spec": {
            "containers": [{"name": "c", "image": "i", "env": [], "resources": {}}],
            "volumes": [],
            "nodeSelector": {"k": "v"},
        },
    }
    got = tv.to_field_set(pod, resolve_type("", "v1", "Pod"))
    assert got.to_fields_v1() == {
        "f:metadata": {"f:annotations": {}, "f:finalizers": {'v:"a"': {}}, "f:labels": {}},
        "f:spec": {
            "f:containers": {
                'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}
            },
            "f:nodeSelector": {},  # an atomic map: owned whole
        },
    }
    assert all(t.members or t.children for t in _subtrees(got)[1:])
    assert tv.to_field_set("a leaf", resolve_type("", "v1", "Pod")).empty()


def test_reapply_of_everything_sent_before_does_not_walk_the_merged_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Removal looks at the merged object's fields only when the applier owned
    something last time that nobody owns now: a re-apply that sends all it sent
    before (what controllers do) walks its configuration once; dropping a field
    walks the merged object too, and removes the field."""
    from proxy.fieldmanager import typed_value as tv

    walked: list[Any] = []
    real = tv.to_field_set

    def counting(value: Any, atom: Any, strict: bool = False) -> Set:
        walked.append(value)
        return real(value, atom, strict)

    monkeypatch.setattr(tv, "to_field_set", counting)
    o = Obj("", "v1", "ConfigMap")
    o.apply(configmap({"a": "1", "b": "2"}), "applier")
    walked.clear()
    o.apply(configmap({"a": "changed", "b": "2"}), "applier")
    assert len(walked) == 1 and walked[0]["data"] == {"a": "changed", "b": "2"}
    walked.clear()
    o.apply(configmap({"a": "changed"}), "applier")
    assert len(walked) == 2
    assert o.live is not None and o.live["data"] == {"a": "changed"}
