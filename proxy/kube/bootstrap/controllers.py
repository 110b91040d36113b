"""The bootstrap controllers kube-apiserver runs as post-start hooks, by their hook
names: ``bootstrap-controller`` (the kubernetes Service and its endpoints) and
``start-cluster-authentication-info-controller`` (extension-apiserver-authentication);
each ``/readyz``'s ``poststarthook/<name>`` passes once it has written its objects."""

from __future__ import annotations

from proxy.kube.bootstrap.cluster_authentication import ClusterAuthentication, authentication_data
from proxy.kube.bootstrap.kubernetes_service import KubernetesService, advertise_address
from proxy.server.context import APIContext
from proxy.server.post_start_hooks import PostStartHooks

__all__ = ["add_hooks"]

BOOTSTRAP_CONTROLLER_HOOK = "bootstrap-controller"
AUTHENTICATION_INFO_HOOK = "start-cluster-authentication-info-controller"


def add_hooks(hooks: PostStartHooks, ctx: APIContext) -> None:
    """Declare both controllers (after the system namespaces they write into)."""
    settings = ctx.settings
    address = advertise_address(settings.advertise_address, settings.bind_address)
    service = KubernetesService(
        settings.service_cluster_ip_range,
        address,
        lambda: ctx.serving_port,
        reconcile=settings.endpoint_reconciler_type != "none",
    )
    after = ("start-system-namespaces-controller",)
    hooks.add(BOOTSTRAP_CONTROLLER_HOOK, service.run, after=after, ready=service.ready.is_set)
    trust = ClusterAuthentication(authentication_data(settings))
    hooks.add(AUTHENTICATION_INFO_HOOK, trust.run, after=after, ready=trust.ready.is_set)
