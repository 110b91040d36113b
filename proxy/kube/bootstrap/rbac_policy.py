"""The bootstrap policy: the cluster roles and bindings every cluster starts with
(the part of upstream's ``bootstrappolicy`` this server's users need): cluster-admin,
the aggregated admin/edit/view and the rules aggregated into them, system:discovery,
system:basic-user, system:public-info-viewer, system:monitoring,
system:auth-delegator, system:service-account-issuer-discovery, and their bindings.
Each carries ``kubernetes.io/bootstrapping: rbac-defaults`` and
``rbac.authorization.kubernetes.io/autoupdate: "true"``.
"""

from __future__ import annotations

from typing import Any

from proxy.authorization.rbac.reconcile import AUTOUPDATE, RBACPolicy

__all__ = ["bootstrap_policy", "cluster_role_bindings", "cluster_roles"]

BOOTSTRAPPING = {"kubernetes.io/bootstrapping": "rbac-defaults"}
GROUP = "rbac.authorization.k8s.io"
AGG = "rbac.authorization.k8s.io/aggregate-to-"

JSON = dict[str, Any]

READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
READ_WRITE = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


def _rule(verbs: tuple[str, ...], groups: tuple[str, ...], resources: tuple[str, ...]) -> JSON:
    return {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}


def _urls(verbs: tuple[str, ...], urls: tuple[str, ...]) -> JSON:
    return {"nonResourceURLs": list(urls), "verbs": list(verbs)}


def _role(
    name: str,
    rules: list[JSON] | None,
    labels: dict[str, str] | None = None,
    aggregate_from: str = "",
) -> JSON:
    role: JSON = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {**BOOTSTRAPPING, **(labels or {})},
            "annotations": {AUTOUPDATE: "true"},
        },
    }
    if aggregate_from:
        role["aggregationRule"] = {
            "clusterRoleSelectors": [{"matchLabels": {AGG + aggregate_from: "true"}}]
        }
    role["rules"] = rules or []
    return role


_POD_SUBS = ("pods/attach", "pods/exec", "pods/portforward", "pods/proxy")


def _aggregate_to_edit() -> list[JSON]:
    return [
        _rule(READ, ("",), (*_POD_SUBS, "secrets", "services/proxy")),
        _rule(("impersonate",), ("",), ("serviceaccounts",)),
        _rule(WRITE, ("",), ("pods", *_POD_SUBS)),
        _rule(("create",), ("",), ("pods/eviction",)),
        _rule(
            WRITE,
            ("",),
            (
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ),
        ),
        _rule(("create",), ("",), ("serviceaccounts/token",)),
        _rule(
            WRITE,
            ("apps",),
            (
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ),
        ),
        _rule(WRITE, ("autoscaling",), ("horizontalpodautoscalers",)),
        _rule(WRITE, ("batch",), ("cronjobs", "jobs")),
        _rule(
            WRITE,
            ("extensions",),
            (
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
            ),
        ),
        _rule(WRITE, ("policy",), ("poddisruptionbudgets",)),
        _rule(WRITE, ("networking.k8s.io",), ("ingresses", "networkpolicies")),
        _rule(READ_WRITE, ("coordination.k8s.io",), ("leases",)),
    ]


def _aggregate_to_view() -> list[JSON]:
    return [
        _rule(
            READ,
            ("",),
            (
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ),
        ),
        _rule(
            READ,
            ("",),
            (
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ),
        ),
        _rule(READ, ("",), ("namespaces",)),
        _rule(READ, ("discovery.k8s.io",), ("endpointslices",)),
        _rule(
            READ,
            ("apps",),
            (
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ),
        ),
        _rule(
            READ, ("autoscaling",), ("horizontalpodautoscalers", "horizontalpodautoscalers/status")
        ),
        _rule(READ, ("batch",), ("cronjobs", "cronjobs/status", "jobs", "jobs/status")),
        _rule(
            READ,
            ("extensions",),
            (
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
            ),
        ),
        _rule(READ, ("policy",), ("poddisruptionbudgets", "poddisruptionbudgets/status")),
        _rule(READ, ("networking.k8s.io",), ("ingresses", "ingresses/status", "networkpolicies")),
    ]


def cluster_roles() -> list[JSON]:
    """The bootstrap ClusterRoles, in upstream's (name) order."""
    health = ("/healthz", "/livez", "/readyz", "/version", "/version/")
    return [
        _role("admin", None, aggregate_from="admin"),
        _role("cluster-admin", [_rule(("*",), ("*",), ("*",)), _urls(("*",), ("*",))]),
        _role("edit", None, {AGG + "admin": "true"}, aggregate_from="edit"),
        _role(
            "system:aggregate-to-admin",
            [
                _rule(("create",), ("authorization.k8s.io",), ("localsubjectaccessreviews",)),
                _rule(READ_WRITE, (GROUP,), ("rolebindings", "roles")),
            ],
            {AGG + "admin": "true"},
        ),
        _role("system:aggregate-to-edit", _aggregate_to_edit(), {AGG + "edit": "true"}),
        _role("system:aggregate-to-view", _aggregate_to_view(), {AGG + "view": "true"}),
        _role(
            "system:auth-delegator",
            [
                _rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
                _rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews",)),
            ],
        ),
        _role(
            "system:basic-user",
            [
                _rule(
                    ("create",),
                    ("authorization.k8s.io",),
                    ("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
                ),
                _rule(("create",), ("authentication.k8s.io",), ("selfsubjectreviews",)),
            ],
        ),
        _role(
            "system:discovery",
            [
                _urls(
                    ("get",),
                    (
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ),
                )
            ],
        ),
        _role(
            "system:monitoring",
            [
                _urls(
                    ("get",),
                    (
                        "/healthz",
                        "/healthz/*",
                        "/livez",
                        "/livez/*",
                        "/metrics",
                        "/metrics/slis",
                        "/readyz",
                        "/readyz/*",
                    ),
                )
            ],
        ),
        _role("system:public-info-viewer", [_urls(("get",), health)]),
        _role(
            "system:service-account-issuer-discovery",
            [
                _urls(
                    ("get",),
                    (
                        "/.well-known/openid-configuration",
                        "/.well-known/openid-configuration/",
                        "/openid/v1/jwks",
                        "/openid/v1/jwks/",
                    ),
                )
            ],
        ),
        _role("view", None, {AGG + "edit": "true"}, aggregate_from="view"),
    ]


def _binding(name: str, *groups: str) -> JSON:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": dict(BOOTSTRAPPING),
            "annotations": {AUTOUPDATE: "true"},
        },
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups],
    }


def cluster_role_bindings() -> list[JSON]:
    return [
        _binding("cluster-admin", "system:masters"),
        _binding("system:basic-user", "system:authenticated"),
        _binding("system:discovery", "system:authenticated"),
        _binding("system:monitoring", "system:monitoring"),
        _binding("system:public-info-viewer", "system:authenticated", "system:unauthenticated"),
        _binding("system:service-account-issuer-discovery", "system:serviceaccounts"),
    ]


def bootstrap_policy() -> RBACPolicy:
    """What the ``rbac/bootstrap-roles`` post-start hook reconciles."""
    return RBACPolicy(cluster_roles(), cluster_role_bindings())
