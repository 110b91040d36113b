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

import time
from collections import OrderedDict
from typing import Any

from proxy import apierrors
from proxy.admission.attributes import CREATE, DELETE, Attributes
from proxy.admission.interfaces import Plugin, PluginDeps
from proxy.registry.resources import ResourceInfo

__all__ = ["IMMORTAL_NAMESPACES", "NamespaceLifecycle", "check_deletable",
           "check_not_terminating", "is_namespaces"]

JSON = dict[str, Any]

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})

# upstream's forceLiveLookupTTL and the size of its LRUExpireCache
FORCE_LIVE_LOOKUP_TTL = 30.0
FORCE_LIVE_LOOKUP_SIZE = 100


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
    in one being terminated 403.

    A namespace whose DELETE this plugin admitted is looked up live (from etcd) for 30 s
    while the cache still shows it Active, as upstream's ``forceLiveLookupCache``: a
    create sent right after the DELETE's answer must not slip in before the cache sees
    the namespace Terminating."""

    name = "NamespaceLifecycle"
    operations = frozenset({CREATE, DELETE})
    mutating = True

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        self._deleted: OrderedDict[str, float] = OrderedDict()  # name -> expiry

    async def admit(self, attrs: Attributes) -> None:
        if is_namespaces(attrs.resource):
            if attrs.operation == DELETE:
                check_deletable(attrs.name)
                self._force_live_lookup(attrs.name)
            return
        if attrs.operation != CREATE or not attrs.resource.namespaced or attrs.subresource:
            return
        namespace = await self.lookup.get("", "namespaces", "", attrs.namespace)
        if namespace is None or (self._recently_deleted(attrs.namespace)
                                 and _active(namespace)):  # fmt: skip
            namespace = await self.lookup.get("", "namespaces", "", attrs.namespace, fresh=True)
        if namespace is None:
            raise apierrors.not_found("namespaces", attrs.namespace)
        check_not_terminating(namespace, attrs.resource, attrs.name)

    def _force_live_lookup(self, name: str) -> None:
        self._deleted.pop(name, None)
        self._deleted[name] = time.monotonic() + FORCE_LIVE_LOOKUP_TTL
        while len(self._deleted) > FORCE_LIVE_LOOKUP_SIZE:
            self._deleted.popitem(last=False)

    def _recently_deleted(self, name: str) -> bool:
        expiry = self._deleted.get(name)
        if expiry is None:
            return False
        if expiry < time.monotonic():
            del self._deleted[name]
            return False
        return True


def _active(namespace: JSON) -> bool:
    """Upstream's ``Status.Phase == NamespaceActive``: a namespace without a phase yet
    (as stored by a create) counts as Active too."""
    phase: object = (namespace.get("status") or {}).get("phase", "Active")
    return phase == "Active"
