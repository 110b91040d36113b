"""Emptying a namespace being deleted, as kube-controller-manager's namespace controller
does it (``pkg/controller/namespace/deletion``: ``namespacedResourcesDeleter`` and its
``namespaceConditionUpdater``):

- every namespaced resource that can be deleted (the server's own registry stands for
  discovery: built-in kinds and served custom resources, each group/resource once) is
  deleted as a collection with ``propagationPolicy: Background``; objects with
  finalizers stay, marked;
- what is left is counted per resource and per finalizer: objects held by finalizers
  make an estimate (15 s, upstream's ``finalizerEstimateSeconds``) after which the
  controller looks again; objects left without a finalizer are an error (retried);
- the namespace's status conditions say how it went, with upstream's types, reasons
  and messages (``kubectl describe ns`` shows them): each condition is written only
  when its status, reason or message changed.

The deletes go through the loopback client, as upstream's deleter deletes through its
client: each is a ``deletecollection`` request of its own (a DELETE per object for a
resource without it), authenticated as ``system:apiserver``, admitted, audited and
watched like any other, never a write beside the API. What is left is counted by
reading the stores (a read, not a write; no 3,000-object LIST over HTTP).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from proxy.loopback.client import APIError, LoopbackClient, resource_path
from proxy.registry.resources import ResourceInfo
from proxy.registry.store import Store
from storage.interfaces import ListOptions

__all__ = [
    "CONDITION_TYPES",
    "FINALIZER_ESTIMATE_SECONDS",
    "ContentTotals",
    "deletable_resources",
    "delete_all_content",
    "update_conditions",
]

JSON = dict[str, Any]

# what a namespace's status carries about its deletion, in upstream's order, each with
# the reason and message of its "nothing wrong" variant (newSuccessfulCondition)
CONDITION_TYPES: dict[str, tuple[str, str]] = {
    "NamespaceDeletionDiscoveryFailure": (
        "ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "ParsedGroupVersions", "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": (
        "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": (
        "ContentHasNoFinalizers", "All content-preserving finalizers finished"),
}  # fmt: skip

# how long objects held by finalizers are given before the namespace is looked at again
FINALIZER_ESTIMATE_SECONDS = 15

_BACKGROUND = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}


def deletable_resources(resources: Iterable[ResourceInfo]) -> list[ResourceInfo]:
    """The namespaced resources with objects that can be deleted, one version of each
    group/resource (upstream's discovery filtered by the ``delete`` verb)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for resource in resources:
        key = (resource.group, resource.plural)
        if key in seen or not resource.namespaced or not resource.has_storage:
            continue
        if "delete" not in resource.verbs:
            continue
        seen.add(key)
        out.append(resource)
    return out


@dataclass
class ContentTotals:
    """What one pass left: objects per resource and per finalizer, the errors met and
    the seconds to wait before looking again (0: nothing is left)."""

    remaining: dict[str, int] = field(default_factory=dict)  # "configmaps." -> count
    finalizers: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    estimate: int = 0


async def delete_all_content(
    namespace: str, stores: Iterable[tuple[ResourceInfo, Store]], client: LoopbackClient
) -> ContentTotals:
    """One pass of ``deleteAllContent`` over ``stores`` (one resource at a time: N at
    once would take N of the server's in-flight seats)."""
    totals = ContentTotals()
    for resource, store in stores:
        try:
            await _delete_resource(namespace, resource, store, client, totals)
        except Exception as e:  # one resource's failure does not stop the others
            totals.errors.append(str(e))
    return totals


async def _delete_resource(
    namespace: str,
    resource: ResourceInfo,
    store: Store,
    client: LoopbackClient,
    totals: ContentTotals,
) -> None:
    """``deleteAllContentForGroupVersionResource``: delete the collection, then count
    what is left and why."""
    path = resource_path(resource.group, resource.version, resource.plural, namespace)
    try:
        if "deletecollection" in resource.verbs:
            await client.request("DELETE", path, _BACKGROUND)
        else:  # one by one, as upstream's fallback for a resource without deletecollection
            for item in (await store.list(namespace, ListOptions())).items:
                name = str((item.obj.get("metadata") or {}).get("name", ""))
                await client.request("DELETE", f"{path}/{quote(name, safe='')}", _BACKGROUND)
    except APIError as e:
        if e.code != 404:  # 404: deleted meanwhile, or a custom resource no longer served
            raise
    left = (await store.list(namespace, ListOptions())).items
    if not left:
        return
    totals.remaining[f"{resource.plural}.{resource.group}"] = len(left)
    held = Counter(f for item in left for f in (item.obj.get("metadata") or {}).get(
        "finalizers") or [])  # fmt: skip
    if not held:
        raise RuntimeError(
            f"unexpected items still remain in namespace: {namespace} for gvr: "
            f"{resource.group}/{resource.version}, Resource={resource.plural}"
        )
    totals.finalizers.update(held)
    totals.estimate = max(totals.estimate, FINALIZER_ESTIMATE_SECONDS)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _failures(totals: ContentTotals) -> dict[str, JSON]:
    """The conditions that are not the successful variant after ``totals``
    (``ProcessDeleteContentErr``, ``ProcessContentTotals``)."""
    out: dict[str, JSON] = {}
    if totals.errors:
        out["NamespaceDeletionContentFailure"] = {
            "status": "True", "reason": "ContentDeletionFailed",
            "message": f"Failed to delete all resource types, {len(totals.errors)} remaining: "
            + ", ".join(totals.errors),
        }  # fmt: skip
    if totals.remaining:
        listed = sorted(f"{r} has {n} resource instances" for r, n in totals.remaining.items())
        out["NamespaceContentRemaining"] = {
            "status": "True", "reason": "SomeResourcesRemain",
            "message": f"Some resources are remaining: {', '.join(listed)}",
        }  # fmt: skip
    if totals.finalizers:
        held = sorted(f"{f} in {n} resource instances" for f, n in totals.finalizers.items())
        out["NamespaceFinalizersRemaining"] = {
            "status": "True", "reason": "SomeFinalizersRemain",
            "message": f"Some content in the namespace has finalizers remaining: {', '.join(held)}",
        }  # fmt: skip
    return out


def update_conditions(
    conditions: list[JSON], totals: ContentTotals, now: str | None = None
) -> list[JSON]:
    """The namespace's conditions after a pass (``namespaceConditionUpdater.Update``):
    each of ours, kept as it was when status, reason and message are the same (its
    transition time too), the others' conditions after them unchanged."""
    failures = _failures(totals)
    old = {c.get("type"): c for c in conditions}
    out = []
    for ctype, (reason, message) in CONDITION_TYPES.items():
        new = {"type": ctype, **failures.get(
            ctype, {"status": "False", "reason": reason, "message": message})}  # fmt: skip
        current = old.get(ctype)
        if current is not None and all(current.get(k) == new[k] for k in
                                       ("status", "reason", "message")):  # fmt: skip
            out.append(current)
        else:
            out.append({**new, "lastTransitionTime": now or _now()})
    out += [c for c in conditions if c.get("type") not in CONDITION_TYPES]
    return out
