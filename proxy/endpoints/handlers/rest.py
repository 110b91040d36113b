"""The resource handlers: one entry point (``handle_resource``) that resolves the
request to a served resource and dispatches by verb, and the single-object verbs
(get, create, update, patch, delete). Collections (list, watch, deletecollection)
are in ``proxy.endpoints.handlers.collection``.

Every storage call sits inside ``storage_errors(resource, name)``, the one place a
storage error meets the resource and name its Status message needs.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from aiohttp import web

from proxy import apierrors
from proxy.admission import namespace_lifecycle
from proxy.endpoints import negotiation
from proxy.endpoints.handlers import collection
from proxy.endpoints.handlers.delete_options import parse_delete_options
from proxy.endpoints.media_types import AcceptedFormat
from proxy.endpoints.request_info import RequestInfo, parse_request_info
from proxy.patch import patcher as patch
from proxy.registry import object_meta, scale, validation
from proxy.registry.dry_run import DryRunStore, is_dry_run
from proxy.registry.field_validation import Mode
from proxy.registry.resources import ResourceInfo
from proxy.registry.storage_factory import ResourceStorage
from proxy.server.context import API_CONTEXT, APIContext
from storage import errors as serr
from storage.interfaces import GetOptions, Interface, JSONObject

__all__ = ["handle_resource", "storage_errors"]

JSON = dict[str, Any]

Writer = Interface | DryRunStore

_NOT_FOUND_MESSAGE = "the server could not find the requested resource"


def path_not_found() -> apierrors.StatusError:
    """go-restful's 404 for a path no route serves."""
    return apierrors.StatusError(apierrors.status_body(404, "NotFound", _NOT_FOUND_MESSAGE, {}))


def storage_errors(
    resource: ResourceInfo, name: str = ""
) -> contextlib.AbstractContextManager[None]:
    """Turn storage errors raised inside into the resource's Status errors."""
    return apierrors.storage_errors(resource.qualified, name)


def _resolve(ctx: APIContext, info: RequestInfo) -> ResourceInfo:
    resource = ctx.registry.get(info.group, info.version, info.resource)
    if resource is None:
        raise path_not_found()
    if info.subresource and info.subresource not in resource.subresources:
        raise path_not_found()
    if len(info.parts) > 3:
        raise path_not_found()
    if not resource.namespaced and info.namespace and info.resource != "namespaces":
        raise path_not_found()
    if resource.namespaced and not info.namespace and info.verb not in ("list", "watch"):
        raise path_not_found()  # only list/watch exist across all namespaces
    if info.subresource and info.verb not in ("get", "update", "patch"):
        raise apierrors.method_not_supported(f"{resource.qualified}/{info.subresource}", info.verb)
    if not resource.allows(info.verb):
        raise apierrors.method_not_supported(resource.qualified, info.verb)
    return resource


async def handle_resource(request: web.Request) -> web.StreamResponse:
    """Serve one /api or /apis resource request."""
    ctx = request.app[API_CONTEXT]
    info = parse_request_info(request.method, request.path, request.query)
    if not info.is_resource_request:
        raise path_not_found()
    resource = _resolve(ctx, info)
    rs = ctx.storages.for_resource(resource)
    if info.subresource == "scale":
        return await scale.handle_scale(request, ctx, info, rs)
    handler = _HANDLERS[info.verb]
    return await handler(request, ctx, info, rs)


def _namespace(info: RequestInfo, resource: ResourceInfo) -> str:
    return info.namespace if resource.namespaced else ""


def _response_type(request: web.Request) -> AcceptedFormat:
    return negotiation.response_format(request)


async def get_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, rs: ResourceStorage
) -> web.StreamResponse:
    media = _response_type(request)
    opts = GetOptions(resource_version=request.query.get("resourceVersion", ""))
    key = rs.object_key(_namespace(info, rs.resource), info.name)
    with storage_errors(rs.resource, info.name):
        stored = await rs.store.get(key, opts)
    return negotiation.object_response(request, rs.resource, stored.data, fmt=media)


