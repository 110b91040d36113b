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
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

from proxy import apierrors
from proxy.admission import handler as admission
from proxy.admission.attributes import add_audit_annotation
from proxy.endpoints import decoding, negotiation, responsewriters, restful_route
from proxy.endpoints.context import API_CONTEXT, APIContext
from proxy.endpoints.filters.authentication import is_secure
from proxy.endpoints.handlers import collection, computed, managed
from proxy.endpoints.handlers import patcher as patch
from proxy.endpoints.handlers.connect import connect_resource
from proxy.endpoints.handlers.delete_options import parse_delete_options
from proxy.endpoints.handlers.scope import RequestScope
from proxy.endpoints.media_types import AcceptedFormat
from proxy.registry import deletion, object_meta, validation
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import (
    Context,
    NamedCreater,
    ResetFields,
    Updater,
    is_connecter,
    is_deleter,
    is_getter,
    is_named_creater,
    is_updater,
)
from proxy.registry.store import Store
from proxy.registry.validation import Mode
from proxy.request.dry_run import is_dry_run
from proxy.request.request_info import RequestInfo, request_info_of
from proxy.request.user import request_user
from storage import errors as serr
from storage.interfaces import GetOptions, JSONObject

__all__ = ["handle_resource"]

path_not_found = apierrors.path_not_found


def _resolve(ctx: APIContext, info: RequestInfo) -> ResourceInfo:
    """The resource a request addresses: 404 where no route serves the path (plain text
    outside the served API groups, ``proxy.server.http_errors``)."""
    resource = ctx.registry.get(info.group, info.version, info.resource)
    if resource is None:
        raise web.HTTPNotFound()
    if info.subresource and info.subresource not in resource.subresources:
        raise path_not_found()
    if len(info.parts) > 3 and info.subresource != "proxy":
        raise path_not_found()
    if not resource.namespaced and info.namespace_prefix:
        raise path_not_found()  # a cluster-scoped resource has no namespaced route
    if resource.namespaced and not info.namespace and info.verb not in ("list", "watch"):
        # only list/watch exist across all namespaces; the collection path has a GET
        raise path_not_found() if info.name else apierrors.method_not_allowed()
    return resource


def _check_verb(info: RequestInfo, scope: RequestScope) -> None:
    """405 where a route serves the path but not this method, as go-restful answers: a
    subresource serves get, update and patch, or a create on the object's path where
    its storage is a named creater (``pods/NAME/binding``)."""
    if info.verb == "create" and is_named_creater(scope.storage):
        return
    if info.subresource and info.verb not in ("get", "update", "patch"):
        raise apierrors.method_not_allowed()
    if (info.verb == "create" and info.name) or (info.verb in _NAMED and not info.name):
        raise apierrors.method_not_allowed()  # POST to an object, PUT/PATCH to a collection
    if not scope.resource.allows(info.verb):
        raise apierrors.method_not_allowed()


# verbs only an object path serves
_NAMED = frozenset({"update", "patch"})


def _scope(ctx: APIContext, resource: ResourceInfo, subresource: str) -> RequestScope | None:
    """The route's scope: a delegate's (custom resources, kube's legacy bindings), else
    the built-in one, with the server's part; None for a resource without storage that
    no delegate serves (its objects are computed on each call)."""
    admission, body_limit = ctx.admission, ctx.settings.max_request_body_bytes
    unsafe_delete = ctx.storage_ctx.allow_unsafe_malformed_object_deletion
    for delegate in ctx.delegates:
        scope = delegate.scope(resource, subresource)
        if scope is not None:
            return dataclasses.replace(scope, admission=admission,
                                       max_request_body_bytes=body_limit,
                                       unsafe_delete_gate=unsafe_delete)  # fmt: skip
    if not resource.has_storage:
        return None
    store = ctx.store(resource, subresource)
    own = None
    if subresource:
        own = ctx.subresource_storages(resource, subresource, ctx.store(resource))
    # built with the server's part at once: a dataclasses.replace on every request cost
    # more than the rest of this function
    return RequestScope(resource, subresource, store, own if own is not None else store,
                        admission=admission, max_request_body_bytes=body_limit,
                        unsafe_delete_gate=unsafe_delete)  # fmt: skip


