"""The rbac.authorization.k8s.io group's defaults (``pkg/apis/rbac/v1/defaults.go``)."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, child, default_zero, dicts

__all__ = ["DEFAULTERS"]

_GROUP = "rbac.authorization.k8s.io"


def binding(obj: JSON) -> None:
    """``SetDefaults_RoleBinding`` / ``SetDefaults_ClusterRoleBinding`` (the roleRef's
    apiGroup) and ``SetDefaults_Subject`` (a User's or Group's apiGroup is RBAC's, a
    ServiceAccount's the core group)."""
    if (role_ref := child(obj, "roleRef")) is not None:
        default_zero(role_ref, "apiGroup", _GROUP)
    for subject in dicts(obj, "subjects"):
        if not subject.get("apiGroup"):
            kind = subject.get("kind")
            if kind == "ServiceAccount":
                subject["apiGroup"] = ""
            elif kind in ("User", "Group"):
                subject["apiGroup"] = _GROUP


DEFAULTERS: dict[str, Callable[[JSON], None]] = {
    "RoleBinding": binding,
    "ClusterRoleBinding": binding,
}
