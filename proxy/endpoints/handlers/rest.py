"""The resource handlers: one entry point (``handle_resource``) that resolves the
request (its RequestInfo, computed once by the request-info filter) to a served
resource and dispatches by verb, and the single-object verbs (get, create, update,
patch, delete). Collections (list, watch, deletecollection) are in
``proxy.endpoints.handlers.collection``.

Handlers reach storage only through the resource's generic store
(``proxy.registry.store.Store``), which turns storage errors into Status errors.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from aiohttp import web

from proxy import apierrors
from proxy.admission import handler as admission
from proxy.admission.attributes import CREATE, DELETE, UPDATE, add_audit_annotation
from proxy.apiextensions.handler import custom_version, handle_custom
from proxy.endpoints import decoding, negotiation, responsewriters, restful_route
from proxy.endpoints.handlers import collection, componentstatus
from proxy.endpoints.handlers.delete_options import parse_delete_options
from proxy.endpoints.media_types import AcceptedFormat
from proxy.fieldmanager import wiring as managed
from proxy.kube.admission import namespace_lifecycle
from proxy.patch import patcher as patch
from proxy.registry import before_delete, deletion, object_meta, pods, scale, validation
from proxy.registry.resources import ResourceInfo
from proxy.registry.store import Store
from proxy.registry.validation import Mode
from proxy.request.dry_run import is_dry_run
from proxy.request.request_info import RequestInfo, request_info_of
from proxy.server.context import API_CONTEXT, APIContext
from storage import errors as serr
from storage.interfaces import GetOptions, JSONObject

__all__ = ["handle_resource"]

path_not_found = apierrors.path_not_found


def _resolve(ctx: APIContext, info: RequestInfo) -> ResourceInfo:
    """The resource a request addresses: 404 where no route serves the path (plain text
    outside the served API groups, ``proxy.server.http_errors``), 405 where a route serves
    the path but not this method, as go-restful answers."""
    resource = ctx.registry.get(info.group, info.version, info.resource)
    if resource is None:
        raise web.HTTPNotFound()
    if info.subresource and info.subresource not in resource.subresources:
        raise path_not_found()
    if len(info.parts) > 3:
        raise path_not_found()
    if not resource.namespaced and info.namespace and info.resource != "namespaces":
        raise path_not_found()
    if resource.namespaced and not info.namespace and info.verb not in ("list", "watch"):
        # only list/watch exist across all namespaces; the collection path has a GET
        raise path_not_found() if info.name else apierrors.method_not_allowed()
    if info.subresource == "binding" and info.verb == "create":
        return resource  # POST pods/NAME/binding (proxy.registry.pods)
    if info.subresource and info.verb not in ("get", "update", "patch"):
        raise apierrors.method_not_allowed()
    if (info.verb == "create" and info.name) or (info.verb in _NAMED and not info.name):
        raise apierrors.method_not_allowed()  # POST to an object, PUT/PATCH to a collection
    if not resource.allows(info.verb):
        raise apierrors.method_not_allowed()
    return resource


# verbs only an object path serves
_NAMED = frozenset({"update", "patch"})


async def handle_resource(request: web.Request) -> web.StreamResponse:
    """Serve one /api or /apis resource request."""
    ctx = request.app[API_CONTEXT]
    info = request_info_of(request)
    if not info.is_resource_request or info.verb == "proxy":
        raise path_not_found()  # (the deprecated /proxy/ prefix has no routes upstream)
    resource = _resolve(ctx, info)
    if request.method == "HEAD":  # go-restful routes no HEAD: nor a body on a HEAD answer
        raise apierrors.method_not_allowed()
    if info.verb_via_path and request.method != "GET":
        # upstream's request info calls any method on a /watch/ path "watch"; its routes
        # there are GET only
        raise apierrors.method_not_allowed()
    restful_route.check(request.method, info.verb, request.headers)  # 415/406 of go-restful
    if not resource.has_storage:  # the legacy virtual resources of /api/v1
        return await _handle_virtual(request, ctx, info)
    store = ctx.store(resource)
    custom = custom_version(ctx, resource)
    if custom is not None:  # a custom resource's own checks and subresources
        answered = await handle_custom(request, ctx, info, store, custom)
        if answered is not None:
            return answered
    if info.subresource == "scale":
        return await scale.handle_scale(request, ctx, info, store)
    if info.subresource == "binding":
        return await pods.handle_binding(request, ctx, info, store)
    handler = _HANDLERS[info.verb]
    return await handler(request, ctx, info, store)


async def _handle_virtual(
    request: web.Request, ctx: APIContext, info: RequestInfo
) -> web.StreamResponse:
    """``bindings`` (a pod bound by the Binding's name) and ``componentstatuses``."""
    if info.resource == "bindings":
        pods_resource = ctx.registry.get("", "v1", "pods")
        assert pods_resource is not None
        return await pods.handle_binding(request, ctx, info, ctx.store(pods_resource))
    return await componentstatus.handle_component_statuses(request, ctx, info)


def _namespace(info: RequestInfo, resource: ResourceInfo) -> str:
    return info.namespace if resource.namespaced else ""


def _response_type(request: web.Request, resource: ResourceInfo) -> AcceptedFormat:
    return negotiation.response_format(request, resource=resource)


async def get_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, store: Store
) -> web.StreamResponse:
    media = _response_type(request, store.resource)
    opts = GetOptions(resource_version=request.query.get("resourceVersion", ""))
    stored = await store.get(_namespace(info, store.resource), info.name, opts)
    return responsewriters.object_response(
        request, store.resource, stored.data, fmt=media, stored=stored
    )