async def handle_resource(request: web.Request) -> web.StreamResponse:
    """Serve one /api or /apis resource request."""
    ctx = request.app[API_CONTEXT]
    info = request_info_of(request)
    if not info.is_resource_request or info.verb == "proxy":
        raise path_not_found()  # (the deprecated /proxy/ prefix has no routes upstream)
    resource = _resolve(ctx, info)
    scope = _scope(ctx, resource, info.subresource)
    if scope is not None and is_connecter(scope.storage):
        return await connect_resource(request, info, scope, scope.storage)
    if resource.has_storage and scope is not None:
        _check_verb(info, scope)
    elif not resource.allows(info.verb):  # a virtual resource's verbs are its own
        raise apierrors.method_not_allowed()
    if request.method == "HEAD":  # go-restful routes no HEAD: nor a body on a HEAD answer
        raise apierrors.method_not_allowed()
    if info.verb_via_path and request.method != "GET":
        # upstream's request info calls any method on a /watch/ path "watch"; its routes
        # there are GET only
        raise apierrors.method_not_allowed()
    restful_route.check(request.method, info.verb, request.headers)  # 415/406 of go-restful
    if scope is None:  # a resource whose objects are computed on each call
        return await computed.handle_computed(request, ctx, info, resource)
    if scope.check is not None:
        scope.check(request, info)
    return await _HANDLERS[info.verb](request, ctx, info, scope)


def _namespace(info: RequestInfo, resource: ResourceInfo) -> str:
    return info.namespace if resource.namespaced else ""


def _response_type(request: web.Request, resource: ResourceInfo) -> AcceptedFormat:
    return negotiation.response_format(request, resource=resource)


async def get_object(
    request: web.Request, info: RequestInfo, scope: RequestScope
) -> web.StreamResponse:
    storage = scope.storage
    if not is_getter(storage):
        raise apierrors.method_not_supported(scope.qualified, info.verb)
    media = _response_type(request, scope.kind)
    opts = GetOptions(resource_version=request.query.get("resourceVersion", ""))
    context = _rest_context(request, _namespace(info, scope.resource), False)
    stored = await storage.get_object(context, info.name, opts)
    return responsewriters.object_response(
        request, scope.kind, stored.data, fmt=media, stored=stored
    )


def _rest_context(request: web.Request, namespace: str, dry_run: bool) -> Context:
    """What the storage may know of ``request`` (never the request itself)."""
    return Context(
        namespace=namespace, user=request_user(request), dry_run=dry_run,
        authorized=is_secure(request),
        large=(request.content_length or 0) > decoding.LARGE_BODY,
    )  # fmt: skip


def _request_admission(
    request: web.Request,
    info: RequestInfo,
    scope: RequestScope,
    dry_run: bool,
    options_kind: str,
    name: str = "",
) -> admission.RequestAdmission:
    """The admission of this request, as the route's resource and subresource (a
    delegate's route may serve another path: legacy ``bindings`` is ``pods/binding``);
    ``name``: the object's, where the path has none."""
    chain = scope.admission
    kind = scope.kind
    return admission.RequestAdmission(
        request, chain, scope.resource, _namespace(info, scope.resource), info.name or name,
        scope.subresource, dry_run, options_kind,
        None if kind is scope.resource else (kind.group, kind.version, kind.kind),
    )  # fmt: skip


