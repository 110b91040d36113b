"""How the server reaches the kubelets (upstream's ``--kubelet-*`` flags made into a
``KubeletClientConfig`` by ``cmd/kube-apiserver/app``): the connect subresources
(pods/log, exec, attach, portforward, nodes/proxy) dial each node with it."""

from __future__ import annotations

from proxy.kube.kubelet_client import KubeletClientConfig
from proxy.kube.pod_connect import Transport
from proxy.server.settings import Settings

__all__ = ["kubelet_client_config"]


def kubelet_client_config(settings: Settings, cluster: Transport) -> KubeletClientConfig:
    """The kubelet client of ``settings``: the preferred node address types, the client
    certificate and key, the CA the kubelets' serving certificates are checked with, and
    the cluster network's transport (the egress selector's) it dials through."""
    return KubeletClientConfig.build(
        settings.kubelet_preferred_address_types,
        settings.kubelet_client_certificate,
        settings.kubelet_client_key,
        settings.kubelet_certificate_authority,
        cluster,
    )
