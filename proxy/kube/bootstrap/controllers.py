"""The bootstrap controllers kube-apiserver runs as post-start hooks, by their hook
names: ``bootstrap-controller`` (the kubernetes Service and its endpoints),
``start-cluster-authentication-info-controller`` (extension-apiserver-authentication),
``start-kubernetes-service-cidr-controller`` (the default ServiceCIDR)
and ``start-legacy-token-tracking-controller``; each ``/readyz``'s
``poststarthook/<name>`` passes once it has written its objects (the last one at once,
as upstream's only starts its controller)."""

from __future__ import annotations

from proxy.kube.bootstrap.cluster_authentication import ClusterAuthentication, authentication_data
from proxy.kube.bootstrap.default_service_cidr import DEFAULT_SERVICE_CIDR_HOOK, DefaultServiceCIDR
from proxy.kube.bootstrap.kubernetes_service import (
    KubernetesService,
    MasterLeaseKeeper,
    advertise_address,
)
from proxy.kube.bootstrap.legacy_token_tracking import (
    LEGACY_TOKEN_TRACKING_HOOK,
    track_legacy_tokens,
)
from proxy.kube.bootstrap.master_leases import MasterLeases
from proxy.server.context import APIContext
from proxy.server.post_start_hooks import PostStartHooks

__all__ = ["add_hooks"]

BOOTSTRAP_CONTROLLER_HOOK = "bootstrap-controller"
AUTHENTICATION_INFO_HOOK = "start-cluster-authentication-info-controller"
MASTER_LEASE_HOOK = "start-endpoint-reconciler-lease"


def add_hooks(hooks: PostStartHooks, ctx: APIContext) -> None:
    """Declare the controllers (after the system namespaces they write into)."""
    settings = ctx.settings
    address = advertise_address(settings.advertise_address, settings.bind_address)
    reconciler = settings.endpoint_reconciler_type
    leases = None
    if reconciler == "lease":
        leases = MasterLeases(ctx.storage_ctx.client, settings.etcd_prefix)
    service = KubernetesService(
        settings.service_cluster_ip_range,
        address,
        lambda: ctx.serving_port,
        reconcile=reconciler != "none",
        leases=leases,
    )
    after = ("start-system-namespaces-controller",)
    if leases is not None:  # every server (and worker) says it is alive
        keeper = MasterLeaseKeeper(leases, address)
        hooks.add(MASTER_LEASE_HOOK, keeper.run, ready=keeper.ready.is_set)
    # with --workers, in the Lease holder alone (one writer of the Service, its
    # endpoints and the ConfigMap, not one per worker)
    hooks.add(BOOTSTRAP_CONTROLLER_HOOK, service.run, after=after, ready=service.ready.is_set,
              elected=True)  # fmt: skip
    trust = ClusterAuthentication(authentication_data(settings))
    hooks.add(AUTHENTICATION_INFO_HOOK, trust.run, after=after, ready=trust.ready.is_set,
              elected=True)  # fmt: skip
    hooks.add(LEGACY_TOKEN_TRACKING_HOOK, track_legacy_tokens, after=after, ready=lambda: True)
    # in every server, as upstream's: each creates it when absent and checks its CIDRs
    cidr = DefaultServiceCIDR([settings.service_cluster_ip_range])
    hooks.add(DEFAULT_SERVICE_CIDR_HOOK, cidr.run, ready=cidr.ready.is_set)
