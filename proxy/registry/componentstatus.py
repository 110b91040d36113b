"""``componentstatuses`` (kube-apiserver's ``registry/core/componentstatus``, deprecated
but served): the health of the control plane, probed on each GET — ``etcd-0`` (a quorum
read of etcd's revision), ``scheduler`` and ``controller-manager`` (their ``/healthz``
on 127.0.0.1:10259 and :10257, TLS unverified, as upstream probes them). No storage,
no watch: ``get`` and ``list`` only.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from proxy import apierrors
from proxy.endpoints import negotiation
from proxy.printers import table
from proxy.request.request_info import RequestInfo
from proxy.server.context import APIContext

__all__ = ["handle_component_statuses"]

JSON = dict[str, Any]
PROBE_TIMEOUT = 1.0  # seconds per component (upstream's probe timeout is 20 s)
# name -> its /healthz (GetServersToValidate's defaults)
_COMPONENTS = {
    "controller-manager": "https://127.0.0.1:10257/healthz",
    "scheduler": "https://127.0.0.1:10259/healthz",
}


def _condition(healthy: bool | None, message: str = "", error: str = "") -> JSON:
    """A ``Healthy`` condition as ``ToConditionStatus`` makes it (Unknown when the probe
    itself failed)."""
    status = {True: "True", False: "False", None: "Unknown"}[healthy]
    condition: JSON = {"type": "Healthy", "status": status}
    if message:
        condition["message"] = message
    if error:
        condition["error"] = error
    return condition


async def _probe_http(url: str) -> JSON:
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, ssl=insecure) as resp,
        ):
            body = (await resp.read()).decode(errors="replace")
    except (aiohttp.ClientError, TimeoutError, OSError) as e:
        return _condition(None, error=f'Get "{url}": {e}')
    if 200 <= resp.status < 400:
        return _condition(True, message=body)
    error = f"HTTP probe failed with statuscode: {resp.status}"
    return _condition(False, message=body, error=error)


async def _probe_etcd(ctx: APIContext) -> JSON:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            await ctx.storage_ctx.etcd3().current_resource_version()
    except Exception as e:  # unreachable, timed out: Unhealthy with the cause
        return _condition(False, error=str(e) or type(e).__name__)
    return _condition(True, message="ok")


async def _statuses(ctx: APIContext) -> list[JSON]:
    names = [*_COMPONENTS, "etcd-0"]
    probes = [_probe_http(url) for url in _COMPONENTS.values()] + [_probe_etcd(ctx)]
    conditions = await asyncio.gather(*probes)
    return [
        {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
         "conditions": [condition]}
        for name, condition in zip(names, conditions, strict=True)
    ]  # fmt: skip


async def handle_component_statuses(
    request: web.Request, ctx: APIContext, info: RequestInfo
) -> web.StreamResponse:
    """GET one component's status, or the list (a Table for kubectl)."""
    resource = ctx.registry.get("", "v1", "componentstatuses")
    assert resource is not None
    fmt = negotiation.response_format(request, is_list=not info.name, resource=resource)
    statuses = await _statuses(ctx)
    if info.name:
        found = [s for s in statuses if s["metadata"]["name"] == info.name]
        if not found:
            raise apierrors.not_found("componentstatuses", info.name)
        return negotiation.object_response(request, resource, orjson.dumps(found[0]), fmt=fmt)
    if fmt.format == "table":
        now = dt.datetime.now(dt.UTC)
        rendered = table.to_table(resource, statuses, list_meta={}, now=now,
                                  table_version=fmt.version)  # fmt: skip
        return negotiation.json_response(rendered, media_type=fmt.media_type,
                                         content_type=fmt.content_type)  # fmt: skip
    items = [{k: v for k, v in s.items() if k not in ("kind", "apiVersion")} for s in statuses]
    listed = {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}
    return negotiation.json_response(listed, media_type=fmt.media_type)