def _writer(request: web.Request, rs: ResourceStorage, options_kind: str) -> Writer:
    """The storage writes go to: the resource's, or a dry-run view for ``?dryRun=All``."""
    return DryRunStore(rs.store) if is_dry_run(request.query, options_kind) else rs.store


async def ensure_namespace(ctx: APIContext, namespace: str) -> None:
    """404 ``namespaces "x" not found`` unless the namespace exists (quorum read), as
    kube-apiserver's NamespaceLifecycle admission does for namespaced creates."""
    ns_resource = ctx.registry.lookup("", "namespaces")
    if ns_resource is None:
        return
    ns_storage = ctx.storages.for_resource(ns_resource)
    with storage_errors(ns_resource, namespace):
        await ns_storage.store.get(ns_storage.object_key("", namespace), GetOptions())


async def create_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, rs: ResourceStorage
) -> web.StreamResponse:
    resource = rs.resource
    if info.name:  # POST on a named path creates a subresource; none is served
        raise apierrors.method_not_supported(resource.qualified, "create")
    media, writer, obj, warnings = await _write_request(request, ctx, rs, "CreateOptions")
    namespace = _namespace(info, resource)
    object_meta.prepare_for_create(obj, resource, namespace)
    if resource.namespaced:
        await ensure_namespace(ctx, namespace)
    name = str(obj["metadata"]["name"])
    with storage_errors(resource, name):
        stored = await writer.create(rs.object_key(namespace, name), obj)
    return negotiation.object_response(
        request, resource, stored.data, 201, fmt=media, warnings=warnings
    )


async def _write_request(
    request: web.Request, ctx: APIContext, rs: ResourceStorage, options_kind: str
) -> tuple[AcceptedFormat, Writer, JSONObject, list[str]]:
    """What a create or update starts with: the response format, where writes go (a
    dry-run view for ``?dryRun=All``), and the decoded, field-validated body with its
    Warning headers. Options are checked (406/422) before the body is read."""
    media = _response_type(request)
    mode = validation.field_mode(request.query, options_kind)
    writer = _writer(request, rs, options_kind)
    body = await negotiation.read_body(request, ctx.settings.max_request_body_bytes)
    obj, warnings = _decode_validated(request, body, rs.resource, mode)
    return media, writer, obj, warnings


def _decode_validated(
    request: web.Request, body: bytes, resource: ResourceInfo, mode: Mode
) -> tuple[JSONObject, list[str]]:
    """The decoded, field-validated body of a create or update: (object, Warning headers)."""
    media_type = negotiation.media_type_of(request)
    obj = negotiation.decode_object(body, media_type, resource)
    raw = body if media_type == negotiation.JSON_TYPE else None
    return validation.validate_written(obj, raw, resource, mode)


def _current_rv(current: JSONObject) -> str:
    return str((current.get("metadata") or {}).get("resourceVersion") or "")


class _Outcome:
    """What the update function decided, read after the optimistic loop."""

    created = False


async def update_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, rs: ResourceStorage
) -> web.StreamResponse:
    resource = rs.resource
    media, writer, new, warnings = await _write_request(request, ctx, rs, "UpdateOptions")
    namespace = _namespace(info, resource)
    object_meta.check_name_matches_url(new, info.name, namespace, resource)
    if resource.namespaced:
        new["metadata"]["namespace"] = namespace
    expected_rv = str(new["metadata"].get("resourceVersion") or "")
    key = rs.object_key(namespace, info.name)
    outcome = _Outcome()

    async def try_update(current: JSONObject) -> JSONObject:
        if not current:  # absent and the resource allows create-on-update
            if info.subresource:
                raise serr.NotFound(key)
            fresh = copy.deepcopy(new)
            fresh["metadata"].pop("resourceVersion", None)
            object_meta.prepare_for_create(fresh, resource, namespace)
            outcome.created = True
            return fresh
        outcome.created = False
        if expected_rv and expected_rv != _current_rv(current):
            raise serr.Conflict(key)
        return _unchanged_or(
            current,
            object_meta.prepare_for_update(copy.deepcopy(new), current, resource, info.subresource),
        )

    if resource.create_on_update and not info.subresource and resource.namespaced:
        await ensure_namespace(ctx, namespace)
    with storage_errors(resource, info.name):
        stored = await writer.guaranteed_update(
            key,
            None,
            try_update,
            ignore_not_found=resource.create_on_update and not info.subresource,
        )
    return negotiation.object_response(
        request, resource, stored.data, 201 if outcome.created else 200, fmt=media,
        warnings=warnings,
    )  # fmt: skip


