"""How the bootstrap controllers write: create-or-update of one object through the
loopback client (``proxy.loopback``), so each write passes the whole request pipeline
as ``system:apiserver`` — defaulting, admission, validation, managedFields — as
kube-apiserver's controllers write through their loopback clientset.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

from proxy.apimachinery.equality import semantic_equal
from proxy.loopback.client import LoopbackClient, resource_path
from storage.interfaces import JSONObject

__all__ = ["BootstrapWriter", "Desired"]

# the object as it should be, given the stored one ({} when absent)
Desired = Callable[[JSONObject], JSONObject]


@dataclass
class BootstrapWriter:
    loopback: LoopbackClient

    async def ensure(
        self, group: str, version: str, plural: str, namespace: str, desired: Desired
    ) -> JSONObject:
        """Make the object ``desired(stored)``: created when absent, updated when it
        differs, left unwritten when not: compared as upstream's ``Semantic.DeepEqual``
        (a ``data: {}`` wanted where storage omits the empty map is no change; with ``==``
        every server rewrote an empty ConfigMap every minute, for ever). Loopback errors
        come out (the caller retries)."""
        collection = resource_path(group, version, plural, namespace)

        def reconcile(current: JSONObject) -> JSONObject | None:
            wanted = desired(copy.deepcopy(current))
            return None if semantic_equal(wanted, current) else wanted

        return await self.loopback.ensure(collection, desired({}), reconcile)
