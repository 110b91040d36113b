"""The ``pods/eviction`` subresource's REST storage: a delete that honours
PodDisruptionBudgets (kube-apiserver's ``registry/core/pod/storage/eviction.go``).

``POST /api/v1/namespaces/NS/pods/NAME/eviction`` with a ``policy/v1 Eviction``
(``policy/v1beta1`` accepted too):

- the Eviction's name must be the URL's (400); its ``deleteOptions.dryRun`` and the
  request's ``?dryRun`` are merged (either one makes it a dry run);
- a pod that is Pending, Succeeded, Failed or already being deleted is deleted at once,
  no budget consulted (it disrupts nothing more); a running one is guarded by its
  resourceVersion unless the client gave one, so that it cannot become ready unseen;
- otherwise the budgets of the pod's namespace that select it decide: none → deleted;
  more than one → a 500 Status (unsupported); a not-ready pod is deleted without using
  the budget while the budget is met (``currentHealthy >= desiredHealthy > 0``) or its
  ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow``; a ready one needs
  ``status.disruptionsAllowed > 0``: the budget's status is decremented and the pod
  recorded in ``disruptedPods`` (for the disruption controller to discount) before the
  pod is deleted. A budget the controller has not observed yet
  (``observedGeneration < generation``) or with no disruption left is 429
  TooManyRequests with a ``DisruptionBudget`` cause; conflicts on the budget are retried;
- the pod gets the ``DisruptionTarget`` condition (``EvictionByEvictionAPI``) and is
  then deleted with the Eviction's DeleteOptions (its grace period, preconditions);
- the answer is ``201`` with a Success ``Status``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxy import apierrors
from proxy.kube import poddisruptionbudget as pdbs
from proxy.registry import before_delete
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import Context, SubresourceStorage, ValidateObjectFunc
from proxy.registry.store import Store
from proxy.request import delete_options
from proxy.request.delete_options import DeleteOptions
from storage.interfaces import JSONObject, ListOptions, Preconditions

__all__ = ["EVICTION", "EvictionREST", "StoreLookup", "with_eviction"]

JSON = dict[str, Any]
EVICTION = ResourceInfo(group="policy", version="v1", kind="Eviction", plural="evictions",
                        namespaced=True, verbs=())  # fmt: skip
_ACCEPTED_VERSIONS = ("policy/v1", "policy/v1beta1")
MAX_DISRUPTED_POD_SIZE = 2000
# EvictionsRetry: 20 tries half a second apart on a conflict
RETRY_STEPS = 20
RETRY_SECONDS = 0.5
_TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


# (group, plural, subresource) -> the generic store of a served resource; None where it
# is not served
StoreLookup = Callable[[str, str, str], Store | None]
SubresourceStorages = Callable[[ResourceInfo, str, Store], SubresourceStorage | None]


def with_eviction(storages: SubresourceStorages, stores: StoreLookup) -> SubresourceStorages:
    """``storages`` with ``pods/eviction`` over the pods store, the pods' status store
    and the PodDisruptionBudgets' stores that ``stores`` finds."""

    def storage(
        resource: ResourceInfo, subresource: str, store: Store
    ) -> SubresourceStorage | None:
        if (resource.group, resource.plural, subresource) == ("", "pods", "eviction"):
            pod_status = stores("", "pods", "status")
            pdbs = stores("policy", "poddisruptionbudgets", "")
            pdb_status = stores("policy", "poddisruptionbudgets", "status")
            if pod_status is not None and pdbs is not None and pdb_status is not None:
                return EvictionREST(store, pod_status, pdbs, pdb_status)
        return storages(resource, subresource, store)

    return storage


def _too_many_requests(retry_after: int, cause: str) -> apierrors.StatusError:
    """``errors.NewTooManyRequests`` with a DisruptionBudget cause (a zero retry is
    omitted, as Go's omitempty omits it)."""
    details: JSON = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return apierrors.StatusError(apierrors.status_body(429, "TooManyRequests", _TOO_MANY, details))


def _still_processed(pdb_name: str) -> apierrors.StatusError:
    """``createTooManyRequestsError``: the budget's status is behind its spec."""
    cause = f"The disruption budget {pdb_name} is still being processed by the server."
    return _too_many_requests(10, cause)


def _is_conflict(e: Exception) -> bool:
    return isinstance(e, apierrors.StatusError) and e.code == 409


