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
- **graceful deletion** (a kind whose strategy gives a grace period: upstream's
  ``RESTGracefulDeleteStrategy``, the pod's): ``deletionTimestamp`` is set that many
  seconds ahead, ``deletionGracePeriodSeconds`` to the period, and the object stays
  until it is deleted again with ``gracePeriodSeconds=0``; a second DELETE may only
  shorten the period;
- a kind that **terminates** (a Namespace) goes ``status.phase: Terminating`` and stays
  while ``spec.finalizers`` is set: a controller empties it, then lifts those
  finalizers (the server's own namespace controller, or a controller manager's);
- a kind's own **finalizers** (a CRD's cleanup finalizer) are added on every DELETE;
- otherwise the object is removed at once.

What a kind adds is its strategy's :class:`DeletionRules` (``Strategy.deletion``): this
module names no kind.

The policy and graceful parts apply only when ``lifecycle`` is true
(``--lifecycle-controllers``: kubelets and a garbage collector run against the server, as
in the lab); without them nothing would ever finish such a deletion, so a standalone
server deletes at once. A DELETE that leaves the object in place answers 200 with it
(202 when ``orphanDependents: false`` was asked, as upstream).
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from storage.interfaces import JSONObject

if TYPE_CHECKING:  # the request's options, parsed by the handler layer
    from proxy.request.delete_options import DeleteOptions

__all__ = [
    "FOREGROUND",
    "ORPHAN",
    "DeleteNow",
    "DeletionRules",
    "mark",
    "response_code",
    "should_delete_during_update",
]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


@dataclass(frozen=True)
class DeletionRules:
    """What a kind's strategy adds to the generic DELETE.

    ``grace_period``: upstream's ``CheckGracefulDelete`` (the seconds an object gets
    before removal, given the request's options; 0: none now), None for a kind without
    graceful deletion. ``finalizers``: added on every DELETE (a CRD's own Delete adds
    its cleanup finalizer). ``terminates``: the object goes ``status.phase:
    Terminating`` and stays while ``spec.finalizers`` is set (a Namespace's own
    Delete). ``bumps_generation``: a tracked generation is bumped when
    the deletion is recorded (not for a CRD, whose strategy keeps it)."""

    grace_period: Callable[[JSONObject, DeleteOptions], int] | None = None
    finalizers: tuple[str, ...] = ()
    terminates: bool = False
    bumps_generation: bool = True


NO_RULES = DeletionRules()

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


class DeleteNow(Exception):
    """Raised by :func:`mark`: nothing keeps the object, the store removes it. For a
    kind with graceful deletion (a pod) ``marked`` is the object as upstream writes it
    first (``deletionTimestamp`` now, ``deletionGracePeriodSeconds: 0``): the store
    writes it, then removes it, and answers with it (watchers see MODIFIED, then
    DELETED), as ``updateForGracefulDeletionAndFinalizers`` followed by the delete."""

    def __init__(self, marked: JSONObject | None = None) -> None:
        super().__init__()
        self.marked = marked


def mark(
    rules: DeletionRules, current: JSONObject, opts: DeleteOptions, *, lifecycle: bool
) -> JSONObject:
    """The object after a DELETE that leaves it in place (deletionTimestamp, the
    policy's finalizers, Terminating); :class:`DeleteNow` when nothing keeps it. The
    store runs this inside its optimistic update (``Store.delete``) with its kind's
    ``rules``."""
    current = copy.deepcopy(current)
    meta = current.setdefault("metadata", {})
    grace = 0
    if lifecycle and rules.grace_period is not None:
        grace = max(rules.grace_period(current, opts), 0)
    finalizers = list(meta.get("finalizers") or [])
    if lifecycle:
        finalizers = _finalizers(finalizers, _policy(opts))
    finalizers += [f for f in rules.finalizers if f not in finalizers]
    waits_for_controller = False
    if rules.terminates:
        # a controller empties it, then lifts spec.finalizers (a namespace's kubernetes)
        waits_for_controller = bool((current.get("spec") or {}).get("finalizers"))
        current.setdefault("status", {})["phase"] = "Terminating"
    if not finalizers and grace == 0 and not waits_for_controller:
        if rules.grace_period is not None and not meta.get("deletionTimestamp"):
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
    if meta.get("generation") and rules.bumps_generation:
        meta["generation"] = int(meta["generation"]) + 1
    return current


def should_delete_during_update(rules: DeletionRules, obj: JSONObject) -> bool:
    """Being deleted, nothing left to wait for (upstream's ShouldDeleteDuringUpdate; a
    kind that terminates also waits for its spec.finalizers)."""
    meta = obj.get("metadata") or {}
    if rules.terminates and (obj.get("spec") or {}).get("finalizers"):
        return False
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and not int(
        meta.get("deletionGracePeriodSeconds") or 0)  # fmt: skip


def response_code(removed: bool, opts: DeleteOptions) -> int:
    """200, or 202 Accepted when the object stays and orphanDependents=false was asked."""
    return 202 if not removed and opts.orphan_dependents is False else 200
