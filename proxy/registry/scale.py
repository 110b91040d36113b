"""A ``/scale`` subresource's REST storage: the object seen as an ``autoscaling/v1``
Scale (upstream's ``ScaleREST`` of deployments, replicasets, statefulsets,
replicationcontrollers and custom resources), over plain objects.

The parent's kind says where its replicas and selector are (a :class:`ScaleAccessor`:
``proxy.kube.scale`` for the built-in kinds, ``proxy.apiextensions`` for a CRD's
``subresources.scale`` paths); this module knows only the Scale.

- get: the Scale (name, namespace, uid, resourceVersion and creationTimestamp of the
  object; ``spec.replicas``; ``status.replicas`` and ``status.selector``);
- update (PUT, PATCH and apply reach it alike): the handler's new Scale is computed
  from the current one (which carries the parent's managedFields, as upstream's scale
  managed-fields handler hands them to the Scale); its ``resourceVersion``, when set,
  must be the object's (409); its name must be the URL's (400); a negative or
  non-integer count is 422 Invalid on ``Scale.autoscaling``. Only the replicas of the
  object change, through the parent's strategy (its generation bumps); validating
  admission sees Scales.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from proxy import apierrors
from proxy.apierrors import FieldError
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import (
    Context,
    UpdatedObjectInfo,
    ValidateObjectFunc,
    ValidateObjectUpdateFunc,
)
from proxy.registry.store import Store
from storage import errors as serr
from storage.interfaces import GetOptions, JSONObject, StoredObject

__all__ = ["SCALE", "ScaleAccessor", "ScaleREST", "to_scale"]

SCALE = ResourceInfo(
    group="autoscaling", version="v1", kind="Scale", plural="scale", namespaced=True, verbs=()
)
_META_KEYS = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


class ScaleAccessor(Protocol):
    """Where a scalable kind keeps its replica counts and selector."""

    def read(self, obj: JSONObject) -> tuple[Any, Any, str]:
        """(spec replicas, status replicas, the selector as a string; "" for none)."""
        ...

    def write_replicas(self, obj: JSONObject, replicas: int) -> None: ...


def to_scale(obj: JSONObject, accessor: ScaleAccessor) -> JSONObject:
    """The autoscaling/v1 Scale of a scalable object."""
    meta = obj.get("metadata") or {}
    spec_replicas, status_replicas, selector = accessor.read(obj)
    scale: JSONObject = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in _META_KEYS if k in meta},
        "spec": {"replicas": spec_replicas} if spec_replicas else {},
        "status": {"replicas": _count(status_replicas)},
    }
    if selector:
        scale["status"]["selector"] = selector
    return scale


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _replicas(scale: JSONObject, name: str) -> int:
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        err = FieldError.invalid("spec.replicas", replicas, "must be an integer")
        raise apierrors.invalid(SCALE.group_kind, name, [err])
    if replicas < 0:
        err = FieldError.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
        raise apierrors.invalid(SCALE.group_kind, name, [err])
    return replicas


def _stored(stored: StoredObject, scale: JSONObject) -> StoredObject:
    return StoredObject(stored.key, orjson.dumps(scale), stored.resource_version, scale)


@dataclass(frozen=True)
class _ScaleUpdatedObjectInfo:
    """The parent object an update of its Scale makes (upstream's
    ``scaleUpdatedObjectInfo``): the request's new Scale, from the current Scale, with
    its replicas written into the current object."""

    request: UpdatedObjectInfo  # the handler's, over Scales
    accessor: ScaleAccessor
    key: str
    name: str

    async def updated_object(self, ctx: Context, current: JSONObject) -> JSONObject:
        if not current:
            raise serr.NotFound(self.key)
        old_scale = to_scale(current, self.accessor)
        managed = (current.get("metadata") or {}).get("managedFields")
        if managed is not None:
            old_scale["metadata"]["managedFields"] = managed
        scale = await self.request.updated_object(ctx, old_scale)
        raw_meta = scale.get("metadata")
        meta: JSONObject = raw_meta if isinstance(raw_meta, dict) else {}
        if meta.get("name", self.name) != self.name:
            raise apierrors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on "
                f"the URL ({self.name})"
            )
        rv = str(meta.get("resourceVersion") or "")
        if rv and rv != str((current.get("metadata") or {}).get("resourceVersion")):
            raise serr.Conflict(self.key)
        updated = copy.deepcopy(current)
        self.accessor.write_replicas(updated, _replicas(scale, self.name))
        return updated

    def managed(self, current: JSONObject, prepared: JSONObject) -> JSONObject:
        return self.request.managed(current, prepared)


@dataclass(frozen=True)
class ScaleREST:
    """The ``scale`` subresource of the resource ``store`` serves."""

    store: Store
    accessor: ScaleAccessor

    @property
    def kind(self) -> ResourceInfo:
        return SCALE

    async def get_object(self, ctx: Context, name: str, opts: GetOptions) -> StoredObject:
        stored = await self.store.get(ctx.namespace, name, opts)
        return _stored(stored, to_scale(stored.obj, self.accessor))

    async def update_object(
        self,
        ctx: Context,
        name: str,
        obj_info: UpdatedObjectInfo,
        create_validation: ValidateObjectFunc,
        update_validation: ValidateObjectUpdateFunc,
        *,
        force_allow_create: bool = False,
    ) -> tuple[StoredObject, bool]:
        """The parent's update through its own strategy; validating admission sees the
        Scales (upstream's ``toScaleUpdateValidation``). Never creates: an absent
        object is 404."""
        key = self.store.object_key(ctx.namespace, name)
        info = _ScaleUpdatedObjectInfo(obj_info, self.accessor, key, name)

        async def validate(obj: JSONObject, old: JSONObject) -> None:
            await update_validation(to_scale(obj, self.accessor), to_scale(old, self.accessor))

        stored, _ = await self.store.update_object(
            ctx, name, info, create_validation, validate
        )
        return _stored(stored, to_scale(stored.obj, self.accessor)), False