async def ensure_namespace(
    ctx: APIContext, namespace: str, resource: ResourceInfo | None = None, name: str = ""
) -> None:
    """404 ``namespaces "x" not found`` unless the namespace exists (quorum read), and
    403 when it is being terminated, as kube-apiserver's NamespaceLifecycle admission
    does for namespaced creates."""
    ns_resource = ctx.registry.lookup("", "namespaces")
    if ns_resource is None:
        return
    ns = await ctx.store(ns_resource).get("", namespace)
    if resource is not None:
        namespace_lifecycle.check_not_terminating(ns.obj, resource, name)


async def create_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, store: Store
) -> web.StreamResponse:
    resource = store.resource
    media, dry_run, obj, warnings = await _write_request(request, ctx, store, "CreateOptions")
    namespace = _namespace(info, resource)
    object_meta.ensure_namespace(obj, resource, namespace)
    name = str(obj["metadata"].get("name") or "")  # ("" with generateName, as upstream)
    obj = await _admitted_create(request, ctx, resource, namespace, name, obj, dry_run)
    name = str(obj["metadata"]["name"])
    _admit_rbac_write(request, ctx, resource, namespace, name, obj)
    managed.record_update(request, resource, "", None, obj, managed.sent_managed_fields(obj))
    stored = await store.create(namespace, name, obj, dry_run=dry_run)
    return responsewriters.object_response(
        request, resource, stored.data, 201, fmt=media, warnings=warnings, stored=stored
    )


async def _admitted_create(
    request: web.Request,
    ctx: APIContext,
    resource: ResourceInfo,
    namespace: str,
    name: str,
    obj: JSONObject,
    dry_run: bool,
) -> JSONObject:
    """A create through admission, wherever it happens (POST, create-on-update,
    create-on-apply): mutating admission, then the strategy's preparation and
    validation, then validating admission, which sees the generated name. Admission
    takes CreateOptions, as upstream's handlers turn update and patch options into."""
    attrs = admission.attributes(request, resource, CREATE, namespace, name, obj=obj,
                                 dry_run=dry_run, options_kind="CreateOptions")
    await admission.admit(ctx, attrs)
    obj = object_meta.prepare_for_create(attrs.object or obj, resource, namespace)
    validation.validate_create(obj, resource)
    attrs.object, attrs.name = obj, str(obj["metadata"]["name"])
    await admission.validate(ctx, attrs)
    return obj


async def _write_request(
    request: web.Request, ctx: APIContext, store: Store, options_kind: str
) -> tuple[AcceptedFormat, bool, JSONObject, list[str]]:
    """What a create or update starts with: the response format, whether it is a dry
    run (``?dryRun=All``), and the decoded, field-validated body with its Warning
    headers. Options are checked (406/422) before the body is read."""
    media = _response_type(request, store.resource)
    negotiation.check_body_type(negotiation.body_media_type(request))  # 415, then 413,
    body = await decoding.read_body(request, ctx.settings.max_request_body_bytes)
    mode = validation.field_mode(request.query, options_kind)  # then the options (upstream)
    dry_run = is_dry_run(request.query, options_kind)
    media_type = negotiation.body_media_type(request)
    obj, warnings = await decoding.off_loop(
        body, media_type, _decode_validated, body, media_type, store.resource, mode
    )  # a large body: decoded and field-validated beside the loop
    return media, dry_run, ctx.default(store.resource, obj), warnings


