"""Legacy discovery documents, built from the registry:

- ``/api`` → APIVersions; ``/apis`` → APIGroupList; ``/apis/<group>`` → APIGroup;
- ``/api/v1`` and ``/apis/<group>/<version>`` → APIResourceList, with each resource's
  name, singularName, namespaced, kind, verbs, shortNames, categories and its served
  subresources as ``pods/status``.

kubectl and client-go resolve resource names, short names and the "all" category from
these. ``/api`` and ``/apis`` answer with the aggregated document
(``apidiscovery.k8s.io/v2``, built by ``proxy.endpoints.discovery.aggregated``) when the
Accept header asks for it first, as kubectl does. ``/openapi/v3`` serves the documents of
``proxy.openapi.documents``.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import hashlib

from aiohttp import web

from proxy import apierrors
from proxy.endpoints import responsewriters, restful_route
from proxy.endpoints.context import API_CONTEXT
from proxy.endpoints.discovery import aggregated as discovery_aggregated
from proxy.endpoints.discovery.aggregation import AGGREGATION
from proxy.openapi import documents as openapi
from proxy.openapi import swagger
from proxy.registry.resources import Registry, ResourceInfo
from storage.interfaces import JSONObject

__all__ = [
    "api_group",
    "api_group_list",
    "api_resource_list",
    "api_versions",
    "setup_discovery_routes",
]


def storage_version_hash(resource: ResourceInfo) -> str:
    """An opaque hash of the storage version, as upstream (sha256, 8 bytes, base64)."""
    text = f"{resource.group}/{resource.version}/{resource.kind}".encode()
    return base64.b64encode(hashlib.sha256(text).digest()[:8]).decode()


def api_versions(server_address: str) -> JSONObject:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(registry: Registry, group: str) -> JSONObject:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in registry.versions(group)]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def api_group_list(registry: Registry) -> JSONObject:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(registry, g) for g in registry.groups()],
    }


def api_group(registry: Registry, group: str) -> JSONObject:
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(registry, group)}


def _resource_entry(resource: ResourceInfo) -> JSONObject:
    entry: JSONObject = {
        "name": resource.plural,
        "singularName": resource.singular,
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": list(resource.verbs),
    }
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    if resource.categories:
        entry["categories"] = list(resource.categories)
    entry["storageVersionHash"] = storage_version_hash(resource)
    return entry


def _subresource_entry(resource: ResourceInfo, sub: str) -> JSONObject:
    facts = resource.subresource_info(sub)  # as the subresource's server declared it
    entry: JSONObject = {
        "name": f"{resource.plural}/{sub}",
        "singularName": "",
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": list(facts.verbs),
    }
    own = facts.kind
    if own is not None:  # scale: autoscaling/v1 Scale
        group, version, kind = own
        entry["kind"] = kind
        if (group, version) != (resource.group, resource.version):  # omitempty: same GV
            entry.update(group=group, version=version)
    return entry


def api_resource_list(registry: Registry, group: str, version: str) -> JSONObject | None:
    resources = registry.in_group_version(group, version)
    if not resources:
        return None
    entries: list[JSONObject] = []
    for r in sorted(resources, key=lambda r: r.plural):
        entries.append(_resource_entry(r))
        entries.extend(_subresource_entry(r, s) for s in r.subresources)
    body: JSONObject = {"kind": "APIResourceList"}
    if group:  # the legacy /api/v1 list is written without one by kube-apiserver
        body["apiVersion"] = "v1"
    body.update(groupVersion=f"{group}/{version}" if group else version, resources=entries)
    return body


def _not_found() -> web.HTTPNotFound:
    """No such group or version: the server's not-found answer for the path (a Status
    under a served group, plain text otherwise: ``proxy.server.http_errors``)."""
    return web.HTTPNotFound()


def _aggregated(request: web.Request, path: str) -> web.StreamResponse | None:
    """The aggregated (apidiscovery.k8s.io/v2) document when the client asks for it."""
    if not discovery_aggregated.is_aggregated_request(request.headers.get("Accept")):
        return None
    ctx = request.app[API_CONTEXT]
    if not ctx.aggregated_discovery:
        ctx.aggregated_discovery.update(discovery_aggregated.build_documents(ctx.registry))
    document = ctx.aggregated_discovery[path]
    aggregator = request.app.get(AGGREGATION)  # API aggregation: remote groups merged in
    if aggregator is not None and path == "/apis":
        document = aggregator.aggregated_apis(document)
    code, headers, body = discovery_aggregated.respond(document, request.headers)
    return web.Response(status=code, headers=headers, body=body)


def _check_accept(request: web.Request, *, restful: bool) -> None:
    """406 for an Accept header nothing here produces: go-restful's words for the
    documents it routes (``/api``, ``/api/v1``, ``/apis/<g>/<v>``), the handler's own
    negotiation error for the others (``/apis``, ``/apis/<g>``)."""
    if restful:
        restful_route.check("GET", "get", request.headers)
    elif not restful_route.accepts(request.headers.get("Accept", ""), restful_route.MEDIA_TYPES):
        raise apierrors.not_acceptable(restful_route.MEDIA_TYPES)


async def _api(request: web.Request) -> web.StreamResponse:
    _check_accept(request, restful=True)
    return _aggregated(request, "/api") or responsewriters.discovery_response(
        request, api_versions(request.host)
    )


async def _api_v1(request: web.Request) -> web.StreamResponse:
    body = api_resource_list(request.app[API_CONTEXT].registry, "", request.match_info["version"])
    if body is None:
        raise _not_found()
    _check_accept(request, restful=True)
    return responsewriters.discovery_response(request, body)


async def _apis(request: web.Request) -> web.StreamResponse:
    _check_accept(request, restful=False)
    aggregator = request.app.get(AGGREGATION)  # API aggregation: APIService priorities
    groups = (
        aggregator.legacy_apis()
        if aggregator is not None
        else api_group_list(request.app[API_CONTEXT].registry)
    )
    return _aggregated(request, "/apis") or responsewriters.discovery_response(request, groups)


async def _apis_group(request: web.Request) -> web.StreamResponse:
    registry = request.app[API_CONTEXT].registry
    group = request.match_info["group"]
    aggregator = request.app.get(AGGREGATION)  # API aggregation: a remote group
    remote = aggregator.api_group(group) if aggregator is not None else None
    if remote is not None and group not in registry.groups():
        _check_accept(request, restful=False)
        return responsewriters.discovery_response(request, remote)
    if group not in registry.groups():
        raise _not_found()
    _check_accept(request, restful=False)
    return responsewriters.discovery_response(request, api_group(registry, group))


async def _apis_group_version(request: web.Request) -> web.StreamResponse:
    registry = request.app[API_CONTEXT].registry
    body = api_resource_list(registry, request.match_info["group"], request.match_info["version"])
    if body is None:
        raise _not_found()
    _check_accept(request, restful=True)
    return responsewriters.discovery_response(request, body)


async def _openapi_v3(request: web.Request) -> web.StreamResponse:
    """``/openapi/v3`` and its per-group-version documents (``proxy.openapi.documents``)."""
    ctx = request.app[API_CONTEXT]
    if ctx.openapi is None:
        ctx.openapi = openapi.OpenAPIV3(ctx.registry, ctx.custom_openapi)
    code, headers, body = ctx.openapi.respond(
        request.match_info.get("path", ""),
        query_hash=request.query.get("hash"),
        request_headers=request.headers,
        now=dt.datetime.now(dt.UTC),
    )
    aggregator = request.app.get(AGGREGATION)  # API aggregation: remote group-versions
    if aggregator is not None and not request.match_info.get("path"):
        code, headers, body = aggregator.openapi_index(ctx.openapi.index(), request.headers)
    return web.Response(status=code, headers=headers, body=body)


async def _openapi_v2(request: web.Request) -> web.StreamResponse:
    """``/openapi/v2`` as JSON (``proxy.openapi.swagger``; built beside the loop once
    per set of served kinds); a protobuf-only Accept gets the 404 it always got."""
    ctx = request.app[API_CONTEXT]
    if not swagger.accepts_json(request.headers):
        raise web.HTTPNotFound(text="404 page not found\n")
    if ctx.openapi is None:
        ctx.openapi = openapi.OpenAPIV3(ctx.registry, ctx.custom_openapi)
    doc = await asyncio.to_thread(ctx.openapi.swagger)
    headers = {"ETag": doc.etag}
    if doc.not_modified(request.headers):
        return web.Response(status=304, headers=headers)
    return web.Response(body=doc.body, headers={**headers, "Content-Type": "application/json"})


def setup_discovery_routes(app: web.Application) -> None:
    """Discovery GET routes; registered before the resource catch-all routes."""
    routes = (
        ("/api", _api),
        ("/api/{version}", _api_v1),
        ("/apis", _apis),
        ("/apis/{group}", _apis_group),
        ("/apis/{group}/{version}", _apis_group_version),
    )
    for path, handler in routes:  # with and without the trailing slash, as go-restful
        app.router.add_get(path, handler)
        app.router.add_get(path + "/", handler)
    app.router.add_get("/openapi/v3", _openapi_v3)
    app.router.add_get("/openapi/v2", _openapi_v2)
    app.router.add_get("/openapi/v3/{path:.+}", _openapi_v3)
