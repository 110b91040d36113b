"""The REST storages of the built-in kinds' subresources that are not the object itself
(upstream's ``pkg/registry/<group>/<kind>/storage``): ``scale`` of the scalable kinds,
``pods/binding``, and the subresources the kubelet serves (``proxy.kube.pod_connect``:
``pods/log``, ``exec``, ``attach``, ``portforward``, ``nodes/proxy``), ``pods/proxy`` and
``services/proxy`` (``proxy.kube.service.proxy``), to pod IPs. ``status``,
``finalize`` and ``ephemeralcontainers`` are the resource's own store with the
subresource's strategy (``proxy.kube.strategy``)."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.binding import BindingREST
from proxy.kube.kubelet_client import KubeletClientConfig
from proxy.kube.pod_connect import Transport, connect_storage
from proxy.kube.scale import SPEC_REPLICAS
from proxy.kube.service.proxy import ServiceProxyREST, SliceLister
from proxy.kube.token import ObjectReader
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import SubresourceStorage
from proxy.registry.scale import ScaleREST
from proxy.registry.store import Store

__all__ = ["SubresourceStorages", "subresource_storages"]

SubresourceStorages = Callable[[ResourceInfo, str, Store], SubresourceStorage | None]


def subresource_storages(
    read: ObjectReader, kubelet: KubeletClientConfig, slices: SliceLister,
    cluster: Transport = None,
) -> SubresourceStorages:  # fmt: skip
    """The storage of a resource's subresource over the resource's store; None where the
    resource's own store serves it. ``read``: pods, nodes and services for the connect
    subresources; ``kubelet``: how the kubelets are reached; ``slices``: a namespace's
    EndpointSlices; ``cluster``: how pod IPs are reached (the egress selector)."""

    def storage(
        resource: ResourceInfo, subresource: str, store: Store
    ) -> SubresourceStorage | None:
        if subresource == "scale":
            return ScaleREST(store, SPEC_REPLICAS)
        if subresource == "binding" and (resource.group, resource.plural) == ("", "pods"):
            return BindingREST(store)
        if subresource == "proxy" and (resource.group, resource.plural) == ("", "services"):
            return ServiceProxyREST(read, slices, cluster)
        return connect_storage(resource, subresource, read, kubelet, cluster)

    return storage
