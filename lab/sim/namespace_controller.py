"""The namespace controller: empties a namespace being deleted, then lets it go.

A deleted namespace is ``Terminating`` with the ``kubernetes`` finalizer in
``spec.finalizers`` (the server keeps it, see proxy/registry/deletion.py). This
controller, as kube-controller-manager's does, discovers every namespaced resource the
server serves (``/api/v1`` and the ``/apis`` groups), deletes the namespace's objects
(DELETECOLLECTION where the resource allows it, else one by one; bound pods then end
gracefully through their node agents), checks again until nothing is left, and finally
removes ``kubernetes`` through ``PUT namespaces/NAME/finalize``, after which the server
deletes the namespace.
"""

from __future__ import annotations

import logging

from lab.sim.client import JSON, APIError, Client
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers

__all__ = ["NamespaceController"]

log = logging.getLogger("watchcache.sim")

FINALIZER = "kubernetes"
RECHECK_SECONDS = 1.0


class NamespaceController:
    """Finishes the deletion of every namespace ``namespaces`` reports as deleted."""

    def __init__(self, server: str, namespaces: Informer) -> None:
        self.client = Client(server, "namespace-controller")
        self.namespaces = namespaces  # shared with the other per-namespace controllers
        self.queue: WorkQueue[str] = WorkQueue()
        self._resources: list[tuple[str, bool]] | None = None  # (collection path, bulk)
        self.finalized = 0

    async def run(self) -> None:
        self.namespaces.add_handler(lambda kind, ns, old: self.queue.add(key_of(ns))
                                    if kind != "DELETED" else None)  # fmt: skip
        try:
            await run_workers("namespace-controller", self.queue, self.sync, 2)
        finally:
            await self.client.close()

    async def _discover(self) -> list[tuple[str, bool]]:
        """(collection path template with ``{ns}``, deletecollection allowed) of every
        namespaced resource, from discovery (once)."""
        if self._resources is not None:
            return self._resources
        versions = ["/api/v1"]
        groups = await self.client.raw("GET", "/apis")
        for g in groups.get("groups") or []:
            preferred = (g.get("preferredVersion") or {}).get("groupVersion")
            if preferred:
                versions.append(f"/apis/{preferred}")
        out = []
        for base in versions:
            listing = await self.client.raw("GET", base)
            for r in listing.get("resources") or []:
                verbs = set(r.get("verbs") or [])
                if "/" in r["name"] or not r.get("namespaced") or "delete" not in verbs:
                    continue
                out.append((f"{base}/namespaces/{{ns}}/{r['name']}", "deletecollection" in verbs))
        self._resources = out
        return out

    async def sync(self, key: str) -> None:
        ns = self.namespaces.get(key)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return
        if FINALIZER not in ((ns.get("spec") or {}).get("finalizers") or []):
            return
        left = 0
        for template, bulk in await self._discover():
            path = template.format(ns=key)
            items = (await self.client.raw("GET", path)).get("items") or []
            live = [i for i in items if not i["metadata"].get("deletionTimestamp")]
            left += len(items)
            if not live:
                continue
            if bulk:
                await self.client.raw("DELETE", path)
            else:
                for item in live:
                    await self._delete_one(f"{path}/{item['metadata']['name']}")
        if left:
            self.queue.add_after(key, RECHECK_SECONDS)
            return
        await self._finalize(ns)

    async def _delete_one(self, path: str) -> None:
        try:
            await self.client.raw("DELETE", path)
        except APIError as e:
            if e.status != 404:
                raise

    async def _finalize(self, ns: JSON) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", **ns}
        body["spec"] = {**(ns.get("spec") or {}), "finalizers": [
            f for f in (ns.get("spec") or {}).get("finalizers") or [] if f != FINALIZER]}
        try:
            await self.client.call(self.client.core.replace_namespace_finalize,
                                   ns["metadata"]["name"], body)  # fmt: skip
        except APIError as e:
            if e.status != 404:
                raise
        self.finalized += 1
