"""Deleting a namespace, as kube-apiserver's NamespaceLifecycle admission and namespace
controller make it look to a client:

- ``default``, ``kube-system`` and ``kube-public`` are immortal: 403 Forbidden
  ``namespaces "default" is forbidden: this namespace may not be deleted``;
- deleting any other namespace deletes what is in it (every namespaced resource this
  server serves), then the namespace. Upstream marks it Terminating and a controller
  empties it in the background; here it is emptied before the DELETE answers, so a
  client that waits for the namespace to be gone (``kubectl delete ns``) sees the same.
"""

from __future__ import annotations

import logging

from proxy import apierrors
from proxy.registry.resources import ResourceInfo
from proxy.server.context import APIContext
from storage.interfaces import ListOptions

__all__ = ["IMMORTAL_NAMESPACES", "check_deletable", "delete_contents", "is_namespaces"]

log = logging.getLogger("watchcache.proxy")

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


def is_namespaces(resource: ResourceInfo) -> bool:
    return resource.group == "" and resource.plural == "namespaces"


def check_deletable(name: str) -> None:
    """403 for an immortal namespace."""
    if name in IMMORTAL_NAMESPACES:
        raise apierrors.forbidden("namespaces", name, "this namespace may not be deleted")


async def delete_contents(ctx: APIContext, namespace: str) -> int:
    """Delete every object in ``namespace`` (read from etcd); objects deleted or
    replaced meanwhile are skipped. Returns how many were deleted."""
    deleted = 0
    for resource in ctx.registry:
        if not resource.namespaced:
            continue
        _, gone = await ctx.store(resource).delete_collection(namespace, ListOptions())
        deleted += len(gone)
    if deleted:
        log.info("namespace %s: deleted %d objects with it", namespace, deleted)
    return deleted