def _decode_validated(
    body: bytes, media_type: str, resource: ResourceInfo, mode: Mode
) -> tuple[JSONObject, list[str]]:
    """The decoded, field-validated body of a create or update: (object, Warning headers)."""
    decode_warnings: list[str] = []
    obj = decoding.decode_object(body, media_type, resource, decode_warnings)
    raw = body if media_type == negotiation.JSON_TYPE else None
    obj, warnings = validation.validate_written(obj, raw, resource, mode)
    return obj, decode_warnings + warnings


def _admit_rbac_write(
    request: web.Request,
    ctx: APIContext,
    resource: ResourceInfo,
    namespace: str,
    name: str,
    obj: JSONObject,
) -> None:
    """RBAC escalation prevention, where authorization is on (the secure port)."""
    if ctx.auth is not None:
        ctx.auth.admit_rbac_write(request, resource.group, resource.plural, namespace, name, obj)


def _current_rv(current: JSONObject) -> str:
    return str((current.get("metadata") or {}).get("resourceVersion") or "")


class _Outcome:
    """What the update function decided, read after the optimistic loop."""

    created = False


async def update_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, store: Store
) -> web.StreamResponse:
    resource = store.resource
    media, dry_run, new, warnings = await _write_request(request, ctx, store, "UpdateOptions")
    namespace = _namespace(info, resource)
    object_meta.check_name_matches_url(new, info.name, namespace, resource)
    if resource.namespaced:
        new["metadata"]["namespace"] = namespace
    expected_rv = str(new["metadata"].get("resourceVersion") or "")
    key = store.object_key(namespace, info.name)
    outcome = _Outcome()
    _admit_rbac_write(request, ctx, resource, namespace, info.name, new)
    sent = managed.sent_managed_fields(new)

    async def try_update(current: JSONObject) -> JSONObject:
        if not current:  # absent and the resource allows create-on-update
            if info.subresource:
                raise serr.NotFound(key)
            fresh = copy.deepcopy(new)
            fresh["metadata"].pop("resourceVersion", None)
            object_meta.ensure_namespace(fresh, resource, namespace)
            fresh = await _admitted_create(
                request, ctx, resource, namespace, info.name, fresh, dry_run
            )
            outcome.created = True
            return managed.record_update(request, resource, "", None, fresh, sent)
        outcome.created = False
        if expected_rv and expected_rv != _current_rv(current):
            raise serr.Conflict(key)
        return await _admitted_update(
            request, ctx, info, resource, copy.deepcopy(new), current, dry_run, "UpdateOptions",
            lambda updated: managed.record_update(
                request, resource, info.subresource, current, updated, sent
            ),
        )

    if resource.create_on_update and not info.subresource and resource.namespaced:
        await ensure_namespace(ctx, namespace)
    stored = await store.update(
        namespace,
        info.name,
        try_update,
        ignore_not_found=resource.create_on_update and not info.subresource,
        dry_run=dry_run,
    )
    return responsewriters.object_response(
        request, resource, stored.data, 201 if outcome.created else 200, fmt=media,
        warnings=warnings, stored=stored,
    )  # fmt: skip


async def _admitted_update(
    request: web.Request,
    ctx: APIContext,
    info: RequestInfo,
    resource: ResourceInfo,
    new: JSONObject,
    current: JSONObject,
    dry_run: bool,
    options_kind: str,
    track: Callable[[JSONObject], JSONObject],
) -> JSONObject:
    """An update (or patch) through admission: mutating, then the strategy's preparation
    and validation, then validating (inside the retry loop, as upstream). ``track``
    records the write's managedFields on the prepared object, before validating
    admission sees it."""
    attrs = admission.attributes(
        request, resource, UPDATE, _namespace(info, resource), info.name, obj=new,
        old=current, subresource=info.subresource, dry_run=dry_run, options_kind=options_kind,
    )  # fmt: skip
    await admission.admit(ctx, attrs)
    updated = object_meta.prepare_for_update(
        attrs.object or new, current, resource, info.subresource
    )
    validation.validate_update(updated, current, resource, info.subresource)
    attrs.object = updated = track(updated)
    await admission.validate(ctx, attrs)
    return _unchanged_or(current, updated)


def _without_rv(obj: JSONObject) -> JSONObject:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def _unchanged_or(current: JSONObject, updated: JSONObject) -> JSONObject:
    """``current`` itself when ``updated`` is the same object (managedFields times
    aside, as upstream's IgnoreManagedFieldsTimestampsTransformer): a no-op writes nothing."""
    managed.keep_times_of_noop(current, updated)
    return current if _without_rv(current) == _without_rv(updated) else updated