async def create_object(
    request: web.Request, info: RequestInfo, scope: RequestScope
) -> web.StreamResponse:
    if is_named_creater(scope.storage):
        return await _create_named(request, info, scope, scope.storage)
    resource, store = scope.resource, scope.resource_store(info.verb)
    media, dry_run, obj, warnings = await _write_request(request, scope, "CreateOptions")
    namespace = _namespace(info, resource)
    object_meta.ensure_namespace(obj, resource, namespace)
    adm = _request_admission(request, info, scope, dry_run, "CreateOptions")
    obj = await adm.admit_create(obj)
    stored = await store.create_object(
        _rest_context(request, namespace, dry_run), obj, adm.validate_create,
        managed=lambda created: managed.record_update(
            request, resource, "", scope.reset_fields, None, created,
            managed.sent_managed_fields(created),
        ),
    )  # fmt: skip
    return responsewriters.object_response(
        request, resource, stored.data, 201, fmt=media, warnings=warnings, stored=stored
    )


async def _create_named(
    request: web.Request,
    info: RequestInfo,
    scope: RequestScope,
    storage: NamedCreater,
) -> web.StreamResponse:
    """A create answered by a storage of its own (upstream's ``rest.NamedCreater`` and
    the storage-less ``rest.Creater``s: ``pods/binding``, ``serviceaccounts/token``, the
    review APIs): the body is the route's kind, admitted as a CREATE of the route (the
    mutating phase here, the validating one handed to the storage, which runs it as
    upstream's do); the answer is what the storage returns: a Status as it is, an
    object (a review, a TokenRequest) 201, as protobuf when the client prefers it."""
    if scope.store is None:
        # the output is negotiated first, as upstream's create handler: a resource
        # without storage (a review) has no Table convertor, so a Table is 406 (the
        # conformance spec "should return a 406 for a backend which does not implement
        # metadata")
        negotiation.response_format(request, resource=scope.kind, table=False)
    obj = await _named_body(request, scope)
    dry_run = is_dry_run(request.query, "CreateOptions")
    context = _rest_context(request, _namespace(info, scope.resource), dry_run)
    # the legacy ``bindings`` resource has no name in its path: the body's is the one
    name = info.name or str((obj.get("metadata") or {}).get("name") or "")
    adm = _request_admission(request, info, scope, dry_run, "CreateOptions", name)
    obj = await adm.admit_create(obj)
    answer = await storage.create_named(context, name, obj, adm.validate_create)
    if answer.get("kind") != "Status":
        return responsewriters.preferred_response(request, answer, 201)
    return responsewriters.json_response(answer, int(answer.get("code") or 201))


async def _named_body(request: web.Request, scope: RequestScope) -> JSONObject:
    """The body of a named create, decoded as the route's kind (a resource without
    storage: as that resource's objects)."""
    body = await decoding.read_body(request, scope.max_request_body_bytes)
    kind = scope.kind
    if scope.store is None:
        return await decoding.decoded_object(body, negotiation.media_type_of(request), kind)
    return await decoding.decoded_kind(
        body, negotiation.body_media_type(request), kind.api_version, kind.kind
    )


async def _write_request(
    request: web.Request, scope: RequestScope, options_kind: str
) -> tuple[AcceptedFormat, bool, JSONObject, list[str]]:
    """What a create or update starts with: the response format, whether it is a dry
    run (``?dryRun=All``), and the decoded, field-validated body (of the route's kind)
    with its Warning headers. Options are checked (406/422) before the body is read."""
    media = _response_type(request, scope.kind)
    negotiation.check_body_type(negotiation.body_media_type(request))  # 415, then 413,
    body = await decoding.read_body(request, scope.max_request_body_bytes)
    mode = validation.field_mode(request.query, options_kind)  # then the options (upstream)
    dry_run = is_dry_run(request.query, options_kind)
    media_type = negotiation.body_media_type(request)
    obj, warnings = await decoding.off_loop(
        body, media_type, _decode_validated, body, media_type, scope, mode
    )  # a large body: decoded and field-validated beside the loop
    return media, dry_run, scope.default(obj), warnings


