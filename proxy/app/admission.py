"""Wiring admission into the app (called once from ``proxy.app.server.build_app``):
the chain from the flags onto ``APIContext.admission``, the Warning-header hook, and the
post-start hooks that keep the webhook and policy configurations current and write the
system PriorityClasses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from proxy.admission import handler
from proxy.admission.chain import AdmissionChain, PluginDeps, enabled_plugins
from proxy.admission.configuration import ConfigurationSource
from proxy.admission.plugins import Plugins
from proxy.app.object_lookup import StoreLookup
from proxy.kube.bootstrap.priority_classes import (
    PRIORITY_CLASSES_HOOK,
    bootstrap_priority_classes,
)
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks

if TYPE_CHECKING:
    from proxy.endpoints.context import APIContext

__all__ = ["install"]


def install(
    app: web.Application, ctx: APIContext, plugins: Plugins, hooks: PostStartHooks
) -> None:
    """Build the chain of ``ctx.settings``' admission flags from ``plugins`` and declare
    its hooks."""
    settings = ctx.settings

    source = ConfigurationSource(ctx.informers)
    names = enabled_plugins(settings.enable_admission_plugins, settings.disable_admission_plugins)
    # the quota status written during admission goes through the loopback client too
    lookup = StoreLookup(ctx, lambda: hooks.loopback)
    authorizer = ctx.authorizer
    deps = PluginDeps(lookup, source, default=ctx.defaulter, authorizer=authorizer,
                      cluster=ctx.cluster_transport)  # fmt: skip
    ctx.object_lookup = lookup
    ctx.admission = AdmissionChain.build(names, deps, plugins)
    app.on_response_prepare.append(handler.on_response_prepare)

    async def configurations(hook: PostStartHookContext) -> None:
        await source.run()

    async def priority_classes(hook: PostStartHookContext) -> None:
        await bootstrap_priority_classes(hook.loopback)

    hooks.add("admission-configurations", configurations)  # up once the informers synced
    if settings.system_namespaces and "Priority" in names:
        hooks.add(PRIORITY_CLASSES_HOOK, priority_classes)