def _can_ignore_pdb(pod: JSON) -> bool:
    """``canIgnorePDB``: the pod disrupts nothing more by going away."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(
        (pod.get("metadata") or {}).get("deletionTimestamp"))  # fmt: skip


def _should_enforce_resource_version(pod: JSON) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get(
        "deletionTimestamp")  # fmt: skip


def _with_resource_version(options: DeleteOptions, rv: str) -> DeleteOptions:
    uid = options.preconditions.uid if options.preconditions else None
    return dataclasses.replace(options, preconditions=Preconditions(uid=uid, resource_version=rv))


def _rv_unset(options: DeleteOptions) -> bool:
    return options.preconditions is None or options.preconditions.resource_version is None


def _delete_options(eviction: JSON, dry_run: bool) -> DeleteOptions:
    """The Eviction's DeleteOptions with the request's dry run merged in
    (``propagateDryRun``: both may only say ``All``, so they cannot disagree)."""
    body = eviction.get("deleteOptions")
    options = delete_options.from_decoded_body(body) if body is not None else DeleteOptions()
    options = delete_options.validate_delete_options(options)
    return dataclasses.replace(options, dry_run=options.dry_run or dry_run)


@dataclass(frozen=True)
class EvictionREST:
    """``pods/NAME/eviction`` over the pods ``store`` (its deletes), ``pod_status`` (the
    DisruptionTarget condition) and the budgets' ``pdbs`` and ``pdb_status`` stores."""

    store: Store
    pod_status: Store
    pdbs: Store
    pdb_status: Store

    @property
    def kind(self) -> ResourceInfo:
        return EVICTION

    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject:
        if obj.get("kind") != "Eviction" or obj.get("apiVersion") not in _ACCEPTED_VERSIONS:
            raise apierrors.bad_request(f"not a Eviction object: {str(obj)[:200]}")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        if str((meta or {}).get("name") or "") != name:
            raise apierrors.bad_request("name in URL does not match name in Eviction object")
        options = _delete_options(obj, ctx.dry_run)
        ctx = dataclasses.replace(ctx, dry_run=options.dry_run)
        await create_validation(obj)
        pod = await self._delete_if_pdb_ignorable(ctx, name, options)
        if pod is not None:
            await self._evict_guarded(ctx, pod, options)
        status = apierrors.success_status()
        status["code"] = 201
        return status

    async def _delete_if_pdb_ignorable(
        self, ctx: Context, name: str, options: DeleteOptions
    ) -> JSON | None:
        """The first loop of upstream's Create: the pod (for the budgets to judge), or
        None once a pod that needs no budget was deleted. Conflicts are retried unless
        the client set the resourceVersion itself."""
        for attempt in range(RETRY_STEPS):
            pod = (await self.store.get(ctx.namespace, name)).copy()
            if not _can_ignore_pdb(pod):
                return pod
            guarded = options
            if _should_enforce_resource_version(pod) and _rv_unset(options):
                guarded = _with_resource_version(options, pod["metadata"]["resourceVersion"])
            try:
                await self.store.delete_object(ctx, name, _admitted, guarded)
                return None
            except apierrors.StatusError as e:
                if not _is_conflict(e) or not _rv_unset(options) or attempt == RETRY_STEPS - 1:
                    raise
            await asyncio.sleep(RETRY_SECONDS)
        raise AssertionError("unreachable")

    async def _evict_guarded(self, ctx: Context, pod: JSON, options: DeleteOptions) -> None:
        """The pod's budget decides (see the module docstring), then the delete."""
        name = str(pod["metadata"]["name"])
        budgets = await self._budgets_of(ctx.namespace, pod)
        if len(budgets) > 1:
            message = ("This pod has more than one PodDisruptionBudget, which the eviction "
                       "subresource does not support.")  # fmt: skip
            raise apierrors.StatusError(apierrors.status_body(500, "", message))
        guard_rv = False
        pdb_name = ""
        if budgets:
            pdb = budgets[0]
            pdb_name = str(pdb["metadata"]["name"])
            if not pdbs.is_pod_ready(pod) and _unhealthy_may_go(pdb):
                guard_rv = True  # not counted as healthy: no disruption used
            else:
                await self._check_and_decrement(ctx, pdb, name)
        guarded = options
        if guard_rv:  # the pod must not have become ready since it was judged
            guarded = _with_resource_version(options, pod["metadata"]["resourceVersion"])
        try:
            await self._add_condition_and_delete(ctx, name, guarded)
        except apierrors.StatusError as e:
            if _is_conflict(e) and guard_rv and _rv_unset(options):
                raise _still_processed(pdb_name) from None
            raise

    async def _budgets_of(self, namespace: str, pod: JSON) -> list[JSON]:
        listed = await self.pdbs.list(namespace, ListOptions())
        labels = (pod.get("metadata") or {}).get("labels") or {}
        return [item.obj for item in listed.items if pdbs.covers(item.obj, labels)]

    async def _check_and_decrement(self, ctx: Context, pdb: JSON, pod_name: str) -> None:
        """Use one of ``pdb``'s disruptions for ``pod_name`` (``checkAndDecrement`` in a
        retry-on-conflict loop that re-reads the budget)."""
        name = str(pdb["metadata"]["name"])
        for attempt in range(RETRY_STEPS):
            if attempt:
                pdb = (await self.pdbs.get(ctx.namespace, name)).copy()
            status = _decremented(pdb, pod_name, dry_run=ctx.dry_run)
            if ctx.dry_run:
                return
            rv = str(pdb["metadata"].get("resourceVersion") or "")

            async def write_status(current: JSONObject, status: JSON = status) -> JSONObject:
                return {**current, "status": status}

            try:
                await self.pdb_status.update(ctx.namespace, name, write_status,
                                             preconditions=Preconditions(resource_version=rv))
                return
            except apierrors.StatusError as e:
                if not _is_conflict(e) or attempt == RETRY_STEPS - 1:
                    raise
            await asyncio.sleep(RETRY_SECONDS)

    async def _add_condition_and_delete(
        self, ctx: Context, name: str, options: DeleteOptions
    ) -> None:
        """``addConditionAndDeletePod``: the DisruptionTarget condition on the latest pod
        (the options' preconditions checked on it), the resourceVersion precondition
        moved past that write, then the delete."""
        if not ctx.dry_run:
            resource = self.store.resource

            async def add_condition(current: JSONObject) -> JSONObject:
                before_delete.check_preconditions(resource, options.preconditions, current)
                _set_disruption_target(current.setdefault("status", {}))
                return current

            stored = await self.pod_status.update(ctx.namespace, name, add_condition)
            if not _rv_unset(options):
                options = _with_resource_version(options, str(stored.obj["metadata"]
                                                              ["resourceVersion"]))  # fmt: skip
        await self.store.delete_object(ctx, name, _admitted, options)


