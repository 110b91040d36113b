"""The ``/scale`` subresource of deployments, replicasets, statefulsets and
replicationcontrollers: the object seen as an ``autoscaling/v1`` Scale, as ``kubectl scale``
(a merge PATCH of ``{"spec":{"replicas":N}}``) and autoscalers use it.

- GET: the Scale (name, namespace, uid, resourceVersion and creationTimestamp of the
  object; ``spec.replicas``; ``status.replicas`` and ``status.selector`` as a selector
  string).
- PUT: a Scale body; its ``resourceVersion``, when set, must be the object's (409); its
  name must be the URL's (400).
- PATCH: json, merge or strategic patch applied to the Scale.

Only ``spec.replicas`` of the object changes (its generation bumps); a negative count
is 422 Invalid on ``Scale.autoscaling``. ``?dryRun=All`` writes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from proxy import apierrors
from proxy.admission import handler as admission
from proxy.admission.attributes import UPDATE
from proxy.apierrors import FieldError
from proxy.endpoints import decoding, negotiation, responsewriters
from proxy.fieldmanager import wiring as managed
from proxy.patch import patcher as patch
from proxy.printers.columns import format_label_selector
from proxy.registry import object_meta, validation
from proxy.registry.resources import ResourceInfo
from proxy.registry.store import Store
from proxy.request.dry_run import is_dry_run
from proxy.request.request_info import RequestInfo
from proxy.server.context import APIContext
from storage import errors as serr
from storage.interfaces import GetOptions, JSONObject

__all__ = ["SCALE", "ScalePaths", "from_object", "handle_scale"]


SCALE = ResourceInfo(
    group="autoscaling", version="v1", kind="Scale", plural="scale", namespaced=True, verbs=()
)
_META_KEYS = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


@dataclass(frozen=True)
class ScalePaths:
    """Where a custom resource keeps its scale (a CRD version's ``subresources.scale``:
    ``specReplicasPath``, ``statusReplicasPath``, ``labelSelectorPath``), with readers
    and a writer of those paths (``proxy.apiextensions``)."""

    read: Callable[[JSONObject], tuple[Any, Any, Any]]  # (spec, status replicas, selector)
    write_replicas: Callable[[JSONObject, int], None]


def from_object(obj: JSONObject, paths: ScalePaths | None = None) -> JSONObject:
    """The autoscaling/v1 Scale of a scalable object."""
    if paths is not None:
        return _custom_scale(obj, paths)
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    replicas = spec.get("replicas")
    scale: JSONObject = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in _META_KEYS if k in meta},
        "spec": {"replicas": replicas} if replicas else {},
        "status": {"replicas": int((obj.get("status") or {}).get("replicas") or 0)},
    }
    raw_selector = spec.get("selector")
    if obj.get("kind") == "ReplicationController" and isinstance(raw_selector, dict):
        # a ReplicationController's selector is a plain label map (SelectorFromSet)
        selector = ",".join(f"{k}={v}" for k, v in sorted(raw_selector.items()))
    else:
        selector = format_label_selector(raw_selector)
    if selector:
        scale["status"]["selector"] = selector
    return scale


def _custom_scale(obj: JSONObject, paths: ScalePaths) -> JSONObject:
    meta = obj.get("metadata") or {}
    spec_replicas, status_replicas, selector = paths.read(obj)
    scale: JSONObject = {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {k: meta[k] for k in _META_KEYS if k in meta},
        "spec": {"replicas": spec_replicas} if spec_replicas else {},
        "status": {"replicas": status_replicas if isinstance(status_replicas, int) else 0},
    }
    if isinstance(selector, str) and selector:
        scale["status"]["selector"] = selector
    return scale


def _replicas(scale: JSONObject, name: str) -> int:
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        err = FieldError.invalid("spec.replicas", replicas, "must be an integer")
        raise apierrors.invalid(SCALE.group_kind, name, [err])
    if replicas < 0:
        err = FieldError.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
        raise apierrors.invalid(SCALE.group_kind, name, [err])
    return replicas


def _scaled(
    current: JSONObject,
    scale: JSONObject,
    store: Store,
    info: RequestInfo,
    paths: ScalePaths | None,
) -> JSONObject:
    """``current`` with the Scale's replica count (a Conflict for a stale RV)."""
    raw_meta = scale.get("metadata")
    meta: JSONObject = raw_meta if isinstance(raw_meta, dict) else {}
    if meta.get("name", info.name) != info.name:
        raise apierrors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the "
            f"URL ({info.name})"
        )
    rv = str(meta.get("resourceVersion") or "")
    if rv and rv != str((current.get("metadata") or {}).get("resourceVersion")):
        raise serr.Conflict(store.object_key(info.namespace, info.name))
    updated = copy.deepcopy(current)
    if paths is not None:
        paths.write_replicas(updated, _replicas(scale, info.name))
    else:
        updated.setdefault("spec", {})["replicas"] = _replicas(scale, info.name)
    updated = object_meta.prepare_for_update(updated, current, store.resource, "")
    validation.validate_update(updated, current, store.resource)  # the scaled kind's rules
    return updated


