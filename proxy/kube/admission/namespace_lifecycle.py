"""Deleting a namespace, as kube-apiserver's NamespaceLifecycle admission and namespace
controller make it look to a client:

- ``default``, ``kube-system`` and ``kube-public`` are immortal: 403 Forbidden
  ``namespaces "default" is forbidden: this namespace may not be deleted``;
- creating in a namespace that is being deleted is 403 Forbidden ``unable to create new
  content in namespace NS because it is being terminated``;
- a deleted namespace goes Terminating and the namespace controller empties it in the
  background (proxy/registry/deletion.py, proxy/kube/namespace), as upstream: the
  server's own, or with ``--lifecycle-controllers`` the controller manager's.
"""

from __future__ import annotations

from typing import Any

from proxy import apierrors
from proxy.admission.attributes import CREATE, DELETE, Attributes
from proxy.admission.interfaces import Plugin
from proxy.registry.resources import ResourceInfo

__all__ = ["IMMORTAL_NAMESPACES", "NamespaceLifecycle", "check_deletable",
           "check_not_terminating", "is_namespaces"]

JSON = dict[str, Any]

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


def is_namespaces(resource: ResourceInfo) -> bool:
    return resource.group == "" and resource.plural == "namespaces"


def check_deletable(name: str) -> None:
    """403 for an immortal namespace."""
    if name in IMMORTAL_NAMESPACES:
        raise apierrors.forbidden("namespaces", name, "this namespace may not be deleted")


def check_not_terminating(namespace: JSON, resource: ResourceInfo, name: str) -> None:
    """403 for a create in a namespace being deleted (NamespaceLifecycle admission)."""
    meta = namespace.get("metadata") or {}
    if meta.get("deletionTimestamp") or (namespace.get("status") or {}).get(
            "phase") == "Terminating":  # fmt: skip
        error = apierrors.forbidden(
            resource.qualified, name,
            f"unable to create new content in namespace {meta.get('name')} because it is "
            "being terminated",
        )  # fmt: skip
        # the cause clients match on (v1.NamespaceTerminatingCause), as upstream adds it
        error.body["details"].setdefault("causes", []).append({
            "reason": "NamespaceTerminating",
            "message": f"namespace {meta.get('name')} is being terminated",
            "field": "metadata.namespace",
        })  # fmt: skip
        raise error


class NamespaceLifecycle(Plugin):
    """The NamespaceLifecycle plugin (mutating phase, as upstream's ``Admit``): immortal
    namespaces cannot be deleted; a create in a namespace that does not exist is 404
    ``namespaces "x" not found`` (read from etcd when the cache does not have it yet),
    in one being terminated 403."""

    name = "NamespaceLifecycle"
    operations = frozenset({CREATE, DELETE})
    mutating = True

    async def admit(self, attrs: Attributes) -> None:
        if is_namespaces(attrs.resource):
            if attrs.operation == DELETE:
                check_deletable(attrs.name)
            return
        if attrs.operation != CREATE or not attrs.resource.namespaced or attrs.subresource:
            return
        namespace = await self.lookup.get("", "namespaces", "", attrs.namespace)
        if namespace is None:
            namespace = await self.lookup.get("", "namespaces", "", attrs.namespace, fresh=True)
        if namespace is None:
            raise apierrors.not_found("namespaces", attrs.namespace)
        check_not_terminating(namespace, attrs.resource, attrs.name)
