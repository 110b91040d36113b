"""The core group's defaults (``pkg/apis/core/v1/defaults.go``, ``SetObjectDefaults_*``
of its ``zz_generated.defaults.go`` and the ``+default`` markers of
``k8s.io/api/core/v1``), one function per kind.

Not here: ``SetDefaults_ResourceList`` (quantities rounded up to milli units: the
quantity's canonical form is the encoder's business, see docs/defaulting.md), and what
the kinds' REST strategies set on create (a Pod's status, a Namespace's ``kubernetes``
finalizer: ``proxy.registry.object_meta``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from proxy.kube.defaulting.fields import (
    JSON,
    child,
    default_nil,
    default_zero,
    dicts,
    drop_empty,
    member,
)
from proxy.kube.defaulting.pod_spec import (
    _legacy_sources,
    default_persistent_volume_claim_spec,
    default_pod_spec,
    default_pod_template,
)

__all__ = ["DEFAULTERS"]


def _requests_from_limits(ctr: JSON) -> None:
    """A Pod's container with limits but no request for a resource requests its limit."""
    resources = member(ctr, "resources")
    limits = member(resources, "limits") if resources is not None else None
    if resources is None or limits is None:
        return
    requests = child(resources, "requests")
    if requests is None:
        return
    for key, value in limits.items():
        requests.setdefault(key, copy.deepcopy(value))
    drop_empty(resources, "requests")  # an empty map is omitted, as Go's omitempty


def _host_network_ports(spec: JSON) -> None:
    """``defaultHostNetworkPorts``: with the host's network a port's hostPort is its
    containerPort."""
    for kind in ("containers", "initContainers"):
        for ctr in dicts(spec, kind):
            for port in dicts(ctr, "ports"):
                default_zero(port, "hostPort", port.get("containerPort"))


def pod(obj: JSON) -> None:
    """``SetObjectDefaults_Pod``: ``SetDefaults_Pod`` (requests from limits,
    enableServiceLinks, host-network ports; a template never gets these), then
    ``SetDefaults_PodSpec`` and the spec's members."""
    spec = child(obj, "spec")
    if spec is None:
        return
    for kind in ("containers", "initContainers"):
        for ctr in dicts(spec, kind):
            _requests_from_limits(ctr)
    default_nil(spec, "enableServiceLinks", True)
    if spec.get("hostNetwork") is True:
        _host_network_ports(spec)
    default_pod_spec(spec)


def pod_template(obj: JSON) -> None:
    """``SetObjectDefaults_PodTemplate``."""
    default_pod_template(obj)


def replication_controller(obj: JSON) -> None:
    """``SetDefaults_ReplicationController``: selector and labels from the template's
    labels when unset; ``spec.replicas`` ``+default=1``."""
    spec = child(obj, "spec")
    if spec is None:
        return
    template = member(spec, "template")
    template_meta = member(template, "metadata") if template is not None else None
    labels = template_meta.get("labels") if template_meta is not None else None
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec["selector"] = copy.deepcopy(labels)
        meta = child(obj, "metadata")
        if meta is not None and not meta.get("labels"):
            meta["labels"] = copy.deepcopy(labels)
    default_nil(spec, "replicas", 1)
    default_pod_template(spec)


def _externally_accessible(spec: JSON) -> bool:
    """``service.ExternallyAccessible``: a LoadBalancer, a NodePort, or a ClusterIP
    service with external IPs."""
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs"))
    )


