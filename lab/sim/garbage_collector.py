"""The garbage collector: what happens to an object's dependents when it is deleted.

It watches the kinds the simulated cluster creates (Deployments, ReplicaSets, Jobs, Pods,
via the shared informers) and reads their ownerReferences:

- **Background** (the default): once an owner is gone, each dependent that named it is
  deleted (in the background too, so a Deployment's ReplicaSets take their pods along);
- **Foreground**: an owner carrying the ``foregroundDeletion`` finalizer has its
  dependents deleted (with Foreground, so it cascades); when none that blocks the owner
  (``blockOwnerDeletion``) is left, the finalizer is removed and the server deletes the
  owner;
- **Orphan**: an owner carrying the ``orphan`` finalizer has the ownerReference to it
  removed from every dependent, then the finalizer, and the dependents live on.

A namespaced dependent whose ownerReference names an object of another namespace (owners
are looked up in the dependent's namespace) has an absent owner: it gets the collector's
``OwnerRefInvalidNamespace`` warning Event, and is collected once no owner it names is
found in its namespace.

Unlike upstream's, it collects only dependents of owners it has seen: the lab's seeded
pods name ReplicaSets that were never created (a snapshot of a cluster), which upstream's
collector would delete as orphans of absent owners.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from lab.sim.client import JSON, APIError, Client
from lab.sim.events import EventBroadcaster, object_reference
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers

__all__ = ["GarbageCollector"]

log = logging.getLogger("watchcache.sim")

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
MERGE = "application/merge-patch+json"


@dataclass(frozen=True)
class _Kind:
    informer: Informer
    delete: Callable[..., Awaitable[Any]]
    patch: Callable[..., Awaitable[Any]]


class GarbageCollector:
    """Collects dependents among ``informers`` (kind name -> informer of that kind)."""

    def __init__(self, server: str, pods: Informer, replicasets: Informer,
                 deployments: Informer, jobs: Informer,
                 events: EventBroadcaster) -> None:  # fmt: skip
        self.client = c = Client(server, "garbage-collector")
        self.recorder = events.recorder("garbage-collector-controller")
        self.kinds = {
            "Pod": _Kind(pods, c.core.delete_namespaced_pod, c.core.patch_namespaced_pod),
            "ReplicaSet": _Kind(replicasets, c.apps.delete_namespaced_replica_set,
                                c.apps.patch_namespaced_replica_set),
            "Deployment": _Kind(deployments, c.apps.delete_namespaced_deployment,
                                c.apps.patch_namespaced_deployment),
            "Job": _Kind(jobs, c.batch.delete_namespaced_job, c.batch.patch_namespaced_job),
        }  # fmt: skip
        self.seen: dict[str, tuple[str, str]] = {}  # uid of every owner seen -> (kind, key)
        self.gone: set[str] = set()  # uids of owners seen deleted
        self.dependents: dict[str, set[tuple[str, str]]] = {}  # owner uid -> (kind, key)
        self.queue: WorkQueue[str] = WorkQueue()  # "owner:<uid>" or "dependent:<kind>:<key>"
        self.collected = 0

    async def run(self) -> None:
        for kind, k in self.kinds.items():
            k.informer.add_handler(self._handler(kind))
        try:
            await run_workers("garbage-collector", self.queue, self.sync, 4)
        finally:
            await self.client.close()

    def _handler(self, kind: str) -> Callable[[str, JSON, JSON | None], None]:
        def on_event(event: str, obj: JSON, old: JSON | None) -> None:
            key, meta = key_of(obj), obj.get("metadata") or {}
            uid = str(meta.get("uid"))
            for ref in (old or {}).get("metadata", {}).get("ownerReferences") or []:
                self.dependents.get(str(ref.get("uid")), set()).discard((kind, key))
                if str(ref.get("uid")) in self.seen:  # an owner waiting for its dependents
                    self.queue.add(f"owner:{ref.get('uid')}")
            if event == "DELETED":
                self.seen.pop(uid, None)
                self.gone.add(uid)
                for dep in self.dependents.get(uid, ()):
                    self.queue.add(f"dependent:{dep[0]}:{dep[1]}")
                return
            self.seen[uid] = (kind, key)
            for ref in meta.get("ownerReferences") or []:
                owner = str(ref.get("uid"))
                self.dependents.setdefault(owner, set()).add((kind, key))
                if owner in self.gone or owner in self.seen:
                    self.queue.add(f"owner:{owner}")
                if owner in self.gone or self._elsewhere(owner, key):
                    self.queue.add(f"dependent:{kind}:{key}")
            if meta.get("deletionTimestamp"):
                self.queue.add(f"owner:{uid}")

        return on_event

    async def sync(self, item: str) -> None:
        what, _, rest = item.partition(":")
        if what == "owner":
            await self._sync_owner(rest)
        else:
            kind, _, key = rest.partition(":")
            await self._sync_dependent(kind, key)

    def _live_dependents(self, uid: str) -> list[tuple[str, JSON]]:
        out = []
        for kind, key in list(self.dependents.get(uid, ())):
            obj = self.kinds[kind].informer.get(key)
            if obj is not None:
                out.append((kind, obj))
        return out

    async def _sync_owner(self, uid: str) -> None:
        if uid not in self.seen:
            return
        kind, key = self.seen[uid]
        owner = self.kinds[kind].informer.get(key)
        meta = (owner or {}).get("metadata") or {}
        if owner is None or not meta.get("deletionTimestamp"):
            return
        finalizers = list(meta.get("finalizers") or [])
        if ORPHAN in finalizers:
            for dep_kind, dep in self._live_dependents(uid):
                refs = [r for r in dep["metadata"].get("ownerReferences") or []
                        if str(r.get("uid")) != uid]  # fmt: skip
                await self._patch(dep_kind, dep, {"metadata": {"ownerReferences": refs or None}})
            await self._patch(kind, owner, {"metadata": {"finalizers": _without(finalizers,
                                                                                ORPHAN)}})
        elif FOREGROUND in finalizers:
            blocking = False
            for dep_kind, dep in self._live_dependents(uid):
                ref: JSON = next((r for r in dep["metadata"].get("ownerReferences") or []
                                  if str(r.get("uid")) == uid), {})  # fmt: skip
                blocking = blocking or bool(ref.get("blockOwnerDeletion"))
                if not dep["metadata"].get("deletionTimestamp"):
                    await self._delete(dep_kind, dep, "Foreground")
            if not blocking:
                await self._patch(kind, owner, {"metadata": {"finalizers": _without(
                    finalizers, FOREGROUND)}})  # fmt: skip

    async def _sync_dependent(self, kind: str, key: str) -> None:
        obj = self.kinds[kind].informer.get(key)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        refs = obj["metadata"].get("ownerReferences") or []
        owners = {str(r.get("uid")) for r in refs}
        elsewhere = {uid for uid in owners if self._elsewhere(uid, key)}
        for ref in refs:
            if str(ref.get("uid")) in elsewhere:
                self.recorder.event(object_reference(obj, kind, _API_VERSIONS[kind]), "Warning",
                                    "OwnerRefInvalidNamespace",
                                    f"ownerRef [{ref.get('apiVersion')}/{ref.get('kind')}, "
                                    f"namespace: {obj['metadata']['namespace']}, name: "
                                    f"{ref.get('name')}, uid: {ref.get('uid')}] does not exist "
                                    f"in namespace \"{obj['metadata']['namespace']}\"")  # fmt: skip
        if owners and owners <= self.gone | elsewhere:  # every owner it names is absent
            await self._delete(kind, obj, "Background")
            self.collected += 1

    def _elsewhere(self, owner_uid: str, dependent_key: str) -> bool:
        """The owner is known, in another namespace than the dependent's."""
        seen = self.seen.get(owner_uid)
        return seen is not None and seen[1].split("/")[0] != dependent_key.split("/")[0]

    async def _delete(self, kind: str, obj: JSON, policy: str) -> None:
        meta = obj["metadata"]
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": policy,
                "preconditions": {"uid": meta.get("uid")}}  # fmt: skip
        try:
            await self.client.call(self.kinds[kind].delete, meta["name"], meta["namespace"],
                                   body=body)  # fmt: skip
        except APIError as e:
            if e.status not in (404, 409):
                raise

    async def _patch(self, kind: str, obj: JSON, patch: JSON) -> None:
        meta = obj["metadata"]
        try:
            await self.client.call(self.kinds[kind].patch, meta["name"], meta["namespace"],
                                   patch, _content_type=MERGE)  # fmt: skip
        except APIError as e:
            if e.status != 404:
                raise


_API_VERSIONS = {"Pod": "v1", "ReplicaSet": "apps/v1", "Deployment": "apps/v1", "Job": "batch/v1"}


def _without(finalizers: list[str], name: str) -> list[str] | None:
    rest = [f for f in finalizers if f != name]
    return rest or None
