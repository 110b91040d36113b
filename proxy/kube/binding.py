"""The ``pods/binding`` subresource's REST storage: how a scheduler assigns a pod to a
node (kube-apiserver's ``registry/core/pod/storage`` BindingREST), over plain objects.

``POST /api/v1/namespaces/NS/pods/NAME/binding`` with a ``v1 Binding``:

- the Binding's name must be the URL's (400 ``name in URL does not match name in
  Binding object``); ``target.name`` is required and ``target.kind`` is empty or
  ``Node`` (upstream returns these field errors unwrapped, hence 500 InternalError);
- one optimistic update of the pod: ``spec.nodeName`` set to the target, the
  Binding's annotations merged, the ``PodScheduled`` condition set True; the Binding's
  ``uid`` / ``resourceVersion``, when set, are preconditions on the pod;
- a pod already bound, or being deleted, is 409 Conflict on ``pods/binding``;
- the answer is ``201`` with a Success ``Status``; ``?dryRun=All`` writes nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from proxy import apierrors
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import Context, ValidateObjectFunc
from proxy.registry.store import Store
from storage.interfaces import JSONObject, Preconditions, StoredObject

__all__ = ["BINDING", "BindingREST", "bind"]

JSON = dict[str, Any]
BINDING = ResourceInfo(group="", version="v1", kind="Binding", plural="bindings",
                       namespaced=True, verbs=(), has_storage=False)  # fmt: skip
_QUALIFIED = "pods/binding"


class _Refused(Exception):
    """The pod cannot be bound; the message is upstream's."""


@dataclass(frozen=True)
class BindingREST:
    """``pods/NAME/binding`` of the pods ``store`` serves."""

    store: Store

    @property
    def kind(self) -> ResourceInfo:
        return BINDING

    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject:
        if obj.get("kind") != "Binding":
            raise apierrors.bad_request(f"not a Binding object: {str(obj)[:200]}")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        if str(meta.get("name") or "") != name:
            raise apierrors.bad_request("name in URL does not match name in Binding object")
        target = obj.get("target") if isinstance(obj.get("target"), dict) else {}
        assert isinstance(target, dict)
        problems = _validate_target(target)
        if problems:
            raise apierrors.internal_error(", ".join(problems))
        await create_validation(obj)
        preconditions = None
        if meta.get("uid") or meta.get("resourceVersion"):
            preconditions = Preconditions(
                uid=meta.get("uid") or None, resource_version=meta.get("resourceVersion") or None
            )
        annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
        assert isinstance(annotations, dict)
        await bind(
            self.store, ctx.namespace, name, str(target["name"]), annotations, preconditions,
            dry_run=ctx.dry_run,
        )  # fmt: skip
        status = apierrors.success_status()
        status["code"] = 201
        return status


def _validate_target(target: JSON) -> list[str]:
    """ValidatePodBinding's field errors, as their aggregate reads."""
    problems = []
    kind = str(target.get("kind") or "")
    if kind and kind != "Node":
        problems.append(f'target.kind: Unsupported value: "{kind}": supported values: "Node"')
    if not target.get("name"):
        problems.append("target.name: Required value")
    return problems


async def bind(
    store: Store,
    namespace: str,
    name: str,
    node: str,
    annotations: dict[str, Any],
    preconditions: Preconditions | None = None,
    *,
    dry_run: bool = False,
) -> StoredObject:
    """Assign the pod ``namespace``/``name`` to ``node``; its Status errors as upstream's."""

    async def assign(pod: JSONObject) -> JSONObject:
        meta = pod.setdefault("metadata", {})
        if meta.get("deletionTimestamp"):
            raise _Refused(f"pod {name} is being deleted, cannot be assigned to a host")
        spec = pod.setdefault("spec", {})
        if spec.get("nodeName"):
            raise _Refused(f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        spec["nodeName"] = node
        if annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        _set_scheduled(pod.setdefault("status", {}))
        return pod

    try:
        stored = await store.update(
            namespace, name, assign, preconditions=preconditions, dry_run=dry_run
        )
    except _Refused as e:
        raise apierrors.conflict(_QUALIFIED, name, str(e)) from None
    return stored


def _set_scheduled(status: JSON) -> None:
    """PodScheduled=True, its transition time now (UpdatePodCondition)."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    for c in conditions:
        if c.get("type") == "PodScheduled":
            if c.get("status") != "True":
                c.update(status="True", lastTransitionTime=now)
                c.pop("reason", None)
                c.pop("message", None)
            break
    else:
        conditions.append({"type": "PodScheduled", "status": "True",
                           "lastProbeTime": None, "lastTransitionTime": now})  # fmt: skip
    status["conditions"] = conditions