async def _admitted(obj: JSONObject | None) -> None:
    """The delete's validation: the eviction was admitted already (``ValidateAllObjectFunc``)."""


def _unhealthy_may_go(pdb: JSON) -> bool:
    """A not-ready pod may be evicted without using the budget: always with the
    ``AlwaysAllow`` policy, else (``IfHealthyBudget``, the default) while the budget is
    met."""
    if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = pdb.get("status") or {}
    desired = int(status.get("desiredHealthy") or 0)
    return int(status.get("currentHealthy") or 0) >= desired > 0


def _decremented(pdb: JSON, pod_name: str, *, dry_run: bool) -> JSON:
    """``pdb``'s status with one disruption used by ``pod_name``, or the error that
    refuses it: 429 while the budget's status is behind its spec or no disruption is
    left, 403 for a status no controller would write."""
    name = str(pdb["metadata"]["name"])
    status: JSON = dict(pdb.get("status") or {})
    qualified = "poddisruptionbudget.policy"
    if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
        raise _still_processed(name)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise apierrors.forbidden(qualified, name, "pdb disruptions allowed is negative")
    disrupted = dict(status.get("disruptedPods") or {})
    if len(disrupted) > MAX_DISRUPTED_POD_SIZE:
        raise apierrors.forbidden(qualified, name, "DisruptedPods map too big - too many "
                                  "evictions not confirmed by PDB controller")  # fmt: skip
    if allowed == 0:
        raise _too_many_requests(0, f"The disruption budget {name} needs "
                                 f"{int(status.get('desiredHealthy') or 0)} healthy pods and "
                                 f"has {int(status.get('currentHealthy') or 0)} "
                                 "currently")  # fmt: skip
    status["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        status["conditions"] = [dict(c) for c in status.get("conditions") or []]
        pdbs.update_disruption_allowed_condition(status)
    if not dry_run:
        disrupted[pod_name] = pdbs.now_rfc3339()
        status["disruptedPods"] = disrupted
    return status


def _set_disruption_target(status: JSON) -> None:
    """``UpdatePodCondition`` with DisruptionTarget True (EvictionByEvictionAPI)."""
    now = pdbs.now_rfc3339()
    wanted = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
              "message": "Eviction API: evicting"}  # fmt: skip
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    for c in conditions:
        if c.get("type") == "DisruptionTarget":
            if c.get("status") != "True":
                c["lastTransitionTime"] = now
            c.update(wanted)
            break
    else:
        conditions.append({**wanted, "lastProbeTime": None, "lastTransitionTime": now})
    status["conditions"] = conditions
