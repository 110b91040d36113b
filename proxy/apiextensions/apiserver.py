"""Wiring of the apiextensions server into the application (what
``apiextensions-apiserver``'s ``New`` and its post-start hooks do): the CRD's strategy
and Table printer, the Warning hook of custom resources, and a cleanup context that runs
the CRD controllers for the app's lifetime (cancelled and awaited on shutdown, then every
custom resource's storage is closed)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from proxy.apiextensions import handler
from proxy.apiextensions.controllers import CRD_GROUP, CRD_PLURAL, CRDControllers
from proxy.apiextensions.serving import CustomResources
from proxy.printers.columns import CREATED_AT, NAME, TablePrinter
from proxy.printers.handlers import HANDLERS as PRINTERS
from proxy.server.context import APIContext

__all__ = ["setup_apiextensions"]


def _print_crd(obj: dict[str, Any], now: dt.datetime) -> tuple[list[Any], list[Any]]:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), meta.get("creationTimestamp") or ""], []


def setup_apiextensions(app: web.Application, ctx: APIContext) -> None:
    """Serve CRDs and the custom resources they define (when the registry serves CRDs)."""
    if ctx.registry.get(CRD_GROUP, "v1", CRD_PLURAL) is None:
        return
    # kube's DefaultTableConvertor: CRDs have no printer of their own
    PRINTERS[(CRD_GROUP, CRD_PLURAL)] = TablePrinter((NAME, CREATED_AT), _print_crd)
    handler.install_warnings(app)
    app.cleanup_ctx.append(_controllers(ctx))


def _controllers(ctx: APIContext) -> Callable[[web.Application], AsyncIterator[None]]:
    async def run(app: web.Application) -> AsyncIterator[None]:
        serving = CustomResources(ctx)
        ctx.custom_openapi = serving.openapi_kind
        delegate = handler.CustomResourceDelegate(
            serving.version_of, serving.rules_of, ctx.storages,
            ctx.settings.lifecycle_controllers,
        )  # fmt: skip
        ctx.delegates.append(delegate)
        controllers = CRDControllers(ctx, serving)
        task = asyncio.create_task(controllers.run(), name="crd-controllers")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        ctx.delegates.remove(delegate)
        await serving.close()

    return run
