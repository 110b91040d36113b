"""The CRD controllers apiextensions-apiserver runs, as one owned task pair:

- an informer: LIST the CRDs (``resourceVersion=0``, from the watch cache), then WATCH
  from the list's revision; a closed stream or an error relists after ``RETRY_SECONDS``;
- a worker, woken for each changed CRD (and every other CRD of its group, whose names
  may now be free), that runs in order:

  * naming (``NamingConditionController``): ``status.acceptedNames`` and the
    ``NamesAccepted`` condition; a name another CRD of the group has accepted is a
    conflict (``PluralConflict`` ... ``"x" is already in use``), the rest are accepted;
    ``Established`` is ``False``/``NotAccepted`` until the names are accepted;
  * establishing (``EstablishingController``): ``Established`` = ``True``
    (``InitialNamesAccepted``) once the names are accepted;
  * serving (``crdHandler``): an established CRD's versions are served
    (``serving.CustomResources``), a deleted one's are not;
  * finalizing (``CRDFinalizer``): a CRD being deleted gets ``Terminating``
    (``InstanceDeletionInProgress``), its instances are deleted, then
    ``InstanceDeletionCompleted`` and the ``customresourcecleanup`` finalizer is lifted,
    which removes the CRD.

Status writes go straight to the CRD's store (the controllers are the server itself).
``run`` returns only when cancelled; cancelling stops both tasks.
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

import orjson

from cacher.cacher import cancel_all
from proxy import apierrors
from proxy.apiextensions.crd_strategy import CLEANUP_FINALIZER
from proxy.apiextensions.serving import CustomResources
from proxy.fieldmanager.wiring import field_manager, set_managed_fields
from proxy.registry.store import Store
from proxy.request.delete_options import DeleteOptions
from proxy.server.context import APIContext
from storage.interfaces import JSONObject, ListOptions

__all__ = ["CRDControllers", "calculate_names"]

log = logging.getLogger("watchcache.apiextensions")

JSON = dict[str, Any]
RETRY_SECONDS = 1.0
CRD_GROUP, CRD_PLURAL = "apiextensions.k8s.io", "customresourcedefinitions"
# the manager upstream's in-process controllers write as
CONTROLLER_MANAGER = "kube-apiserver"


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
            "type": "Established", "status": "True",
            "reason": "InitialNamesAccepted", "message": "the initial names have been accepted",
        }  # fmt: skip
    return _ordered_names(new), names_accepted, established


_NAME_ORDER = ("plural", "singular", "shortNames", "kind", "listKind", "categories")


def _ordered_names(names: JSON) -> JSON:
    return {k: names[k] for k in _NAME_ORDER if k in names}


class CRDControllers:
    """Naming, establishing, serving and finalizing of CRDs (see the module docstring)."""

    def __init__(self, ctx: APIContext, serving: CustomResources) -> None:
        self.ctx = ctx
        self.serving = serving
        self.crds: dict[str, JSON] = {}
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self.synced = asyncio.Event()

    def _crd_store(self) -> Store:
        resource = self.ctx.registry.get(CRD_GROUP, "v1", CRD_PLURAL)
        assert resource is not None
        return self.ctx.store(resource)

    async def run(self) -> None:
        """Run until cancelled."""
        tasks = [
            asyncio.create_task(self._inform(), name="crd-informer"),
            asyncio.create_task(self._work(), name="crd-controllers"),
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            await cancel_all(tasks)

    # ----------------------------------------------------------------- informer

    def _mark(self, name: str) -> None:
        self._dirty.add(name)
        crd = self.crds.get(name)
        group = (crd.get("spec") or {}).get("group") if crd else None
        for other, obj in self.crds.items():  # names freed or taken in the group
            if group and (obj.get("spec") or {}).get("group") == group:
                self._dirty.add(other)
        self._wake.set()

    async def _inform(self) -> None:
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # etcd down, compaction: list again shortly
                log.info("CRD informer: %s (relisting)", e)
            await asyncio.sleep(RETRY_SECONDS)

    async def _list_and_watch(self) -> None:
        store = self._crd_store()
        listed = await store.list("", ListOptions(resource_version="0"))
        fresh = {str(i.obj["metadata"]["name"]): i.obj for i in listed.items}
        for gone in set(self.crds) - set(fresh):
            self.crds.pop(gone)
            self._mark(gone)
        for name, obj in fresh.items():
            self.crds[name] = obj
            self._mark(name)
        self.synced.set()
        watcher = await store.watch("", ListOptions(resource_version=str(listed.resource_version)))
        try:
            async for event in watcher:
                if event.type == "BOOKMARK":
                    continue
                if event.type == "ERROR":
                    return
                obj = orjson.loads(event.data)
                name = str(obj["metadata"]["name"])
                if event.type == "DELETED":
                    self._mark(name)
                    self.crds.pop(name, None)
                else:
                    self.crds[name] = obj
                    self._mark(name)
        finally:
            await watcher.stop()

    # ------------------------------------------------------------------- worker

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._dirty:
                name = min(self._dirty)
                self._dirty.discard(name)
                try:
                    await self.reconcile(name)
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.warning("CRD %s: %s (retrying)", name, e)
                    asyncio.get_running_loop().call_later(RETRY_SECONDS, self._mark, name)

    async def reconcile(self, name: str) -> None:
        crd = self.crds.get(name)
        if crd is None:
            await self.serving.stop(name)
            return
        if await self._update_names(crd):
            return  # the watch brings the new status; served then
        crd = self.crds.get(name, crd)
        established = condition(crd, "Established")
        if established is not None and established.get("status") == "True":
            await self.serving.serve(crd)
        meta = crd.get("metadata") or {}
        if meta.get("deletionTimestamp") and CLEANUP_FINALIZER in (meta.get("finalizers") or []):
            await self._finalize(crd)

    async def _update_status(self, name: str, change: Callable[[JSON], None]) -> bool:
        """Apply ``change`` to the CRD's status; False when it changed nothing."""
        changed = False

        async def try_update(current: JSONObject) -> JSONObject:
            nonlocal changed
            new = copy.deepcopy(current)
            change(new.setdefault("status", {}))
            changed = new != current
            if not changed:
                return current
            # recorded as upstream's controllers are: kube-apiserver updating /status
            status_fm = field_manager(CRD_GROUP, "v1", "CustomResourceDefinition", "status", True)
            return set_managed_fields(new, status_fm.update(current, new, CONTROLLER_MANAGER))

        try:
            stored = await self._crd_store().update("", name, try_update)
        except apierrors.StatusError as e:
            if e.code == 404:
                return False
            raise
        if changed:
            self.crds[name] = stored.obj
        return changed

    async def _update_names(self, crd: JSON) -> bool:
        group = (crd.get("spec") or {}).get("group")
        in_group = [c for c in self.crds.values() if (c.get("spec") or {}).get("group") == group]
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

        async def lift(current: JSONObject) -> JSONObject:
            new = copy.deepcopy(current)
            finalizers = [
                f for f in new["metadata"].get("finalizers") or [] if f != CLEANUP_FINALIZER
            ]
            if finalizers:
                new["metadata"]["finalizers"] = finalizers
            else:
                new["metadata"].pop("finalizers", None)
            return new

        await self._crd_store().update("", name, lift)

    async def _delete_instances(self, name: str) -> int:
        """Delete every instance (finalizers honoured); how many are left."""
        resource = self.serving.served_resource(name)
        if resource is None:
            return 0
        store = self.ctx.store(resource)
        await store.delete_collection("", ListOptions(), options=DeleteOptions())
        left = await store.list("", ListOptions())
        return len(left.items)
