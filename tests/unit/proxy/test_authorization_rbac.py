"""RBAC in isolation: rule matching (wildcards, subresources, resourceNames,
nonResourceURLs), binding subjects, missing roles, the union's reasons, upstream's 403
messages, and ClusterRole aggregation over the bootstrap policy."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from proxy.authorization.authorizer import Attributes, Decision
from proxy.authorization.decision import forbidden
from proxy.authorization.modes import AlwaysDeny, NamedAuthorizer, PrivilegedGroups, Union
from proxy.authorization.rbac.aggregation import aggregated_rules
from proxy.authorization.rbac.informer import RBACInformer
from proxy.authorization.rbac.policy_rule import (
    Binding,
    PolicyRule,
    compact_string,
    parse_binding,
    parse_rules,
    rule_allows,
)
from proxy.authorization.rbac.reconcile import reconcile_role
from proxy.authorization.rbac.rule_resolver import RBACAuthorizer
from proxy.kube.bootstrap.rbac_policy import cluster_role_bindings, cluster_roles
from proxy.request.user import UserInfo
from tests.unit.proxy.informer.fakes import fake_factory

ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))


def _attrs(verb: str, resource: str = "", **kw: Any) -> Attributes:
    return Attributes(ALICE, verb, resource=resource, **kw)


def test_rule_matching() -> None:
    rule = PolicyRule(("get", "list"), ("",), ("pods", "*/status"), ())
    assert rule_allows(_attrs("get", "pods", name="p"), rule)
    assert not rule_allows(_attrs("delete", "pods", name="p"), rule)
    assert not rule_allows(_attrs("get", "pods", api_group="apps"), rule)
    assert rule_allows(_attrs("get", "deployments", subresource="status"), rule)
    assert not rule_allows(_attrs("get", "pods", subresource="log"), rule)
    named = PolicyRule(("get",), ("",), ("configmaps",), ("cm1",))
    assert rule_allows(_attrs("get", "configmaps", name="cm1"), named)
    assert not rule_allows(_attrs("get", "configmaps", name="cm2"), named)
    assert not rule_allows(_attrs("get", "configmaps"), named)  # list-ish: no name
    urls = PolicyRule(("get",), non_resource_urls=("/healthz/*", "/version"))
    assert rule_allows(Attributes(ALICE, "get", False, path="/healthz/etcd"), urls)
    assert rule_allows(Attributes(ALICE, "get", False, path="/version"), urls)
    assert not rule_allows(Attributes(ALICE, "get", False, path="/version/x"), urls)
    star = PolicyRule(("*",), ("*",), ("*",))
    assert rule_allows(_attrs("escalate", "roles", api_group="rbac.authorization.k8s.io"), star)
    assert (
        compact_string(rule)
        == '{APIGroups:[""], Resources:["pods" "*/status"], Verbs:["get" "list"]}'
    )


class State:
    """An in-memory RBACState."""

    def __init__(self, roles: dict[str, list[dict[str, Any]]], bindings: list[Binding]) -> None:
        self.roles = {name: parse_rules(rules) for name, rules in roles.items()}
        self.bindings = bindings

    def cluster_role_rules(self, name: str) -> tuple[PolicyRule, ...] | None:
        return self.roles.get(name)

    def role_rules(self, namespace: str, name: str) -> tuple[PolicyRule, ...] | None:
        return self.roles.get(f"{namespace}/{name}")

    def cluster_role_bindings(self) -> Iterable[Binding]:
        return [b for b in self.bindings if not b.namespace]

    def role_bindings(self, namespace: str) -> Iterable[Binding]:
        return [b for b in self.bindings if b.namespace == namespace]


def _binding(name: str, ns: str, kind: str, role: str, *subjects: dict[str, str]) -> Binding:
    meta = {"name": name, "namespace": ns} if ns else {"name": name}
    return parse_binding(
        {"metadata": meta, "roleRef": {"kind": kind, "name": role}, "subjects": list(subjects)}
    )


def test_rbac_authorizer_bindings_subjects_and_reasons() -> None:
    state = State(
        {
            "pod-reader": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
            "team-a/cm": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}],
        },
        [
            _binding(
                "read", "team-a", "ClusterRole", "pod-reader", {"kind": "Group", "name": "devs"}
            ),
            _binding("cm", "team-a", "Role", "cm", {"kind": "ServiceAccount", "name": "robot"}),
            _binding("broken", "team-b", "ClusterRole", "gone", {"kind": "User", "name": "alice"}),
        ],
    )
    rbac = RBACAuthorizer(state)
    decision, reason = rbac.authorize(_attrs("list", "pods", namespace="team-a"))
    assert decision is Decision.ALLOW
    assert reason == (
        'RBAC: allowed by RoleBinding "read/team-a" of ClusterRole "pod-reader" to Group "devs"'
    )
    assert rbac.authorize(_attrs("list", "pods", namespace="team-c")) == (Decision.NO_OPINION, "")
    assert rbac.authorize(_attrs("list", "pods")) == (Decision.NO_OPINION, "")  # cluster scope
    decision, reason = rbac.authorize(_attrs("list", "pods", namespace="team-b"))
    assert decision is Decision.NO_OPINION
    assert reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'
    robot = UserInfo("system:serviceaccount:team-a:robot")
    assert (
        rbac.authorize(
            Attributes(robot, "delete", namespace="team-a", resource="configmaps", name="x")
        )[0]
        is Decision.ALLOW
    )
    rules = rbac.rules_for(ALICE, "team-b")
    assert rules.incomplete and rules.errors == (
        'clusterrole.rbac.authorization.k8s.io "gone" not found',
    )


def test_union_privileged_and_always_deny_reason() -> None:
    chain = Union([
        NamedAuthorizer("Privileged", "privileged", PrivilegedGroups()),
        NamedAuthorizer("AlwaysDeny", "deny", AlwaysDeny()),
    ])  # fmt: skip
    admin = UserInfo("root", groups=("system:masters",))
    assert chain.authorize(Attributes(admin, "delete", resource="nodes"))[0] is Decision.ALLOW
    decision, reason = chain.authorize(_attrs("list", "pods", namespace="default"))
    assert (decision, reason) == (Decision.NO_OPINION, "Everything is forbidden.")
    err = forbidden(_attrs("list", "pods", namespace="default"), reason)
    assert err.code == 403 and err.reason == "Forbidden"
    assert err.message == (
        'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the '
        'namespace "default": Everything is forbidden.'
    )


def test_forbidden_messages_as_upstream() -> None:
    named = forbidden(_attrs("get", "nodes", name="n1"), "")
    assert named.message == (
        'nodes "n1" is forbidden: User "alice" cannot get resource "nodes" in API group "" at '
        "the cluster scope"
    )
    assert named.body["details"] == {"name": "n1", "kind": "nodes"}
    sub = forbidden(
        _attrs(
            "get", "deployments", api_group="apps", namespace="x", subresource="scale", name="d"
        ),
        "",
    )
    assert sub.message.startswith(
        'deployments.apps "d" is forbidden: User "alice" cannot get resource '
        '"deployments/scale" in API group "apps"'
    )
    path = forbidden(Attributes(ALICE, "get", False, path="/metrics"), "")
    assert path.message == 'forbidden: User "alice" cannot get path "/metrics"'
    assert path.body["details"] == {}


def test_aggregation_of_the_bootstrap_policy() -> None:
    informer = RBACInformer(fake_factory())
    informer.informers["clusterroles"].replace(cluster_roles(), "1")
    admin = aggregated_rules(informer, "admin")
    view = aggregated_rules(informer, "view")
    edit = aggregated_rules(informer, "edit")
    assert admin is not None and view is not None and edit is not None
    assert aggregated_rules(informer, "cluster-admin") is None
    # view's rules come from system:aggregate-to-view only; edit gets view's (labelled
    # aggregate-to-edit) once view has been aggregated — here view is still empty
    assert {
        "apiGroups": [""],
        "resources": ["namespaces"],
        "verbs": ["get", "list", "watch"],
    } in view
    assert any("serviceaccounts/token" in r["resources"] for r in edit)
    assert any("localsubjectaccessreviews" in r.get("resources", []) for r in admin)
    names = [b["metadata"]["name"] for b in cluster_role_bindings()]
    assert "system:public-info-viewer" in names and "cluster-admin" in names


def test_reconcile_adds_never_removes() -> None:
    wanted = next(r for r in cluster_roles() if r["metadata"]["name"] == "system:discovery")
    existing = {
        "metadata": {"name": "system:discovery", "labels": {"mine": "1"}},
        "rules": [{"nonResourceURLs": ["/extra"], "verbs": ["get"]}],
    }
    merged = reconcile_role(existing, wanted)
    assert merged["metadata"]["labels"]["mine"] == "1"
    assert merged["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
    assert merged["rules"][0] == {"nonResourceURLs": ["/extra"], "verbs": ["get"]}
    assert wanted["rules"][0] in merged["rules"]
