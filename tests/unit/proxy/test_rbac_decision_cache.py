"""RBAC's memoized decisions are exact: a change of any RBAC object through the
informer is seen by the very next decision (rbac.decision_cache)."""

from __future__ import annotations

from typing import Any

from proxy.authorization.authorizer import Attributes, Decision
from proxy.authorization.rbac import decision_cache
from proxy.authorization.rbac.informer import RBACInformer
from proxy.authorization.rbac.rule_resolver import RBACAuthorizer
from proxy.request.user import UserInfo
from tests.unit.proxy.informer.fakes import deliver, fake_factory

ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))
GET_POD = Attributes(ALICE, "get", namespace="team", resource="pods", name="p1")
RBAC = "rbac.authorization.k8s.io"


def _informer() -> RBACInformer:
    informer = RBACInformer(fake_factory())
    for plural in ("roles", "rolebindings", "clusterroles", "clusterrolebindings"):
        informer.informers[plural].replace([], "1")
    return informer


def _apply(informer: RBACInformer, plural: str, kind: str, obj: dict[str, Any]) -> None:
    deliver(informer.informers[plural], kind, obj)


def _role(kind: str, name: str, ns: str, resources: list[str]) -> dict[str, Any]:
    meta = {"name": name, "namespace": ns} if ns else {"name": name}
    rules = [{"apiGroups": [""], "resources": resources, "verbs": ["get"]}]
    return {"kind": kind, "metadata": meta, "rules": rules}


def _binding(kind: str, name: str, ns: str, role_kind: str, role: str,
             subject: dict[str, str]) -> dict[str, Any]:  # fmt: skip
    meta = {"name": name, "namespace": ns} if ns else {"name": name}
    return {"kind": kind, "metadata": meta, "subjects": [{"apiGroup": RBAC, **subject}],
            "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role}}  # fmt: skip


def test_a_rolebinding_change_is_seen_on_the_very_next_decision() -> None:
    informer = _informer()
    rbac = RBACAuthorizer(informer)
    _apply(informer, "roles", "ADDED", _role("Role", "pod-reader", "team", ["pods"]))
    assert rbac.authorize(GET_POD) == (Decision.NO_OPINION, "")
    assert rbac.authorize(GET_POD) == (Decision.NO_OPINION, "")  # now cached
    binding = _binding("RoleBinding", "read", "team", "Role", "pod-reader",
                       {"kind": "User", "name": "alice"})  # fmt: skip
    _apply(informer, "rolebindings", "ADDED", binding)
    decision, reason = rbac.authorize(GET_POD)
    assert decision is Decision.ALLOW
    assert reason == ('RBAC: allowed by RoleBinding "read/team" of Role "pod-reader" '
                      'to User "alice"')  # fmt: skip
    # the binding now names another user: alice loses access on the next decision
    _apply(
        informer,
        "rolebindings",
        "MODIFIED",
        _binding(
            "RoleBinding", "read", "team", "Role", "pod-reader", {"kind": "User", "name": "bob"}
        ),
    )
    assert rbac.authorize(GET_POD) == (Decision.NO_OPINION, "")
    # a group binding, then its deletion
    _apply(
        informer,
        "rolebindings",
        "MODIFIED",
        _binding(
            "RoleBinding", "read", "team", "Role", "pod-reader", {"kind": "Group", "name": "devs"}
        ),
    )
    assert rbac.authorize(GET_POD)[0] is Decision.ALLOW
    _apply(informer, "rolebindings", "DELETED", binding)
    assert rbac.authorize(GET_POD) == (Decision.NO_OPINION, "")


def _bind_reader(informer: RBACInformer, kind: str, name: str) -> None:
    """ClusterRoleBinding "r" of ClusterRole "reader" to one subject."""
    subject = {"kind": kind, "name": name}
    binding = _binding("ClusterRoleBinding", "r", "", "ClusterRole", "reader", subject)
    _apply(informer, "clusterrolebindings", "ADDED", binding)


def test_role_and_cluster_role_changes_and_relists_are_seen() -> None:
    informer = _informer()
    rbac = RBACAuthorizer(informer)
    _apply(informer, "clusterroles", "ADDED", _role("ClusterRole", "reader", "", ["pods"]))
    _bind_reader(informer, "Group", "devs")
    assert rbac.authorize(GET_POD)[0] is Decision.ALLOW
    # the role loses the rule
    _apply(informer, "clusterroles", "MODIFIED", _role("ClusterRole", "reader", "", ["secrets"]))
    assert rbac.authorize(GET_POD) == (Decision.NO_OPINION, "")
    _apply(informer, "clusterroles", "MODIFIED", _role("ClusterRole", "reader", "", ["pods"]))
    assert rbac.authorize(GET_POD)[0] is Decision.ALLOW
    # a relist without the binding (after a 410 Gone)
    informer.informers["clusterrolebindings"].replace([], "2")
    assert rbac.authorize(GET_POD) == (Decision.NO_OPINION, "")
    # the role itself deleted while bound: the reason names it
    _bind_reader(informer, "User", "alice")
    assert rbac.authorize(GET_POD)[0] is Decision.ALLOW
    _apply(informer, "clusterroles", "DELETED", _role("ClusterRole", "reader", "", ["pods"]))
    missing = 'RBAC: clusterrole.rbac.authorization.k8s.io "reader" not found'
    assert rbac.authorize(GET_POD) == (Decision.NO_OPINION, missing)


def test_the_key_separates_users_groups_and_attributes() -> None:
    informer = _informer()
    rbac = RBACAuthorizer(informer)
    _apply(informer, "roles", "ADDED", _role("Role", "one", "team", ["pods"]))
    _apply(
        informer,
        "rolebindings",
        "ADDED",
        _binding("RoleBinding", "b", "team", "Role", "one", {"kind": "Group", "name": "devs"}),
    )
    assert rbac.authorize(GET_POD)[0] is Decision.ALLOW
    other_groups = UserInfo("alice", groups=("system:authenticated",))
    assert rbac.authorize(Attributes(other_groups, "get", namespace="team", resource="pods",
                                     name="p1"))[0] is Decision.NO_OPINION  # fmt: skip
    for attrs in (
        Attributes(ALICE, "delete", namespace="team", resource="pods", name="p1"),
        Attributes(ALICE, "get", namespace="other", resource="pods", name="p1"),
        Attributes(ALICE, "get", namespace="team", resource="pods", subresource="log"),
        Attributes(ALICE, "get", namespace="team", api_group="apps", resource="pods"),
        Attributes(ALICE, "get", False, path="/api/v1/namespaces/team/pods/p1"),
    ):
        assert rbac.authorize(attrs)[0] is Decision.NO_OPINION, attrs


def test_the_cache_is_bounded() -> None:
    informer = _informer()
    rbac = RBACAuthorizer(informer)
    for i in range(decision_cache.MAX_ENTRIES + 10):
        rbac.authorize(Attributes(ALICE, "get", namespace="team", resource="pods", name=f"p{i}"))
    assert len(rbac.cache._entries) <= decision_cache.MAX_ENTRIES
