"""Wiring admission into the app (called once from ``proxy.app.server.build_app``):
the chain from the flags onto ``APIContext.admission``, the Warning-header hook, and a
cleanup context that keeps the webhook and policy configurations current."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from aiohttp import web

from proxy.admission import handler
from proxy.admission.chain import AdmissionChain, PluginDeps, enabled_plugins
from proxy.admission.configuration import ADMISSION_GROUP, ConfigurationSource
from proxy.admission.lookup import StoreLookup
from proxy.admission.plugins import Plugins
from proxy.kube.bootstrap.priority_classes import bootstrap_priority_classes

if TYPE_CHECKING:
    from proxy.registry.storage_factory import ResourceStorage
    from proxy.server.context import APIContext

__all__ = ["install"]


def install(app: web.Application, ctx: APIContext, plugins: Plugins) -> None:
    """Build the chain of ``ctx.settings``' admission flags from ``plugins`` and run its
    sources."""
    settings = ctx.settings

    def storage_for(plural: str) -> ResourceStorage | None:
        resource = ctx.registry.lookup(ADMISSION_GROUP, plural)
        return ctx.storages.for_resource(resource) if resource is not None else None

    source = ConfigurationSource(storage_for)
    names = enabled_plugins(settings.enable_admission_plugins, settings.disable_admission_plugins)
    ctx.admission = AdmissionChain.build(names, PluginDeps(StoreLookup(ctx), source), plugins)
    app.on_response_prepare.append(handler.on_response_prepare)

    async def run(app: web.Application) -> AsyncIterator[None]:
        task = None
        if settings.system_namespaces and "Priority" in names:
            task = asyncio.create_task(bootstrap_priority_classes(ctx), name="priority-classes")
        async with source.running():
            yield
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app.cleanup_ctx.append(run)
