"""``GET <resource>[/NAME]`` of a resource whose objects are computed on each call, with
no storage and no watch (upstream's REST storages that implement only ``rest.Getter``
and ``rest.Lister``: componentstatuses probe the control plane). Whoever serves such a
resource hands its objects in (``APIContext.computed_objects``, from the composition
root); the answer is one object, a ``<Kind>List`` or a Table."""

from __future__ import annotations

import datetime as dt

import orjson
from aiohttp import web

from proxy import apierrors
from proxy.endpoints import negotiation, responsewriters
from proxy.printers import table
from proxy.registry.resources import ResourceInfo
from proxy.request.request_info import RequestInfo
from proxy.server.context import APIContext

__all__ = ["handle_computed"]


async def handle_computed(
    request: web.Request, ctx: APIContext, info: RequestInfo, resource: ResourceInfo
) -> web.StreamResponse:
    """GET one of ``resource``'s objects, or the list (a Table for kubectl)."""
    computed = ctx.computed_objects.get((resource.group, resource.plural))
    if computed is None:
        raise web.HTTPNotFound()
    fmt = negotiation.response_format(request, is_list=not info.name, resource=resource)
    objects = await computed()
    if info.name:
        found = [o for o in objects if o["metadata"]["name"] == info.name]
        if not found:
            raise apierrors.not_found(resource.qualified, info.name)
        return responsewriters.object_response(request, resource, orjson.dumps(found[0]), fmt=fmt)
    if fmt.format == "table":
        now = dt.datetime.now(dt.UTC)
        rendered = table.to_table(resource, objects, list_meta={}, now=now,
                                  table_version=fmt.version)  # fmt: skip
        return responsewriters.json_response(rendered, media_type=fmt.media_type,
                                         content_type=fmt.content_type)  # fmt: skip
    items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in objects]
    listed = {"kind": resource.list_kind, "apiVersion": resource.api_version, "metadata": {},
              "items": items}  # fmt: skip
    return responsewriters.json_response(listed, media_type=fmt.media_type)
