"""What a DELETE does to an object, as kube-apiserver's generic registry decides it
(``registry/generic/registry/store.go`` Delete and ``updateForGracefulDeletionAndFinalizers``,
``rest.BeforeDelete``, the pod strategy's ``CheckGracefulDelete``):

- **finalizers** are honoured: an object with ``metadata.finalizers`` is not removed; it
  gets ``deletionTimestamp`` (and ``deletionGracePeriodSeconds: 0``) and stays until an
  update empties its finalizers, which then removes it (``Store.update``, after
  :func:`should_delete_during_update`);
- **propagationPolicy**: ``Foreground`` adds the ``foregroundDeletion`` finalizer,
  ``Orphan`` (or ``orphanDependents: true``) the ``orphan`` finalizer, ``Background``
  neither (a garbage collector removes them and the dependents);
- **graceful deletion** of a pod bound to a node and not finished: ``deletionTimestamp``
  is set ``gracePeriodSeconds`` (the request's, else the pod's
  ``terminationGracePeriodSeconds``, else 30) ahead, ``deletionGracePeriodSeconds`` to
  that period, and the pod stays until its kubelet deletes it with
  ``gracePeriodSeconds=0``; a second DELETE may only shorten the period;
- a **Namespace** (with ``--lifecycle-controllers``) goes ``status.phase: Terminating``
  and stays while ``spec.finalizers`` (``kubernetes``) is set: the namespace controller
  empties it, then lifts that finalizer through ``namespaces/NAME/finalize``;
- otherwise the object is removed at once.

The policy and graceful parts apply only when ``lifecycle`` is true
(``--lifecycle-controllers``: kubelets and a garbage collector run against the server, as
in the lab); without them nothing would ever finish such a deletion, so a standalone
server deletes at once. A DELETE that leaves the object in place answers 200 with it
(202 when ``orphanDependents: false`` was asked, as upstream).
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import TYPE_CHECKING, Any

from proxy.registry.resources import ResourceInfo
from storage.interfaces import JSONObject

if TYPE_CHECKING:  # the request's options, parsed by the handler layer
    from proxy.request.delete_options import DeleteOptions

__all__ = [
    "FOREGROUND",
    "ORPHAN",
    "DeleteNow",
    "mark",
    "response_code",
    "should_delete_during_update",
]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
DEFAULT_GRACE_SECONDS = 30

def _now(offset: int = 0) -> str:
    at = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _policy(opts: DeleteOptions) -> str | None:
    if opts.propagation_policy:
        return opts.propagation_policy
    if opts.orphan_dependents is not None:
        return "Orphan" if opts.orphan_dependents else "Background"
    return None


def _finalizers(current: list[str], policy: str | None) -> list[str]:
    """The finalizers after a DELETE with ``policy`` (upstream's
    deletionFinalizersForGarbageCollection: the two GC finalizers exclude each other)."""
    out = list(current)
    if policy == "Orphan":
        out = [f for f in out if f != FOREGROUND] + ([ORPHAN] if ORPHAN not in out else [])
    elif policy == "Foreground":
        out = [f for f in out if f != ORPHAN] + ([FOREGROUND] if FOREGROUND not in out else [])
    elif policy == "Background":
        out = [f for f in out if f not in (ORPHAN, FOREGROUND)]
    return out


def grace_period(resource: ResourceInfo, obj: JSONObject, opts: DeleteOptions) -> int:
    """Seconds the object gets before removal: only a pod on a node that has not
    finished has any (the pod strategy's CheckGracefulDelete)."""
    if resource.group != "" or resource.plural != "pods":
        return 0
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    if opts.grace_period_seconds is not None:
        return max(opts.grace_period_seconds, 0)
    value: Any = spec.get("terminationGracePeriodSeconds")
    return int(value) if isinstance(value, int) else DEFAULT_GRACE_SECONDS


CRD_RESOURCE = ("apiextensions.k8s.io", "customresourcedefinitions")
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


class DeleteNow(Exception):
    """Raised by :func:`mark`: nothing keeps the object, the store removes it. For a
    kind with graceful deletion (pods) ``marked`` is the object as upstream writes it
    first (``deletionTimestamp`` now, ``deletionGracePeriodSeconds: 0``): the store
    writes it, then removes it, and answers with it (watchers see MODIFIED, then
    DELETED), as ``updateForGracefulDeletionAndFinalizers`` followed by the delete."""

    def __init__(self, marked: JSONObject | None = None) -> None:
        super().__init__()
        self.marked = marked


def _graceful(resource: ResourceInfo) -> bool:
    """Kinds whose strategy is a RESTGracefulDeleteStrategy (only the pod's)."""
    return resource.group == "" and resource.plural == "pods"


def mark(
    resource: ResourceInfo, current: JSONObject, opts: DeleteOptions, *, lifecycle: bool
) -> JSONObject:
    """The object after a DELETE that leaves it in place (deletionTimestamp, the
    policy's finalizers, a namespace Terminating); :class:`DeleteNow` when nothing
    keeps it. The store runs this inside its optimistic update (``Store.delete``)."""
    current = copy.deepcopy(current)
    meta = current.setdefault("metadata", {})
    grace = grace_period(resource, current, opts) if lifecycle else 0
    finalizers = list(meta.get("finalizers") or [])
    if lifecycle:
        finalizers = _finalizers(finalizers, _policy(opts))
    waits_for_controller = False
    is_crd = (resource.group, resource.plural) == CRD_RESOURCE
    if is_crd and CRD_CLEANUP_FINALIZER not in finalizers:
        # the CRD's own Delete (apiextensions-apiserver's etcd.go): kept until the
        # finalizing controller has removed every instance
        finalizers.append(CRD_CLEANUP_FINALIZER)
    if lifecycle and resource.group == "" and resource.plural == "namespaces":
        # the namespace controller empties it, then lifts spec.finalizers (kubernetes)
        waits_for_controller = bool((current.get("spec") or {}).get("finalizers"))
        current.setdefault("status", {})["phase"] = "Terminating"
    if not finalizers and grace == 0 and not waits_for_controller:
        if _graceful(resource) and not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = _now()
            meta["deletionGracePeriodSeconds"] = 0
            if meta.get("generation"):
                meta["generation"] = int(meta["generation"]) + 1
            raise DeleteNow(current)
        raise DeleteNow
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)
    if meta.get("deletionTimestamp"):
        if grace < int(meta.get("deletionGracePeriodSeconds") or 0):  # only shorter
            meta["deletionTimestamp"] = _now(grace)
            meta["deletionGracePeriodSeconds"] = grace
        return current
    meta["deletionTimestamp"] = _now(grace)
    meta["deletionGracePeriodSeconds"] = grace
    if meta.get("generation") and not is_crd:
        meta["generation"] = int(meta["generation"]) + 1
    return current


def should_delete_during_update(obj: JSONObject) -> bool:
    """Being deleted, nothing left to wait for (upstream's ShouldDeleteDuringUpdate; a
    Namespace also waits for its spec.finalizers, which ``/finalize`` lifts)."""
    meta = obj.get("metadata") or {}
    if obj.get("kind") == "Namespace" and (obj.get("spec") or {}).get("finalizers"):
        return False
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and not int(
        meta.get("deletionGracePeriodSeconds") or 0)  # fmt: skip


def response_code(removed: bool, opts: DeleteOptions) -> int:
    """200, or 202 Accepted when the object stays and orphanDependents=false was asked."""
    return 202 if not removed and opts.orphan_dependents is False else 200