async def patch_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, store: Store
) -> web.StreamResponse:
    resource = store.resource
    media = _response_type(request, resource)
    patch_type = negotiation.media_type_of(request, default="")
    patch.check_patch_type(patch_type)
    managed.check_patch_options(request.query, patch_type)
    mode = validation.field_mode(request.query, "PatchOptions")
    dry_run = is_dry_run(request.query, "PatchOptions")
    body = await decoding.read_body(request, ctx.settings.max_request_body_bytes)
    warnings: list[str] = []
    namespace = _namespace(info, resource)
    key = store.object_key(namespace, info.name)
    applying = patch_type == managed.APPLY_PATCH
    config = (
        await decoding.off_loop(body, patch_type, managed.decode_apply_body, body)
        if applying
        else {}
    )
    outcome = _Outcome()

    async def try_update(current: JSONObject) -> JSONObject:
        if not current and not applying:
            raise serr.NotFound(key)
        if applying:  # server-side apply (create-on-apply when absent)
            patched = managed.apply(request, resource, info.subresource, current or None, config)
            if not current:
                warnings[:] = managed.strict_decoding(body, mode)
                return await _applied_create(
                    request, ctx, patched, resource, namespace, info, outcome, dry_run,
                    lambda obj: _checked_apply_create(
                        request, ctx, resource, obj, config, mode, warnings),
                )  # fmt: skip
        else:
            patched = await decoding.off_loop(
                body, patch_type, patch.apply_patch,
                patch_type, copy.deepcopy(current), body, resource, mode,
            )  # fmt: skip
        if not isinstance(patched.get("metadata"), dict):
            patched["metadata"] = {}
        decoding.check_kind(patched, resource)
        object_meta.check_name_matches_url(patched, info.name, namespace, resource)
        rv = str(patched["metadata"].get("resourceVersion") or "")
        if rv and rv != _current_rv(current):
            raise serr.Conflict(key)
        sent = managed.sent_managed_fields(patched)
        patched, found = await decoding.off_loop(
            body, patch_type, _validate_patched, patched, config if applying else None, body,
            resource, mode,
        )  # fmt: skip
        ctx.default(resource, patched)  # the patch result, decoded as kube's patcher does
        warnings[:] = found + (managed.strict_decoding(body, mode) if applying else [])
        _admit_rbac_write(request, ctx, resource, namespace, info.name, patched)
        applied_fields = managed.sent_managed_fields(patched) if applying else None

        def track(updated: JSONObject) -> JSONObject:
            if applying:
                return managed.set_managed_fields(updated, applied_fields)
            return managed.record_update(
                request, resource, info.subresource, current, updated, sent
            )

        return await _admitted_update(
            request, ctx, info, resource, patched, current, dry_run, "PatchOptions", track
        )

    if applying and resource.namespaced and not info.subresource:
        await ensure_namespace(ctx, namespace)
    stored = await store.update(
        namespace, info.name, try_update, ignore_not_found=applying and not info.subresource,
        dry_run=dry_run,
    )  # fmt: skip
    return responsewriters.object_response(
        request, resource, stored.data, 201 if outcome.created else 200, fmt=media,
        warnings=warnings, stored=stored,
    )  # fmt: skip


def _validate_patched(
    patched: JSONObject, config: JSONObject | None, body: bytes, resource: ResourceInfo,
    mode: Mode,
) -> tuple[JSONObject, list[str]]:
    """The patched object field-validated against what was sent (the applied
    configuration, else the decoded patch)."""
    sent = config if config is not None else patch.decoded_patch(body)
    return validation.validate_patched(patched, sent, resource, mode)


async def _applied_create(
    request: web.Request,
    ctx: APIContext,
    obj: JSONObject,
    resource: ResourceInfo,
    namespace: str,
    info: RequestInfo,
    outcome: _Outcome,
    dry_run: bool,
    checked: Callable[[JSONObject], JSONObject],
) -> JSONObject:
    """The object a create-on-apply stores (201): admitted and validated as a create
    (upstream's patcher turns the PatchOptions into CreateOptions for admission);
    ``checked`` is what a create's body gets first (schema, RBAC escalation)."""
    if info.subresource:
        raise serr.NotFound(info.name)
    applied_fields = managed.sent_managed_fields(obj)
    decoding.check_kind(obj, resource)
    object_meta.check_name_matches_url(obj, info.name, namespace, resource)
    object_meta.ensure_namespace(obj, resource, namespace)
    obj = checked(obj)
    obj = await _admitted_create(request, ctx, resource, namespace, info.name, obj, dry_run)
    managed.set_managed_fields(obj, applied_fields)
    outcome.created = True
    return obj


