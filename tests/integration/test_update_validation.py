"""What an update may not change (issue 23 §6): upstream's ``ValidateUpdate`` rules,
each through PUT (and roleRef through merge patch and apply too), answered 422 with
upstream's cause. Before: a RoleBinding's or ClusterRoleBinding's roleRef changed
freely, a ClusterRoleBinding took ``roleRef.kind: Role``, a PVC's spec changed."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import pytest

from tests.integration.conftest import create

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
RBAC = "/apis/rbac.authorization.k8s.io/v1"
REF = 'rbac.RoleRef{{APIGroup:"rbac.authorization.k8s.io", Kind:"{kind}", Name:"{name}"}}'


@dataclass(frozen=True)
class Case:
    path: str  # the collection, {ns} for the test's namespace
    body: JSON
    changed: JSON  # merged into the stored object for the PUT
    cause: tuple[str, str]  # (field, message) upstream answers
    also: tuple[str, ...] = field(default=())  # other write paths: "merge", "apply"


def _binding(kind: str, ref_kind: str, ref_name: str, name: str = "b") -> JSON:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind,
                        "name": ref_name},
            "subjects": [{"kind": "User", "name": "u",
                          "apiGroup": "rbac.authorization.k8s.io"}]}  # fmt: skip


CASES = {
    "rolebinding-roleRef": Case(
        f"{RBAC}/namespaces/{{ns}}/rolebindings", _binding("RoleBinding", "ClusterRole", "view"),
        {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "edit"}},
        ("roleRef", "Invalid value: " + REF.format(kind="ClusterRole", name="edit")
         + ": cannot change roleRef"),
        also=("merge", "apply"),
    ),
    "clusterrolebinding-roleRef": Case(
        f"{RBAC}/clusterrolebindings", _binding("ClusterRoleBinding", "ClusterRole", "view"),
        {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "admin"}},
        ("roleRef", "Invalid value: " + REF.format(kind="ClusterRole", name="admin")
         + ": cannot change roleRef"),
        also=("merge", "apply"),
    ),
    "configmap-immutable": Case(
        "/api/v1/namespaces/{ns}/configmaps",
        {"metadata": {"name": "cm"}, "data": {"a": "1"}, "immutable": True},
        {"data": {"a": "2"}},
        ("data", "Forbidden: field is immutable when `immutable` is set"),
    ),
    "secret-immutable": Case(
        "/api/v1/namespaces/{ns}/secrets",
        {"metadata": {"name": "s"}, "stringData": {"a": "1"}, "immutable": True},
        {"data": {"a": "Mg=="}},
        ("data", "Forbidden: field is immutable when `immutable` is set"),
    ),
    "secret-type": Case(
        "/api/v1/namespaces/{ns}/secrets",
        {"metadata": {"name": "t"}, "type": "Opaque"},
        {"type": "example.com/other"},
        ("type", 'Invalid value: "example.com/other": field is immutable'),
    ),
    "pvc-spec": Case(
        "/api/v1/namespaces/{ns}/persistentvolumeclaims",
        {"metadata": {"name": "pvc"},
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "a",
                  "resources": {"requests": {"storage": "1Gi"}}}},
        {"spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "a",
                  "resources": {"requests": {"storage": "1Gi"}}}},
        ("spec", "Forbidden: spec is immutable after creation except resources.requests "
         "and volumeAttributesClassName for bound claims"),
    ),
    "deployment-selector": Case(
        "/apis/apps/v1/namespaces/{ns}/deployments",
        {"metadata": {"name": "d"},
         "spec": {"selector": {"matchLabels": {"a": "1"}},
                  "template": {"metadata": {"labels": {"a": "1", "b": "2"}},
                               "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        {"spec": {"selector": {"matchLabels": {"a": "1", "b": "2"}},
                  "template": {"metadata": {"labels": {"a": "1", "b": "2"}},
                               "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        ("spec.selector", 'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":'
         '"1", "b":"2"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is '
         "immutable"),
    ),
    "job-template": Case(
        "/apis/batch/v1/namespaces/{ns}/jobs",
        {"metadata": {"name": "j"},
         "spec": {"template": {"spec": {"restartPolicy": "Never",
                                        "containers": [{"name": "c", "image": "i"}]}}}},
        {"spec": {"template": {"spec": {"restartPolicy": "Never",
                                        "containers": [{"name": "c", "image": "j"}]}}}},
        ("spec.template", "Invalid value: "),
    ),
}  # fmt: skip


def _merged(stored: JSON, changed: JSON) -> JSON:
    out = copy.deepcopy(stored)
    for key, value in changed.items():
        if key == "spec" and isinstance(out.get("spec"), dict):
            out["spec"] = {**out["spec"], **value}
        else:
            out[key] = value
    return out


async def _status(resp: aiohttp.ClientResponse) -> JSON:
    body: JSON = await resp.json()
    return body


def _assert_cause(status: JSON, code: int, cause: tuple[str, str]) -> None:
    assert status.get("code") == code, status
    causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    assert any(f == cause[0] and m.startswith(cause[1]) for f, m in causes), causes


@pytest.mark.parametrize("name", sorted(CASES))
async def test_an_update_may_not_change_what_upstream_freezes(
    http: aiohttp.ClientSession, namespace: str, name: str
) -> None:
    case = CASES[name]
    collection = case.path.format(ns=namespace)
    body = copy.deepcopy(case.body)
    if collection.endswith("/clusterrolebindings"):
        body["metadata"]["name"] = f"{namespace}-crb"
    stored = await create(http, collection, body)
    path = f"{collection}/{stored['metadata']['name']}"
    async with http.put(path, json=_merged(stored, case.changed)) as resp:
        _assert_cause(await _status(resp), 422, case.cause)
    headers = {"Content-Type": "application/merge-patch+json"}
    if "merge" in case.also:
        async with http.patch(path, data=orjson.dumps(case.changed), headers=headers) as resp:
            _assert_cause(await _status(resp), 422, case.cause)
    if "apply" in case.also:
        applied = {**_merged(body, case.changed), "metadata": {"name": stored["metadata"]["name"]}}
        headers = {"Content-Type": "application/apply-patch+yaml"}
        async with http.patch(f"{path}?fieldManager=t&force=true", data=orjson.dumps(applied),
                              headers=headers) as resp:  # fmt: skip
            _assert_cause(await _status(resp), 422, case.cause)
    async with http.get(path) as resp:  # nothing changed
        assert (await resp.json())["metadata"]["resourceVersion"] == (
            stored["metadata"]["resourceVersion"]
        )


@pytest.mark.parametrize(
    ("kind", "ref_kind", "cause"),
    [
        ("ClusterRoleBinding", "Role",
         ("roleRef.kind", 'Unsupported value: "Role": supported values: "ClusterRole"')),
        ("RoleBinding", "Pod", ("roleRef.kind", 'Unsupported value: "Pod": supported values: '
                                '"Role", "ClusterRole"')),
    ],
)  # fmt: skip
async def test_a_binding_names_a_role_of_a_kind_it_may_bind(
    http: aiohttp.ClientSession, namespace: str, kind: str, ref_kind: str, cause: tuple[str, str]
) -> None:
    body = _binding(kind, ref_kind, "r", name=f"{namespace}-bad")
    plural = kind.lower() + "s"
    path = f"{RBAC}/{plural}" if kind.startswith("Cluster") else (
        f"{RBAC}/namespaces/{namespace}/{plural}"
    )
    async with http.post(path, json=body) as resp:
        _assert_cause(await _status(resp), 422, cause)


async def test_an_empty_role_ref_api_group_is_defaulted(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    body = _binding("RoleBinding", "Role", "r")
    del body["roleRef"]["apiGroup"]
    created = await create(http, f"{RBAC}/namespaces/{namespace}/rolebindings", body)
    assert created["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
