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
from storage import errors as serr
from storage.interfaces import ListOptions, Preconditions

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
        rs = ctx.storages.for_resource(resource)
        with apierrors.storage_errors(resource.qualified):
            listed = await rs.store.get_list(rs.list_key(namespace), ListOptions())
        for item in listed.items:
            uid = (item.obj.get("metadata") or {}).get("uid")
            try:
                await rs.store.delete(item.key, Preconditions(uid=uid))
            except (serr.NotFound, serr.PreconditionFailed, serr.Conflict):
                continue
            deleted += 1
    if deleted:
        log.info("namespace %s: deleted %d objects with it", namespace, deleted)
    return deleted
