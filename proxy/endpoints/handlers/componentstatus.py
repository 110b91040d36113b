"""``GET componentstatuses[/NAME]``: the objects the kind's storage probes on each call
(``APIContext.component_statuses``, kube's ``proxy.kube.componentstatus`` handed in by
the composition root), as one object, a ``ComponentStatusList`` or a Table."""

from __future__ import annotations

import datetime as dt

import orjson
from aiohttp import web

from proxy import apierrors
from proxy.endpoints import negotiation, responsewriters
from proxy.printers import table
from proxy.request.request_info import RequestInfo
from proxy.server.context import APIContext

__all__ = ["handle_component_statuses"]


async def handle_component_statuses(
    request: web.Request, ctx: APIContext, info: RequestInfo
) -> web.StreamResponse:
    """GET one component's status, or the list (a Table for kubectl)."""
    resource = ctx.registry.get("", "v1", "componentstatuses")
    if resource is None or ctx.component_statuses is None:
        raise web.HTTPNotFound()
    fmt = negotiation.response_format(request, is_list=not info.name, resource=resource)
    statuses = await ctx.component_statuses()
    if info.name:
        found = [s for s in statuses if s["metadata"]["name"] == info.name]
        if not found:
            raise apierrors.not_found("componentstatuses", info.name)
        return responsewriters.object_response(request, resource, orjson.dumps(found[0]), fmt=fmt)
    if fmt.format == "table":
        now = dt.datetime.now(dt.UTC)
        rendered = table.to_table(resource, statuses, list_meta={}, now=now,
                                  table_version=fmt.version)  # fmt: skip
        return responsewriters.json_response(rendered, media_type=fmt.media_type,
                                         content_type=fmt.content_type)  # fmt: skip
    items = [{k: v for k, v in s.items() if k not in ("kind", "apiVersion")} for s in statuses]
    listed = {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}
    return responsewriters.json_response(listed, media_type=fmt.media_type)
