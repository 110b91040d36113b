"""The admission configuration objects, read from their shared informers (kube's
``configuration`` package over its informers): MutatingWebhookConfigurations,
ValidatingWebhookConfigurations, Validating- and MutatingAdmissionPolicies and their
bindings.

Readers take ``items(plural)``, a snapshot sorted by name (upstream sorts
configurations by name), rebuilt on the first read after a change; the informers'
handlers only mark the resource changed and bump ``version``. A resource the server
does not serve has no informer and no objects. Until every informer has synced,
``synced`` is unset and the webhook plugins answer as kube does before its informers
sync (they wait for it, bounded).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from proxy.informer import (
    EventHandlers,
    NotServed,
    SharedIndexInformer,
    SharedInformerFactory,
    wait_for_cache_sync,
)

__all__ = ["ADMISSION_GROUP", "CONFIGURATION_RESOURCES", "ConfigurationSource"]

log = logging.getLogger("watchcache.admission")

JSON = dict[str, Any]

ADMISSION_GROUP = "admissionregistration.k8s.io"
CONFIGURATION_RESOURCES = (
    "mutatingwebhookconfigurations",
    "validatingwebhookconfigurations",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
)


class ConfigurationSource:
    """The configurations, by plural then name. ``version`` grows on every change (the
    policy plugin recompiles when it moved)."""

    def __init__(self, informers: SharedInformerFactory) -> None:
        self._informers: dict[str, SharedIndexInformer] = {}
        for plural in CONFIGURATION_RESOURCES:
            try:
                informer = informers.informer_for(ADMISSION_GROUP, plural)
            except NotServed:  # not served: nothing to configure
                continue
            informer.add_event_handler(self._handlers(plural))
            self._informers[plural] = informer
        self._sorted: dict[str, list[JSON]] = {}  # plural -> by name; absent: stale
        self.version = 0
        self.synced = asyncio.Event()

    def items(self, plural: str) -> list[JSON]:
        """The current objects of ``plural``, sorted by name (read-only)."""
        found = self._sorted.get(plural)
        if found is None:
            informer = self._informers.get(plural)
            if informer is None:
                return []
            indexer = informer.indexer
            found = self._sorted[plural] = [
                o for k in sorted(indexer.list_keys()) if (o := indexer.get_by_key(k)) is not None
            ]
        return found

    def get(self, plural: str, name: str) -> JSON | None:
        informer = self._informers.get(plural)
        return informer.indexer.get_by_key(name) if informer is not None else None

    def _handlers(self, plural: str) -> EventHandlers:
        return EventHandlers.each(lambda _: self._changed(plural))

    def _changed(self, plural: str) -> None:
        self._sorted.pop(plural, None)
        self.version += 1

    async def run(self) -> None:
        """Set ``synced`` once the informers (run by their factory) have synced (the
        post-start hook ``admission-configurations``: up when it returns)."""
        await wait_for_cache_sync(*self._informers.values())
        self.synced.set()
