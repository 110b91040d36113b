"""The bootstrap controllers kube-apiserver runs as post-start hooks, for the app's
lifetime: ``bootstrap-controller`` (the kubernetes Service) and
``start-cluster-authentication-info-controller`` (extension-apiserver-authentication)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from proxy.kube.bootstrap.cluster_authentication import ClusterAuthentication, authentication_data
from proxy.kube.bootstrap.kubernetes_service import KubernetesService, advertise_address
from proxy.kube.bootstrap.writer import BootstrapWriter
from proxy.server.context import APIContext

__all__ = ["cleanup_ctx"]


def cleanup_ctx(ctx: APIContext) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context that runs the bootstrap controllers for the app's lifetime."""

    async def run(app: web.Application) -> AsyncIterator[None]:
        settings = ctx.settings
        writer = BootstrapWriter(ctx.registry, ctx.storages)
        address = advertise_address(settings.advertise_address, settings.bind_address)
        controllers = {
            "bootstrap-controller": KubernetesService(
                writer, settings.service_cluster_ip_range, address, lambda: ctx.serving_port
            ).run(),
            "start-cluster-authentication-info-controller": ClusterAuthentication(
                writer, authentication_data(settings)
            ).run(),
        }
        tasks = [asyncio.create_task(c, name=name) for name, c in controllers.items()]
        yield
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)  # (their CancelledErrors)

    return run
