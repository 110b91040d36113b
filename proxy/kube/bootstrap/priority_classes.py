"""Objects kube-apiserver creates for admission at start-up: the system PriorityClasses
(its ``scheduling/bootstrap-system-priority-classes`` post-start hook), created through
the loopback client; an existing one is left alone. A failure (etcd down at start-up)
ends the run and the hook's supervisor runs it again."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from proxy.kube.admission.priority import GROUP, SYSTEM_PRIORITY_CLASSES
from proxy.loopback.client import resource_path

if TYPE_CHECKING:
    from proxy.loopback.client import LoopbackClient

__all__ = ["PRIORITY_CLASSES_HOOK", "bootstrap_priority_classes"]

PRIORITY_CLASSES_HOOK = "scheduling/bootstrap-system-priority-classes"


async def bootstrap_priority_classes(client: LoopbackClient) -> None:
    """Create the missing system PriorityClasses."""
    collection = resource_path(GROUP, "v1", "priorityclasses")
    for klass in SYSTEM_PRIORITY_CLASSES:
        await client.create_if_absent(collection, copy.deepcopy(klass))
