"""Emptying a deleted namespace where no namespace controller runs (a standalone
``watchcache serve`` without ``--lifecycle-controllers``): every namespaced resource the
server serves is deleted as a collection in that namespace, before the namespace itself.

The deletes go through the loopback client, as upstream's namespace deleter
(``pkg/controller/namespace/deletion``) deletes through its client: each is a
``deletecollection`` request of its own, authenticated as ``system:apiserver``,
admitted, audited and watched like any other, never a write beside the API.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from proxy import apierrors
from proxy.loopback.client import APIError, LoopbackClient, resource_path
from proxy.registry.resources import Registry

__all__ = ["NamespaceContentDeleter"]

log = logging.getLogger("watchcache.proxy")


class NamespaceContentDeleter:
    """Deletes what is in a namespace, through the loopback client ``client()`` gives
    (None until the server listens and its post-start hooks have it)."""

    def __init__(self, registry: Registry, client: Callable[[], LoopbackClient | None]) -> None:
        self.registry = registry
        self.client = client

    async def __call__(self, namespace: str) -> int:
        """Delete every object in ``namespace``; how many were deleted. One resource at a
        time (N at once would take N of the server's in-flight seats from one DELETE);
        one that fails fails the namespace's DELETE with its Status."""
        client = self.client()
        if client is None:
            raise apierrors.service_unavailable(
                f"namespace {namespace} cannot be emptied yet: the server is starting"
            )
        deleted = 0
        for resource in list(self.registry):
            if resource.namespaced and resource.has_storage:
                path = resource_path(resource.group, resource.version, resource.plural,
                                     namespace)  # fmt: skip
                deleted += await _delete_collection(client, path)
        if deleted:
            log.info("namespace %s: deleted %d objects with it", namespace, deleted)
        return deleted


async def _delete_collection(client: LoopbackClient, path: str) -> int:
    """How many objects a deletecollection of ``path`` deleted (0: a custom resource no
    longer served); a failure as a Status error."""
    try:
        gone = await client.request("DELETE", path)
    except APIError as e:
        if e.code == 404:
            return 0
        raise apierrors.StatusError(e.status) from e
    return len(gone.get("items") or ())
