"""The CRD controllers apiextensions-apiserver runs, over the CRDs' shared informer:

- its handlers enqueue each changed CRD's name, and every other CRD of its group (whose
  names may now be free), found through the informer's ``group`` index;
- one worker reconciles a name at a time (one, so that two CRDs of a group never accept
  the same name at once), in order:

  * naming (``NamingConditionController``): ``status.acceptedNames`` and the
    ``NamesAccepted`` condition; a name another CRD of the group has accepted is a
    conflict (``PluralConflict`` ... ``"x" is already in use``), the rest are accepted;
    ``Established`` is ``False``/``NotAccepted`` until the names are accepted, then
    ``False``/``Installing``;
  * serving (``crdHandler``): a CRD whose names are accepted or that is established
    has its versions served (``serving.CustomResources``), a deleted one's are not;
  * establishing (``EstablishingController``): ``Established`` = ``True``
    (``InitialNamesAccepted``), written only once this process serves the CRD — so a
    client that waits for Established never meets a 404 here (upstream's handler
    serves from NamesAccepted on, and its establishing controller acts on the same
    informer's later event);
  * finalizing (``CRDFinalizer``): a CRD being deleted gets ``Terminating``
    (``InstanceDeletionInProgress``), its instances are deleted, then
    ``InstanceDeletionCompleted`` and the ``customresourcecleanup`` finalizer is lifted,
    which removes the CRD.

A failed reconcile is retried with the work queue's per-item backoff. The names a
reconcile accepted are seen by the next one before the informer delivers them: the
controller keeps the CRDs it wrote until the informer holds a version as new (upstream's
mutation cache in the naming controller).

Status writes and the finalizer's removal go through the loopback client (as
``system:apiserver``: validated, admitted, audited, managedFields by the server's field
manager, as upstream's controllers write through their clientset); the instances are
deleted through their own store, as upstream's finalizer deletes through the storage.
``run`` returns only when cancelled.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from proxy.apiextensions.crd_strategy import CLEANUP_FINALIZER, CRD_GROUP, CRD_PLURAL
from proxy.apiextensions.serving import CustomResources
from proxy.endpoints.context import APIContext
from proxy.informer import DeletedFinalStateUnknown, EventHandlers, WorkQueue, run_workers
from proxy.loopback.client import LoopbackClient, resource_path
from proxy.request.delete_options import DeleteOptions
from storage.interfaces import ListOptions

__all__ = ["CRDControllers", "calculate_names"]

log = logging.getLogger("watchcache.apiextensions")

JSON = dict[str, Any]


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(crd: JSON, ctype: str) -> JSON | None:
    for c in (crd.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def set_condition(status: JSON, new: JSON, now: Callable[[], str] = _now) -> None:
    """``SetCRDCondition``: replace the condition of the same type, keeping its
    lastTransitionTime unless the status changed."""
    conditions = status.setdefault("conditions", [])
    for i, c in enumerate(conditions):
        if c.get("type") == new["type"]:
            ltt = c.get("lastTransitionTime") if c.get("status") == new["status"] else now()
            conditions[i] = {"lastTransitionTime": ltt or now(), **new}
            return
    conditions.append({"lastTransitionTime": now(), **new})


def _in_use(requested: str, accepted: str, used: set[str]) -> str | None:
    """``equalToAcceptedOrFresh``: the conflict message, or None."""
    if requested == accepted or requested not in used:
        return None
    return f'"{requested}" is already in use'


def calculate_names(crd: JSON, group_crds: list[JSON]) -> tuple[JSON, JSON, JSON]:
    """(accepted names, NamesAccepted, Established) of ``crd`` given every CRD of its
    group (itself included), as the naming controller computes them."""
    resources: set[str] = set()
    kinds: set[str] = set()
    for other in group_crds:
        names = (other.get("status") or {}).get("acceptedNames") or {}
        resources.update(str(n) for n in (names.get("plural"), names.get("singular")) if n)
        resources.update(str(n) for n in names.get("shortNames") or ())
        kinds.update(str(n) for n in (names.get("kind"), names.get("listKind")) if n)
    requested = (crd.get("spec") or {}).get("names") or {}
    accepted = dict((crd.get("status") or {}).get("acceptedNames") or {})
    new = dict(accepted)
    failure: tuple[str, str] | None = None

    def take(key: str, used: set[str], reason: str) -> None:
        nonlocal failure
        msg = _in_use(str(requested.get(key, "")), str(accepted.get(key, "")), used)
        if msg is not None:
            failure = (reason, msg)
        elif requested.get(key) is not None:
            new[key] = requested[key]

    take("plural", resources, "PluralConflict")
    take("singular", resources, "SingularConflict")
    shorts = list(requested.get("shortNames") or [])
    if shorts != list(accepted.get("shortNames") or []):
        existing = set(accepted.get("shortNames") or [])
        errs = [f'"{s}" is already in use' for s in shorts if s not in existing and s in resources]
        if errs:
            failure = ("ShortNamesConflict", errs[0] if len(errs) == 1 else f"[{', '.join(errs)}]")
        elif shorts:
            new["shortNames"] = shorts
        else:
            new.pop("shortNames", None)
    take("kind", kinds, "KindConflict")
    take("listKind", kinds, "ListKindConflict")
    if requested.get("categories"):
        new["categories"] = list(requested["categories"])
    else:
        new.pop("categories", None)
    if failure is None:
        names_accepted = {
            "type": "NamesAccepted", "status": "True",
            "reason": "NoConflicts", "message": "no conflicts found",
        }  # fmt: skip
    else:
        names_accepted = {
            "type": "NamesAccepted",
            "status": "False",
            "reason": failure[0],
            "message": failure[1],
        }
    established = condition(crd, "Established") or {
        "type": "Established", "status": "False",
        "reason": "NotAccepted", "message": "not all names are accepted",
    }  # fmt: skip
    established.pop("lastTransitionTime", None)
    if established["status"] != "True" and names_accepted["status"] == "True":
        established = {
            "type": "Established", "status": "False",
            "reason": "Installing", "message": "the initial names have been accepted",
        }  # fmt: skip
    return _ordered_names(new), names_accepted, established


_NAME_ORDER = ("plural", "singular", "shortNames", "kind", "listKind", "categories")


def _ordered_names(names: JSON) -> JSON:
    return {k: names[k] for k in _NAME_ORDER if k in names}


def _group_of(crd: JSON) -> list[str]:
    """The ``group`` index: the CRD's API group."""
    group = (crd.get("spec") or {}).get("group")
    return [str(group)] if group else []