def _decode_validated(
    body: bytes, media_type: str, scope: RequestScope, mode: Mode
) -> tuple[JSONObject, list[str]]:
    """The decoded, field-validated body of a create or update: (object, Warning headers)."""
    decode_warnings: list[str] = []
    obj = decoding.decode_object(body, media_type, scope.kind, decode_warnings)
    raw = body if media_type == negotiation.JSON_TYPE else None
    obj, warnings = validation.validate_written(
        obj, raw, scope.kind, mode, required=scope.schema_required, types=scope.schema_types
    )
    return obj, decode_warnings + warnings


def _validate_patched(
    patched: JSONObject,
    config: JSONObject | None,
    body: bytes,
    kind: ResourceInfo,
    mode: Mode,
    scope: RequestScope,
) -> tuple[JSONObject, list[str]]:
    """The patched object field-validated against what was sent (the applied
    configuration, else the decoded patch), then defaulted (the patch result is decoded,
    hence defaulted, as upstream's patcher decodes it)."""
    sent = config if config is not None else patch.decoded_patch(body)
    checked, warnings = validation.validate_patched(
        patched, sent, kind, mode, required=scope.schema_required, types=scope.schema_types
    )
    return scope.default(checked), warnings


@dataclass
class _UpdatedBody:
    """The new object of a PUT (``rest.DefaultUpdatedObjectInfo``): the body, admitted
    against the stored object, or created from it where the resource allows it."""

    request: web.Request
    adm: admission.RequestAdmission
    resource: ResourceInfo
    reset: ResetFields  # the route strategy's reset fields
    new: JSONObject
    sent: object  # the managedFields the body carries

    async def updated_object(self, ctx: Context, current: JSONObject) -> JSONObject:
        if current:
            return await self.adm.admit_update(copy.deepcopy(self.new), current)
        fresh = copy.deepcopy(self.new)
        fresh["metadata"].pop("resourceVersion", None)
        object_meta.ensure_namespace(fresh, self.resource, ctx.namespace)
        return await self.adm.admit_create(fresh)

    def managed(self, current: JSONObject, prepared: JSONObject) -> JSONObject:
        live = current or None
        sub = self.adm.subresource if current else ""
        updated = managed.record_update(
            self.request, self.resource, sub, self.reset, live, prepared, self.sent
        )
        if current:
            managed.keep_times_of_noop(current, updated)
        return updated


def _updater(info: RequestInfo, scope: RequestScope) -> Updater:
    if not is_updater(scope.storage):
        raise apierrors.method_not_supported(scope.qualified, info.verb)
    return scope.storage


async def update_object(
    request: web.Request, info: RequestInfo, scope: RequestScope
) -> web.StreamResponse:
    resource, kind, storage = scope.resource, scope.kind, _updater(info, scope)
    media, dry_run, new, warnings = await _write_request(request, scope, "UpdateOptions")
    namespace = _namespace(info, resource)
    object_meta.check_name_matches_url(new, info.name, namespace, kind)
    if resource.namespaced:
        new["metadata"]["namespace"] = namespace
    adm = _request_admission(request, info, scope, dry_run, "UpdateOptions")
    sent = managed.sent_managed_fields(new)
    obj_info = _UpdatedBody(request, adm, resource, scope.reset_fields, new, sent)
    stored, created = await storage.update_object(
        _rest_context(request, namespace, dry_run), info.name, obj_info,
        adm.validate_create, adm.validate_update,
    )  # fmt: skip
    return responsewriters.object_response(
        request, kind, stored.data, 201 if created else 200, fmt=media,
        warnings=warnings, stored=stored,
    )  # fmt: skip