def _without_rv(obj: JSONObject) -> JSONObject:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def _unchanged_or(current: JSONObject, updated: JSONObject) -> JSONObject:
    """``current`` itself when ``updated`` is the same object: a no-op writes nothing."""
    return current if _without_rv(current) == _without_rv(updated) else updated


async def patch_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, rs: ResourceStorage
) -> web.StreamResponse:
    resource = rs.resource
    media = _response_type(request)
    patch_type = negotiation.media_type_of(request, default="")
    patch.check_patch_type(patch_type)
    mode = validation.field_mode(request.query, "PatchOptions")
    writer = _writer(request, rs, "PatchOptions")
    body = await negotiation.read_body(request, ctx.settings.max_request_body_bytes)
    warnings: list[str] = []
    namespace = _namespace(info, resource)
    key = rs.object_key(namespace, info.name)

    async def try_update(current: JSONObject) -> JSONObject:
        if not current:
            raise serr.NotFound(key)
        patched = patch.apply_patch(patch_type, copy.deepcopy(current), body, resource)
        if not isinstance(patched.get("metadata"), dict):
            patched["metadata"] = {}
        negotiation.check_kind(patched, resource)
        object_meta.check_name_matches_url(patched, info.name, namespace, resource)
        rv = str(patched["metadata"].get("resourceVersion") or "")
        if rv and rv != _current_rv(current):
            raise serr.Conflict(key)
        patched, found = validation.validate_patched(
            patched, patch.decoded_patch(body), resource, mode
        )
        warnings[:] = found
        return _unchanged_or(
            current, object_meta.prepare_for_update(patched, current, resource, info.subresource)
        )

    with storage_errors(resource, info.name):
        stored = await writer.guaranteed_update(key, None, try_update)
    return negotiation.object_response(
        request, rs.resource, stored.data, fmt=media, warnings=warnings
    )


async def delete_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, rs: ResourceStorage
) -> web.StreamResponse:
    """DELETE: the object as it was, with the deletion revision as its resourceVersion.
    DeleteOptions come from the body (as kubectl sends them) or the query."""
    media = _response_type(request)
    body = await negotiation.read_body(request, ctx.settings.max_request_body_bytes)
    opts = parse_delete_options(request.query, body, negotiation.media_type_of(request))
    writer: Writer = DryRunStore(rs.store) if opts.dry_run else rs.store
    key = rs.object_key(_namespace(info, rs.resource), info.name)
    if namespace_lifecycle.is_namespaces(rs.resource):
        namespace_lifecycle.check_deletable(info.name)
        with storage_errors(rs.resource, info.name):  # 404 before its contents go
            await rs.store.get(key, GetOptions())
        if not opts.dry_run:
            await namespace_lifecycle.delete_contents(ctx, info.name)
    with storage_errors(rs.resource, info.name):
        stored = await writer.delete(key, opts.preconditions)
    return negotiation.object_response(request, rs.resource, stored.data, fmt=media)


_HANDLERS = {
    "get": get_object,
    "create": create_object,
    "update": update_object,
    "patch": patch_object,
    "delete": delete_object,
    "list": collection.list_objects,
    "watch": collection.watch_objects,
    "deletecollection": collection.delete_collection,
}