def _true(crd: JSON, ctype: str) -> bool:
    found = condition(crd, ctype)
    return found is not None and found.get("status") == "True"


def _rv(crd: JSON) -> int:
    return int((crd.get("metadata") or {}).get("resourceVersion") or 0)


class CRDControllers:
    """Naming, establishing, serving and finalizing of CRDs (see the module docstring)."""

    def __init__(self, ctx: APIContext, serving: CustomResources) -> None:
        self.ctx = ctx
        self.serving = serving
        self.informer = ctx.informers.informer_for(
            CRD_GROUP, CRD_PLURAL, indexers={"group": _group_of}
        )
        self.queue: WorkQueue[str] = WorkQueue("crd-controllers")
        # name -> the CRD as this controller last wrote it, until the informer catches up
        self._written: dict[str, JSON] = {}
        self.informer.add_event_handler(EventHandlers.each(self._enqueue))
        self.synced = asyncio.Event()  # set once the informer has synced (``run``)
        self.client: LoopbackClient | None = None
        # whether this process writes (``--workers``: the Lease holder alone names,
        # establishes and finalizes; every worker serves what is established)
        self.leads: Callable[[], bool] = lambda: True

    @property
    def crds(self) -> dict[str, JSON]:
        """name -> the newest CRD known (informer, or this controller's own write)."""
        return {k: crd for k in self.informer.indexer.list_keys() if (crd := self._get(k))}

    def _get(self, name: str) -> JSON | None:
        held = self.informer.indexer.get_by_key(name)
        written = self._written.get(name)
        if written is None:
            return held
        if held is None or _rv(held) >= _rv(written):
            del self._written[name]  # the informer caught up (or it was deleted)
            return held
        return written

    def _enqueue(self, crd: JSON | DeletedFinalStateUnknown) -> None:
        obj = crd.obj if isinstance(crd, DeletedFinalStateUnknown) else crd
        self.queue.add(str((obj.get("metadata") or {}).get("name") or ""))
        for group in _group_of(obj):  # names freed or taken in the group
            for other in self.informer.indexer.index_keys("group", group):
                self.queue.add(other)

    def _client(self) -> LoopbackClient:
        assert self.client is not None, "run() sets the client"
        return self.client

    async def run(self, client: LoopbackClient) -> None:
        """Run until cancelled (the queue is shut down then); writes go through
        ``client``."""
        self.client = client
        await self.informer.wait_for_sync()
        self.synced.set()
        try:
            await run_workers("crd-controllers", self.queue, self.reconcile)
        finally:
            self.queue.shut_down()

    async def reconcile(self, name: str) -> None:
        crd = self._get(name)
        if crd is None:
            await self.serving.stop(name)
            return
        if self.leads() and await self._update_names(crd):
            return  # the watch brings the new status; served then
        crd = self._get(name) or crd
        established = _true(crd, "Established")
        if established or _true(crd, "NamesAccepted"):
            await self.serving.serve(crd)
            if not established and self.leads() and await self._establish(name):
                return  # the watch brings Established
        meta = crd.get("metadata") or {}
        finalizing = CLEANUP_FINALIZER in (meta.get("finalizers") or [])
        if meta.get("deletionTimestamp") and finalizing and self.leads():
            await self._finalize(crd)

    def resync(self) -> None:
        """Reconcile every CRD again (a worker that takes the Lease over catches up
        with what it left to the previous holder)."""
        for name in self.informer.indexer.list_keys():
            self.queue.add(name)

    async def _update_status(self, name: str, change: Callable[[JSON], None]) -> bool:
        """Apply ``change`` to the CRD's status through ``/status``, as upstream's
        controllers' ``UpdateStatus`` (managedFields: kube-apiserver updating /status);
        False when it changed nothing."""
        changed = False

        def changed_status(current: JSON) -> JSON | None:
            nonlocal changed
            new = copy.deepcopy(current)
            change(new.setdefault("status", {}))
            changed = new != current
            return new if changed else None

        stored = await self._client().update(_crd_path(name, "status"), changed_status)
        if stored is None:  # deleted meanwhile
            return False
        if changed:
            self._written[name] = stored
        return changed

    async def _establish(self, name: str) -> bool:
        """``Established`` True once the names are accepted (upstream's
        EstablishingController, which checks them again on the CRD it reads)."""
        done = {
            "type": "Established", "status": "True",
            "reason": "InitialNamesAccepted", "message": "the initial names have been accepted",
        }  # fmt: skip

        def change(status: JSON) -> None:
            if _true({"status": status}, "NamesAccepted"):
                set_condition(status, done)

        return await self._update_status(name, change)

    async def _update_names(self, crd: JSON) -> bool:
        keys = [k for g in _group_of(crd) for k in self.informer.indexer.index_keys("group", g)]
        in_group = [c for k in keys if (c := self._get(k)) is not None]
        names, accepted, established = calculate_names(crd, in_group)

        def change(status: JSON) -> None:
            status["acceptedNames"] = names
            set_condition(status, accepted)
            set_condition(status, established)
            status.setdefault("storedVersions", [])

        return await self._update_status(str(crd["metadata"]["name"]), change)

    # --------------------------------------------------------------- finalizing

    async def _finalize(self, crd: JSON) -> None:
        name = str(crd["metadata"]["name"])
        in_progress = {
            "type": "Terminating", "status": "True",
            "reason": "InstanceDeletionInProgress",
            "message": "CustomResource deletion is in progress",
        }  # fmt: skip
        if await self._update_status(name, lambda s: set_condition(s, in_progress)):
            return  # served as terminating first (creates refused), then deleted
        remaining = await self._delete_instances(name)
        if remaining:
            raise RuntimeError(f"{remaining} instances remain")
        done = {
            "type": "Terminating", "status": "False",
            "reason": "InstanceDeletionCompleted", "message": "removed all instances",
        }  # fmt: skip
        await self._update_status(name, lambda s: set_condition(s, done))

        def lift(current: JSON) -> JSON:
            finalizers = [
                f for f in current["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER
            ]
            if finalizers:
                current["metadata"]["finalizers"] = finalizers
            else:
                current["metadata"].pop("finalizers", None)
            return current

        await self._client().update(_crd_path(name), lift)

    async def _delete_instances(self, name: str) -> int:
        """Delete every instance (finalizers honoured); how many are left."""
        resource = self.serving.served_resource(name)
        if resource is None:
            return 0
        store = self.ctx.store(resource)
        await store.delete_collection("", ListOptions(), options=DeleteOptions())
        left = await store.list("", ListOptions())
        return len(left.items)


def _crd_path(name: str, sub: str = "") -> str:
    return resource_path(CRD_GROUP, "v1", CRD_PLURAL, name=name, sub=sub)