async def _write(
    request: web.Request,
    ctx: APIContext,
    info: RequestInfo,
    store: Store,
    options_kind: str,
    body: bytes,
    paths: ScalePaths | None,
) -> web.Response:
    dry_run = is_dry_run(request.query, options_kind)
    media_type = negotiation.media_type_of(request, default="")
    key = store.object_key(info.namespace, info.name)

    applying = media_type == managed.APPLY_PATCH
    config = (
        await decoding.off_loop(body, media_type, managed.decode_apply_body, body)
        if applying
        else {}
    )

    async def try_update(current: JSONObject) -> JSONObject:
        if not current:
            raise serr.NotFound(key)
        entries: object = None
        if applying:  # the Scale's replicas applied as the object's spec.replicas
            parent = managed.scale_config(config, current)
            applied = managed.apply(request, store.resource, "scale", current, parent)
            replicas = (applied.get("spec") or {}).get("replicas")
            scale: JSONObject = {"metadata": {}, "spec": {"replicas": replicas}}
            entries = managed.sent_managed_fields(applied)
        elif info.verb == "patch":
            scale = await decoding.off_loop(
                body, media_type, patch.apply_patch, media_type, from_object(current, paths),
                body, SCALE,
            )  # fmt: skip
        else:
            scale = await decoding.decoded_object(body, media_type or negotiation.JSON_TYPE, SCALE)
        # admission sees the Scale (kind autoscaling/v1 Scale, subresource "scale")
        attrs = admission.attributes(
            request, store.resource, UPDATE, info.namespace, info.name, obj=scale,
            old=from_object(current, paths), subresource="scale", dry_run=dry_run,
            options_kind=options_kind)  # fmt: skip
        attrs.kind_override = (SCALE.group, SCALE.version, SCALE.kind)
        await admission.admit(ctx, attrs)
        updated = _scaled(current, attrs.object or scale, store, info, paths)
        if applying:
            updated = managed.set_managed_fields(updated, entries)
        else:
            updated = managed.record_update(
                request, store.resource, "scale", current, updated, None
            )
        attrs.object = from_object(updated, paths)
        await admission.validate(ctx, attrs)
        return updated

    stored = await store.update(info.namespace, info.name, try_update, dry_run=dry_run)
    return responsewriters.json_response(from_object(stored.obj, paths))


async def handle_scale(
    request: web.Request,
    ctx: APIContext,
    info: RequestInfo,
    store: Store,
    paths: ScalePaths | None = None,
) -> web.StreamResponse:
    """GET, PUT or PATCH of ``<resource>/<name>/scale`` (``paths``: a custom resource's)."""
    if info.verb == "get":
        opts = GetOptions(resource_version=request.query.get("resourceVersion", ""))
        stored = await store.get(info.namespace, info.name, opts)
        return responsewriters.json_response(from_object(stored.obj, paths))
    if info.verb == "patch":
        patch_type = negotiation.media_type_of(request, default="")
        patch.check_patch_type(patch_type)
        managed.check_patch_options(request.query, patch_type)
    options_kind = "PatchOptions" if info.verb == "patch" else "UpdateOptions"
    body = await decoding.read_body(request, ctx.settings.max_request_body_bytes)
    return await _write(request, ctx, info, store, options_kind, body, paths)
