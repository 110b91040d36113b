"""Wiring of the apiextensions server into the application (what
``apiextensions-apiserver``'s ``New`` and its post-start hooks do): the CRD's Table
printer, the custom resources' delegate behind the generic handlers and their Warning
hook, the post-start hook
``start-apiextensions-controllers`` (the CRD controllers, up once they have listed the
CRDs, as upstream's ``crd-informer-synced``), and a cleanup context that closes every
custom resource's storage on shutdown (after the hooks stopped)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

from proxy.apiextensions import handler
from proxy.apiextensions.controllers import CRDControllers
from proxy.apiextensions.crd_strategy import CRD_GROUP, CRD_PLURAL
from proxy.apiextensions.serving import CustomResources
from proxy.printers.columns import CREATED_AT, NAME, TablePrinter
from proxy.printers.handlers import HANDLERS as PRINTERS
from proxy.server.context import APIContext
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks

__all__ = ["setup_apiextensions"]


def _print_crd(obj: dict[str, Any], now: dt.datetime) -> tuple[list[Any], list[Any]]:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), meta.get("creationTimestamp") or ""], []


def setup_apiextensions(app: web.Application, ctx: APIContext, hooks: PostStartHooks) -> None:
    """Serve CRDs and the custom resources they define (when the registry serves CRDs)."""
    if ctx.registry.get(CRD_GROUP, "v1", CRD_PLURAL) is None:
        return
    # kube's DefaultTableConvertor: CRDs have no printer of their own
    PRINTERS[(CRD_GROUP, CRD_PLURAL)] = TablePrinter((NAME, CREATED_AT), _print_crd)
    handler.install_warnings(app)
    serving = CustomResources(ctx)
    ctx.custom_openapi = serving.openapi_kind
    delegate = handler.CustomResourceDelegate(
        serving.version_of, serving.rules_of, ctx.storages, ctx.settings.lifecycle_controllers
    )
    ctx.delegates.append(delegate)
    controllers = CRDControllers(ctx, serving)
    controllers.leads = hooks.leads  # with --workers, the Lease holder alone writes
    hooks.on_leading(controllers.resync)

    async def run_controllers(hook: PostStartHookContext) -> None:
        await controllers.run(hook.loopback)

    hooks.add("start-apiextensions-controllers", run_controllers, ready=controllers.synced.is_set)
    app.cleanup_ctx.append(_serving(serving))


def _serving(serving: CustomResources) -> Callable[[web.Application], AsyncIterator[None]]:
    async def run(app: web.Application) -> AsyncIterator[None]:
        yield
        await serving.close()

    return run
