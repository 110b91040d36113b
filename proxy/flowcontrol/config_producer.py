"""The bootstrap ensurer (upstream's ``storageversionhook``-style post-start hook
``priority-and-fairness-config-producer``): at start-up, writes the mandatory and
suggested FlowSchemas and PriorityLevelConfigurations.

- a missing object is created (with ``apf.kubernetes.io/autoupdate-spec: "true"``);
- an existing mandatory object, and an existing suggested one whose annotation is
  ``"true"``, gets its spec put back when someone changed it;
- a suggested object whose annotation is anything else is left as the user made it.

Retries every second until every object is as wanted (etcd down at start), then sets
``ready`` (readyz's ``poststarthook/priority-and-fairness-config-producer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from proxy.flowcontrol import bootstrap
from proxy.registry import object_meta
from proxy.registry.storage_factory import ResourceStorage
from storage import errors as serr
from storage.interfaces import GetOptions

__all__ = ["GROUP", "BootstrapEnsurer"]

log = logging.getLogger("watchcache.flowcontrol")

GROUP = "flowcontrol.apiserver.k8s.io"
RETRY_SECONDS = 1.0
JSON = dict[str, Any]


def _wanted() -> list[tuple[str, str, str, JSON, bool]]:
    """(plural, kind, name, spec, mandatory) of every bootstrap object, levels first."""
    out = []
    for specs, mandatory in (
        (bootstrap.MANDATORY_PRIORITY_LEVELS, True),
        (bootstrap.SUGGESTED_PRIORITY_LEVELS, False),
    ):
        for name, spec in specs.items():
            out.append(
                ("prioritylevelconfigurations", "PriorityLevelConfiguration", name, spec, mandatory)
            )
    for specs, mandatory in (
        (bootstrap.MANDATORY_FLOW_SCHEMAS, True),
        (bootstrap.SUGGESTED_FLOW_SCHEMAS, False),
    ):
        for name, spec in specs.items():
            out.append(("flowschemas", "FlowSchema", name, spec, mandatory))
    return out


@dataclass
class BootstrapEnsurer:
    """Writes the bootstrap objects through ``storages`` (plural -> storage)."""

    storages: dict[str, ResourceStorage]
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def _ensure(self, plural: str, kind: str, name: str, spec: JSON, mandatory: bool) -> None:
        rs = self.storages[plural]
        key = rs.object_key("", name)
        try:
            stored = await rs.store.get(key, GetOptions(""))
        except serr.NotFound:
            obj: JSON = {
                "apiVersion": f"{GROUP}/v1",
                "kind": kind,
                "metadata": {
                    "name": name,
                    "annotations": {bootstrap.AUTOUPDATE_ANNOTATION: "true"},
                },
                "spec": copy.deepcopy(spec),
            }
            obj["status"] = {}
            object_meta.prepare_for_create(obj, rs.resource, "")
            # AlreadyExists: another replica was first; the next round checks its spec
            with contextlib.suppress(serr.AlreadyExists):
                await rs.store.create(key, obj)
            return
        current = stored.obj
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        auto = annotations.get(bootstrap.AUTOUPDATE_ANNOTATION) == "true"
        if current.get("spec") == spec or not (mandatory or auto):
            return

        async def put_back(obj: JSON) -> JSON:
            obj = copy.deepcopy(obj)
            obj["spec"] = copy.deepcopy(spec)
            meta = obj.setdefault("metadata", {})
            meta.setdefault("annotations", {})[bootstrap.AUTOUPDATE_ANNOTATION] = "true"
            meta["generation"] = int(meta.get("generation") or 1) + 1
            return obj

        log.info("restoring the spec of the bootstrap %s %s", kind, name)
        await rs.store.guaranteed_update(key, None, put_back)

    async def ensure_once(self) -> bool:
        """One pass; True when every object is as wanted."""
        for plural, kind, name, spec, mandatory in _wanted():
            try:
                await self._ensure(plural, kind, name, spec, mandatory)
            except Exception as e:  # etcd down, timeouts: the next pass retries
                log.info("ensuring %s %s: %s (will retry)", kind, name, e)
                return False
        return True

    async def run(self) -> None:
        while not await self.ensure_once():
            await self.sleep(RETRY_SECONDS)
        self.ready.set()
