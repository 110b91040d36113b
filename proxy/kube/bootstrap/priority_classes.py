"""Objects kube-apiserver creates for admission at start-up: the system PriorityClasses
(its ``scheduling/bootstrap-system-priority-classes`` post-start hook). Retried until
written, as etcd may be down when the server starts; an existing one is left alone."""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import TYPE_CHECKING

from proxy.kube.admission.priority import GROUP, SYSTEM_PRIORITY_CLASSES
from proxy.registry import object_meta
from storage import errors as serr

if TYPE_CHECKING:
    from proxy.server.context import APIContext

__all__ = ["bootstrap_priority_classes"]

log = logging.getLogger("watchcache.admission")
RETRY_SECONDS = 1.0


async def _ensure_once(ctx: APIContext) -> bool:
    resource = ctx.registry.lookup(GROUP, "priorityclasses")
    if resource is None:
        return True
    rs = ctx.storages.for_resource(resource)
    for klass in SYSTEM_PRIORITY_CLASSES:
        obj = copy.deepcopy(klass)
        object_meta.prepare_for_create(obj, resource, "")
        try:
            await rs.store.create(rs.object_key("", obj["metadata"]["name"]), obj)
        except serr.AlreadyExists:
            continue
        except Exception as e:  # etcd down, timeouts: the next round retries
            log.info("creating PriorityClass %s: %s (will retry)", obj["metadata"]["name"], e)
            return False
    return True


async def bootstrap_priority_classes(ctx: APIContext) -> None:
    """Run until the system PriorityClasses exist."""
    while True:
        if await _ensure_once(ctx):
            return
        await asyncio.sleep(RETRY_SECONDS)