@dataclass
class _Patched:
    """The new object of a PATCH (upstream's ``patcher``): the patch applied to the
    stored object (or, for server-side apply of an absent object, the applied
    configuration created), field-validated, then mutating admission. ``warnings``
    are the Warning headers of the last attempt."""

    request: web.Request
    adm: admission.RequestAdmission
    resource: ResourceInfo
    kind: ResourceInfo  # of the route's objects (the resource's, or a Scale)
    patch_type: str
    body: bytes
    mode: Mode
    key: str
    config: JSONObject  # the applied configuration (server-side apply), else {}
    scope: RequestScope  # its field validation and defaulting of the route's kind
    warnings: list[str] = field(default_factory=list)
    sent: object = None
    applied_fields: object = None

    @property
    def applying(self) -> bool:
        return self.patch_type == managed.APPLY_PATCH

    async def updated_object(self, ctx: Context, current: JSONObject) -> JSONObject:
        config = self.config
        if self.applying:  # server-side apply (create-on-apply when absent)
            patched = managed.apply_through(
                self.request, self.resource, self.adm.subresource, self.scope.reset_fields,
                self.kind, current or None, config,
            )  # fmt: skip
            if not current:
                return await self._applied_create(ctx, patched, config)
        elif not current:
            raise serr.NotFound(self.key)
        else:
            patched = await decoding.off_loop(
                self.body, self.patch_type, patch.apply_patch,
                self.patch_type, copy.deepcopy(current), self.body, self.kind, self.mode,
            )  # fmt: skip
        if not isinstance(patched.get("metadata"), dict):
            patched["metadata"] = {}
        self._check(ctx, patched)
        self.sent = managed.sent_managed_fields(patched)
        patched, found = await decoding.off_loop(
            self.body, self.patch_type, _validate_patched, patched,
            config if self.applying else None, self.body, self.kind, self.mode, self.scope,
        )  # fmt: skip
        self.warnings[:] = found + (
            managed.strict_decoding(self.body, self.mode) if self.applying else []
        )
        self.applied_fields = managed.sent_managed_fields(patched) if self.applying else None
        return await self.adm.admit_update(patched, current)

    def _check(self, ctx: Context, patched: JSONObject) -> None:
        decoding.check_kind(patched, self.kind)
        object_meta.check_name_matches_url(patched, self.adm.name, ctx.namespace, self.kind)

    async def _applied_create(
        self, ctx: Context, obj: JSONObject, config: JSONObject
    ) -> JSONObject:
        """The object a create-on-apply stores (201): checked against the kind's schema
        as an applied update is (types, unknown fields; their warnings go first), then
        admitted as a create (upstream's patcher turns the PatchOptions into
        CreateOptions for admission)."""
        self.warnings[:] = managed.strict_decoding(self.body, self.mode)
        self.applied_fields = managed.sent_managed_fields(obj)
        self._check(ctx, obj)
        object_meta.ensure_namespace(obj, self.resource, ctx.namespace)
        checked, found = await decoding.off_loop(
            self.body, self.patch_type, _validate_patched, obj, config, self.body,
            self.resource, self.mode, self.scope,
        )  # fmt: skip
        self.warnings[:0] = found
        return await self.adm.admit_create(checked)

    def managed(self, current: JSONObject, prepared: JSONObject) -> JSONObject:
        if self.applying:
            updated = managed.set_managed_fields(prepared, self.applied_fields)
        else:
            updated = managed.record_update(
                self.request, self.resource, self.adm.subresource, self.scope.reset_fields,
                current, prepared, self.sent,
            )  # fmt: skip
        if current:
            managed.keep_times_of_noop(current, updated)
        return updated


async def patch_object(
    request: web.Request, info: RequestInfo, scope: RequestScope
) -> web.StreamResponse:
    resource, kind, storage = scope.resource, scope.kind, _updater(info, scope)
    media = _response_type(request, kind)
    patch_type = negotiation.media_type_of(request, default="")
    patch.check_patch_type(patch_type)
    managed.check_patch_options(request.query, patch_type)
    mode = validation.field_mode(request.query, "PatchOptions")
    dry_run = is_dry_run(request.query, "PatchOptions")
    body = await decoding.read_body(request, scope.max_request_body_bytes)
    namespace = _namespace(info, resource)
    adm = _request_admission(request, info, scope, dry_run, "PatchOptions")
    key = scope.resource_store(info.verb).object_key(namespace, info.name)
    applying = patch_type == managed.APPLY_PATCH
    config = (
        await decoding.off_loop(body, patch_type, managed.decode_apply_body, body)
        if applying
        else {}
    )
    obj_info = _Patched(request, adm, resource, kind, patch_type, body, mode, key, config, scope)
    stored, created = await storage.update_object(
        _rest_context(request, namespace, dry_run), info.name, obj_info,
        adm.validate_create, adm.validate_update,
        force_allow_create=applying and not info.subresource,
    )  # fmt: skip
    return responsewriters.object_response(
        request, kind, stored.data, 201 if created else 200, fmt=media,
        warnings=obj_info.warnings, stored=stored,
    )  # fmt: skip


