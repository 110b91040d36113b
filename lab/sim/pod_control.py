"""Creating and deleting a controller's pods, as ``pkg/controller/controller_utils.go``
does for the ReplicaSet and Job controllers: the pods come from the owner's pod template
with a controller ownerReference, and every create and delete is recorded as an
expectation (client-go's ControllerExpectations) that the owner's informer events
settle, so that a controller never counts from a cache that does not show its own writes
yet."""

from __future__ import annotations

import asyncio
import time

from lab.sim.client import JSON, APIError, Client
from lab.sim.events import EventRecorder, object_reference
from lab.sim.owners import owner_reference

__all__ = ["EXPECTATIONS_TIMEOUT", "Expectations", "PodControl"]

EXPECTATIONS_TIMEOUT = 30.0  # client-go's ExpectationsTimeout: 5 minutes; a lab is quicker


class Expectations:
    """Creates and deletes a controller made and has not yet seen in its informer."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[int, int, float]] = {}

    def expect(self, uid: str, adds: int, deletes: int) -> None:
        self._pending[uid] = (adds, deletes, time.monotonic() + EXPECTATIONS_TIMEOUT)

    def observed(self, uid: str, *, added: int = 0, deleted: int = 0) -> None:
        if uid in self._pending:
            adds, deletes, deadline = self._pending[uid]
            self._pending[uid] = (adds - added, deletes - deleted, deadline)

    def observe_pod(self, uid: str, event: str, pod: JSON, old: JSON | None) -> None:
        """Settle what a pod event of owner ``uid`` shows: a new pod, or one leaving
        (deleted, or marked for deletion: a graceful delete counts when it is asked)."""
        if event == "ADDED" and old is None:
            self.observed(uid, added=1)
        leaving = event == "DELETED" or bool((pod.get("metadata") or {}).get("deletionTimestamp"))
        had_left = bool(old and (old.get("metadata") or {}).get("deletionTimestamp"))
        if leaving and not had_left:
            self.observed(uid, deleted=1)

    def satisfied(self, uid: str) -> bool:
        adds, deletes, deadline = self._pending.get(uid, (0, 0, 0.0))
        return (adds <= 0 and deletes <= 0) or time.monotonic() > deadline

    def forget(self, uid: str) -> None:
        self._pending.pop(uid, None)


class PodControl:
    """Creates and deletes pods through ``client``, recording ``expectations`` and, as
    upstream's RealPodControl, an Event on the owner for each pod (``recorder``)."""

    def __init__(
        self, client: Client, expectations: Expectations, recorder: EventRecorder
    ) -> None:
        self.client = client
        self.expectations = expectations
        self.recorder = recorder

    async def create(self, owner: JSON, count: int) -> list[JSON]:
        """``count`` pods from ``owner``'s ``spec.template`` (``owner`` carries its
        apiVersion and kind): ``generateName: <owner>-``, the template's labels and
        annotations, an ownerReference with ``controller`` and ``blockOwnerDeletion``.
        The pods created; if any create failed, the first error, once all are tried."""
        uid = str(owner["metadata"]["uid"])
        self.expectations.expect(uid, count, 0)
        template = (owner.get("spec") or {}).get("template") or {}
        meta = template.get("metadata") or {}
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": f"{owner['metadata']['name']}-",
                            "labels": dict(meta.get("labels") or {}),
                            "annotations": dict(meta.get("annotations") or {}),
                            "ownerReferences": [owner_reference(owner)]},
               "spec": template.get("spec") or {}}  # fmt: skip
        ns = owner["metadata"]["namespace"]
        results = await asyncio.gather(
            *(self.client.call(self.client.core.create_namespaced_pod, ns, pod)
              for _ in range(count)), return_exceptions=True)  # fmt: skip
        ref = object_reference(owner, owner["kind"], owner["apiVersion"])
        for r in results:
            if isinstance(r, dict):
                name = (r.get("metadata") or {}).get("name")
                self.recorder.event(ref, "Normal", "SuccessfulCreate", f"Created pod: {name}")
            else:
                self.recorder.event(ref, "Warning", "FailedCreate", f"Error creating: {r}")
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            self.expectations.observed(uid, added=len(failed))
            raise failed[0] if isinstance(failed[0], Exception) else RuntimeError(failed[0])
        return [r for r in results if isinstance(r, dict)]

    async def delete(self, owner: JSON, victims: list[JSON]) -> None:
        """Delete ``victims`` (gracefully: a bound pod's kubelet finishes it); a pod
        already gone is no error, any other APIError is raised. ``owner`` carries its
        apiVersion and kind."""
        uid = str(owner["metadata"]["uid"])
        ref = object_reference(owner, owner["kind"], owner["apiVersion"])
        self.expectations.expect(uid, 0, len(victims))
        for pod in victims:
            meta = pod["metadata"]
            try:
                await self.client.call(self.client.core.delete_namespaced_pod, meta["name"],
                                       meta["namespace"])  # fmt: skip
            except APIError as e:
                self.expectations.observed(uid, deleted=1)
                if e.status != 404:
                    self.recorder.event(ref, "Warning", "FailedDelete",
                                        f"Error deleting: {e}")  # fmt: skip
                    raise
                continue
            self.recorder.event(ref, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")