def _checked_apply_create(
    request: web.Request,
    ctx: APIContext,
    resource: ResourceInfo,
    obj: JSONObject,
    config: JSONObject,
    mode: Mode,
    warnings: list[str],
) -> JSONObject:
    """A create-on-apply's object checked as the update path checks an applied one:
    the kind's schema (types, unknown fields; their warnings go first) and RBAC
    escalation prevention (a Role granting more than its creator holds is 403)."""
    checked, found = validation.validate_patched(obj, config, resource, mode)
    ctx.default(resource, checked)
    warnings[:0] = found
    meta = checked["metadata"]
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    _admit_rbac_write(request, ctx, resource, namespace, name, checked)
    return checked


async def delete_object(
    request: web.Request, ctx: APIContext, info: RequestInfo, store: Store
) -> web.StreamResponse:
    """DELETE: the object as it was, with the deletion revision as its resourceVersion.
    DeleteOptions come from the body (as kubectl sends them) or the query."""
    media = _response_type(request, store.resource)
    body = await decoding.read_body(request, ctx.settings.max_request_body_bytes)
    media_type = negotiation.body_media_type(request)
    opts = await decoding.off_loop(
        body, media_type, parse_delete_options, request.query, body, media_type,
        unsafe_delete_gate=ctx.storage_ctx.allow_unsafe_malformed_object_deletion,
    )  # fmt: skip
    namespace = _namespace(info, store.resource)
    await _admit_delete(
        request, ctx, info, store, namespace, opts.dry_run, bool(opts.ignore_store_read_error)
    )
    if opts.ignore_store_read_error:  # the unsafe delete of a corrupt value
        add_audit_annotation(request, "apiserver.k8s.io/unsafe-delete-ignore-read-error", "")
        await store.delete(namespace, info.name, dry_run=opts.dry_run, ignore_store_read_error=True)
        details = {"name": info.name, "kind": store.resource.kind}
        status = {**apierrors.success_status(details), "code": 200}
        pb = media.format == "protobuf"  # a Status, negotiated like the object would be
        return responsewriters.json_response(
            status, media_type=negotiation.PROTOBUF_TYPE if pb else negotiation.JSON_TYPE
        )
    if namespace_lifecycle.is_namespaces(store.resource):
        if ctx.admission is None:
            namespace_lifecycle.check_deletable(info.name)
        current = await store.get(namespace, info.name)  # 404 before its contents go
        before_delete.check_preconditions(store.resource, opts.preconditions, current.obj)
        if not opts.dry_run and not ctx.settings.lifecycle_controllers:
            # (with the lifecycle controllers the namespace controller empties it)
            await namespace_lifecycle.delete_contents(ctx, info.name)
    check = before_delete.validate_deletion(store.resource, opts.preconditions)
    stored, removed = await store.delete(
        namespace, info.name, None, validate_deletion=check, dry_run=opts.dry_run, options=opts
    )
    code = deletion.response_code(removed, opts)
    return responsewriters.object_response(
        request, store.resource, stored.data, code, fmt=media, stored=stored
    )


async def _admit_delete(
    request: web.Request, ctx: APIContext, info: RequestInfo, store: Store, namespace: str,
    dry_run: bool,
    unsafe: bool = False,
) -> None:
    """Admission of a DELETE: the mutating phase without objects, then the validating
    phase with the object being deleted as ``oldObject`` (read from etcd first; upstream
    runs it inside the delete's precondition check). The unsafe delete of a corrupt
    value has no object to show: validating admission runs without one, as upstream's
    corrupt-object deleter keeps admission but cannot decode the object."""
    if ctx.admission is None:
        return
    attrs = admission.attributes(request, store.resource, DELETE, namespace, info.name,
                                 dry_run=dry_run, options_kind="DeleteOptions")
    await admission.admit(ctx, attrs)
    if unsafe:
        await admission.validate(ctx, attrs)
        return
    try:
        attrs.old_object = (await store.get(namespace, info.name)).copy()
    except apierrors.StatusError as e:
        if e.code == 404:
            return  # the delete answers 404 itself
        raise
    await admission.validate(ctx, attrs)


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
