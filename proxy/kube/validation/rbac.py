"""RBAC bindings (upstream's ``pkg/apis/rbac/validation``): ``ValidateRoleBinding``,
``ValidateClusterRoleBinding`` and their updates.

- ``roleRef.apiGroup`` must be ``rbac.authorization.k8s.io`` (defaulted to it when
  empty, as v1's ``SetDefaults_RoleBinding``); ``roleRef.kind`` ``Role`` or
  ``ClusterRole`` for a RoleBinding, ``ClusterRole`` only for a ClusterRoleBinding;
  ``roleRef.name`` required, a path segment name;
- on update ``roleRef`` cannot change (``roleRef: Invalid value:
  rbac.RoleRef{...}: cannot change roleRef``): a binding is re-pointed by deleting and
  recreating it, so that escalation checks see the new role whole.

Subjects are not validated here yet (their apiGroup defaulting belongs to the kinds'
defaulting); see docs/security.md.
"""

from __future__ import annotations

from typing import Any

from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList, GoLiteral
from proxy.apimachinery.validation.names import path_segment_name
from proxy.apimachinery.validation.object_meta import (
    validate_object_meta,
    validate_object_meta_update,
)

__all__ = [
    "prepare_binding",
    "prepare_binding_update",
    "validate_cluster_role_binding",
    "validate_cluster_role_binding_update",
    "validate_role_binding",
    "validate_role_binding_update",
]

JSON = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def prepare_binding(binding: JSON) -> None:
    """v1's defaulting of ``roleRef.apiGroup`` (upstream runs it while decoding)."""
    ref = binding.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP


def prepare_binding_update(new: JSON, old: JSON) -> None:
    prepare_binding(new)


def _role_ref(binding: JSON, kinds: tuple[str, ...]) -> ErrorList:
    ref = _dict(binding.get("roleRef"))
    group, kind, name = (str(ref.get(k) or "") for k in ("apiGroup", "kind", "name"))
    errs: ErrorList = []
    if group != GROUP:
        errs.append(field.not_supported("roleRef.apiGroup", group, [GROUP]))
    if kind not in kinds:
        errs.append(field.not_supported("roleRef.kind", kind, list(kinds)))
    if not name:
        errs.append(field.required("roleRef.name"))
    else:
        errs += [field.invalid("roleRef.name", name, m) for m in path_segment_name(name, False)]
    return errs


def _binding(binding: JSON, namespaced: bool, kinds: tuple[str, ...]) -> ErrorList:
    meta = _dict(binding.get("metadata"))
    return validate_object_meta(meta, namespaced, path_segment_name) + _role_ref(binding, kinds)


def _role_ref_literal(binding: JSON) -> GoLiteral:
    """The internal ``rbac.RoleRef`` as ``%#v`` prints it."""
    ref = _dict(binding.get("roleRef"))
    group, kind, name = (str(ref.get(k) or "") for k in ("apiGroup", "kind", "name"))
    return GoLiteral(
        f'rbac.RoleRef{{APIGroup:{field.go_quote(group)}, Kind:{field.go_quote(kind)}, '
        f"Name:{field.go_quote(name)}}}"
    )


def _update(new: JSON, old: JSON) -> ErrorList:
    errs = validate_object_meta_update(_dict(new.get("metadata")), _dict(old.get("metadata")))
    if _role_ref_literal(new) != _role_ref_literal(old):
        errs.append(field.invalid("roleRef", _role_ref_literal(new), "cannot change roleRef"))
    return errs


def validate_role_binding(binding: JSON) -> ErrorList:
    return _binding(binding, True, ("Role", "ClusterRole"))


def validate_role_binding_update(new: JSON, old: JSON) -> ErrorList:
    return validate_role_binding(new) + _update(new, old)


def validate_cluster_role_binding(binding: JSON) -> ErrorList:
    return _binding(binding, False, ("ClusterRole",))


def validate_cluster_role_binding_update(new: JSON, old: JSON) -> ErrorList:
    return validate_cluster_role_binding(new) + _update(new, old)