def _service_ports(spec: JSON) -> None:
    """Each port's protocol (TCP) and targetPort (the port, when 0 or "")."""
    for port in dicts(spec, "ports"):
        default_zero(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port", 0)


def service(obj: JSON) -> None:
    """``SetDefaults_Service``."""
    spec = child(obj, "spec")
    if spec is None:
        return
    default_zero(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = member(spec, "sessionAffinityConfig")
        client_ip = member(config, "clientIP") if config is not None else None
        if client_ip is None or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    default_zero(spec, "type", "ClusterIP")
    _service_ports(spec)
    if _externally_accessible(spec):
        default_zero(spec, "externalTrafficPolicy", "Cluster")
    if spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
        default_nil(spec, "internalTrafficPolicy", "Cluster")
    if spec["type"] == "LoadBalancer":
        default_nil(spec, "allocateLoadBalancerNodePorts", True)
        status = member(obj, "status")
        balancer = member(status, "loadBalancer") if status is not None else None
        for ingress in dicts(balancer, "ingress"):
            if ingress.get("ip"):
                default_nil(ingress, "ipMode", "VIP")


def endpoints(obj: JSON) -> None:
    """``SetDefaults_Endpoints``: each port's protocol."""
    for subset in dicts(obj, "subsets"):
        for port in dicts(subset, "ports"):
            default_zero(port, "protocol", "TCP")


def namespace(obj: JSON) -> None:
    """``SetDefaults_Namespace`` (the ``kubernetes.io/metadata.name`` label, once the
    namespace has a name) and ``SetDefaults_NamespaceStatus`` (phase Active)."""
    meta = child(obj, "metadata")
    name = meta.get("name") if meta is not None else None
    if meta is not None and isinstance(name, str) and name:
        labels = child(meta, "labels")
        if labels is not None:
            labels["kubernetes.io/metadata.name"] = name
    if (status := child(obj, "status")) is not None:
        default_zero(status, "phase", "Active")


def node(obj: JSON) -> None:
    """``SetDefaults_NodeStatus``: allocatable is the capacity when unset."""
    status = member(obj, "status")
    if status is not None and status.get("allocatable") is None:
        capacity = member(status, "capacity")
        if capacity is not None:
            status["allocatable"] = copy.deepcopy(capacity)


def persistent_volume(obj: JSON) -> None:
    """``SetDefaults_PersistentVolume`` and its source's defaults."""
    if (status := child(obj, "status")) is not None:
        default_zero(status, "phase", "Pending")
    spec = child(obj, "spec")
    if spec is None:
        return
    default_zero(spec, "persistentVolumeReclaimPolicy", "Retain")
    default_nil(spec, "volumeMode", "Filesystem")
    if (host_path := member(spec, "hostPath")) is not None:
        default_nil(host_path, "type", "")
    _legacy_sources(spec)


def persistent_volume_claim(obj: JSON) -> None:
    """``SetDefaults_PersistentVolumeClaim`` (phase Pending) and its spec's."""
    if (status := child(obj, "status")) is not None:
        default_zero(status, "phase", "Pending")
    if (spec := child(obj, "spec")) is not None:
        default_persistent_volume_claim_spec(spec)


def secret(obj: JSON) -> None:
    """``SetDefaults_Secret``: type Opaque."""
    default_zero(obj, "type", "Opaque")


def limit_range(obj: JSON) -> None:
    """``SetDefaults_LimitRangeItem``: a Container item's default limit is its max, its
    default request the default limit, else the min."""
    for item in dicts(member(obj, "spec"), "limits"):
        if item.get("type") != "Container":
            continue
        default = child(item, "default")
        request = child(item, "defaultRequest")
        if default is None or request is None:
            continue
        for source, target in ((item.get("max"), default), (default, request),
                               (item.get("min"), request)):  # fmt: skip
            for key, value in (source or {}).items() if isinstance(source, dict) else ():
                target.setdefault(key, copy.deepcopy(value))
        drop_empty(item, "default")
        drop_empty(item, "defaultRequest")


DEFAULTERS: dict[str, Callable[[JSON], None]] = {
    "Pod": pod,
    "PodTemplate": pod_template,
    "ReplicationController": replication_controller,
    "Service": service,
    "Endpoints": endpoints,
    "Namespace": namespace,
    "Node": node,
    "PersistentVolume": persistent_volume,
    "PersistentVolumeClaim": persistent_volume_claim,
    "Secret": secret,
    "LimitRange": limit_range,
}