async def delete_object(
    request: web.Request, info: RequestInfo, scope: RequestScope
) -> web.StreamResponse:
    """DELETE: the object as it was, with the deletion revision as its resourceVersion.
    DeleteOptions come from the body (as kubectl sends them) or the query. Admission:
    the mutating phase here, without objects; the validating phase in the store, with
    the object being deleted."""
    storage = scope.storage
    if not is_deleter(storage):
        raise apierrors.method_not_supported(scope.qualified, info.verb)
    media = _response_type(request, scope.kind)
    body = await decoding.read_body(request, scope.max_request_body_bytes)
    media_type = negotiation.body_media_type(request)
    opts = await decoding.off_loop(
        body, media_type, parse_delete_options, request.query, body, media_type,
        unsafe_delete_gate=scope.unsafe_delete_gate,
    )  # fmt: skip
    namespace = _namespace(info, scope.resource)
    adm = _request_admission(request, info, scope, opts.dry_run, "DeleteOptions")
    await adm.admit_delete()
    unsafe = bool(opts.ignore_store_read_error)
    if unsafe:  # the unsafe delete of a corrupt value
        add_audit_annotation(request, "apiserver.k8s.io/unsafe-delete-ignore-read-error", "")
    context = _rest_context(request, namespace, opts.dry_run)
    stored, removed = await storage.delete_object(context, info.name, adm.validate_delete, opts)
    if unsafe:
        details = {"name": info.name, "kind": scope.kind.kind}
        status = {**apierrors.success_status(details), "code": 200}
        pb = media.format == "protobuf"  # a Status, negotiated like the object would be
        return responsewriters.json_response(
            status, media_type=negotiation.PROTOBUF_TYPE if pb else negotiation.JSON_TYPE
        )
    code = deletion.response_code(removed, opts)
    return responsewriters.object_response(
        request, scope.kind, stored.data, code, fmt=media, stored=stored
    )


_Answer = Awaitable[web.StreamResponse]
_ObjectHandler = Callable[[web.Request, RequestInfo, RequestScope], _Answer]
_CollectionHandler = Callable[[web.Request, APIContext, RequestInfo, Store], _Answer]
_Handler = Callable[[web.Request, APIContext, RequestInfo, RequestScope], _Answer]


def _on_object(handler: _ObjectHandler) -> _Handler:
    """An object's handler: it needs the route's scope only."""

    async def handle(
        request: web.Request, ctx: APIContext, info: RequestInfo, scope: RequestScope
    ) -> web.StreamResponse:
        return await handler(request, info, scope)

    return handle


def _on_store(handler: _CollectionHandler) -> _Handler:
    """A collection handler, which works on the resource's store (and the server's
    open watches)."""

    async def handle(
        request: web.Request, ctx: APIContext, info: RequestInfo, scope: RequestScope
    ) -> web.StreamResponse:
        return await handler(request, ctx, info, scope.resource_store(info.verb))

    return handle


_HANDLERS: dict[str, _Handler] = {
    "get": _on_object(get_object),
    "create": _on_object(create_object),
    "update": _on_object(update_object),
    "patch": _on_object(patch_object),
    "delete": _on_object(delete_object),
    "list": _on_store(collection.list_objects),
    "watch": _on_store(collection.watch_objects),
    "deletecollection": _on_store(collection.delete_collection),
}
