"""Where a ``service`` reference lands (kube-aggregator's ``ServiceResolver``, which
kube-apiserver also gives its admission and conversion webhooks): an APIService's
``spec.service`` and a webhook's ``clientConfig.service``. It lives with the webhooks,
the lower of its two users (the aggregator imports it from here).

Two resolvers, as upstream, chosen by ``--enable-aggregator-routing``:

- ``resolve_cluster`` (the default, ``NewClusterIPServiceResolver``): a ClusterIP
  Service's cluster IP and service port; an ExternalName Service's external name and
  port. A cluster IP is reachable only where kube-proxy (or similar) runs: the lab has
  none, so the lab's own extension server is registered through an ExternalName Service
  (``localhost``) — an upstream path, no extension needed (docs/aggregation.md).
- ``resolve_endpoint`` (``NewEndpointServiceResolver``): one ready address of the
  Service's EndpointSlices (upstream reads EndpointSlices since 1.33), else of its
  Endpoints, with the target port of the service port, as kube-apiserver does with
  ``--enable-aggregator-routing`` (no kube-proxy on the control-plane host).

Either way the TLS server name is ``<name>.<namespace>.svc``, as upstream verifies the
backend's certificate. Errors are :class:`ResolveError` with upstream's words.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Getter", "Lister", "ResolveError", "Resolved", "resolve"]

JSON = dict[str, Any]
# (group, plural, namespace, name) -> the object, or None when absent
Getter = Callable[[str, str, str, str], Awaitable[JSON | None]]
# (group, plural, namespace) -> every object of the namespace
Lister = Callable[[str, str, str], Awaitable[list[JSON]]]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


class ResolveError(Exception):
    """The service cannot be resolved (upstream's message)."""


@dataclass(frozen=True, slots=True)
class Resolved:
    host: str
    port: int
    server_name: str  # the name the backend's certificate must carry

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"


def _spec(obj: JSON) -> JSON:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _service_port(service: JSON, namespace: str, name: str, port: int) -> JSON:
    for p in _spec(service).get("ports") or []:
        if isinstance(p, dict) and p.get("port") == port:
            return p
    raise ResolveError(f"no service port {port} found for service {name!r}")


async def resolve_cluster(get: Getter, namespace: str, name: str, port: int) -> Resolved:
    """``ResolveCluster``: the cluster IP (or external name) and the service port."""
    service = await get("", "services", namespace, name)
    if service is None:
        raise ResolveError(f'service "{name}" not found')
    server_name = f"{name}.{namespace}.svc"
    spec = _spec(service)
    service_type = spec.get("type") or "ClusterIP"
    if service_type == "ExternalName":
        return Resolved(str(spec.get("externalName") or ""), port, server_name)
    if service_type not in ("ClusterIP", "NodePort", "LoadBalancer"):
        raise ResolveError(f"unsupported service type {service_type!r}")
    cluster_ip = spec.get("clusterIP") or ""
    if cluster_ip in ("", "None"):
        raise ResolveError(f"cannot route to service with ClusterIP {cluster_ip!r}")
    _service_port(service, namespace, name, port)
    return Resolved(str(cluster_ip), port, server_name)


def _slice_addresses(slices: list[JSON], port_name: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for s in slices:
        ports = [p for p in s.get("ports") or [] if (p.get("name") or "") == port_name]
        if not ports or not ports[0].get("port"):
            continue
        for endpoint in s.get("endpoints") or []:
            conditions = endpoint.get("conditions") or {}
            if conditions.get("ready") is False:
                continue
            out += [(str(a), int(ports[0]["port"])) for a in endpoint.get("addresses") or []]
    return out


def _endpoints_addresses(endpoints: JSON, port_name: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for subset in endpoints.get("subsets") or []:
        ports = [p for p in subset.get("ports") or [] if (p.get("name") or "") == port_name]
        if not ports:
            continue
        out += [(str(a.get("ip")), int(ports[0]["port"])) for a in subset.get("addresses") or []]
    return out


async def resolve_endpoint(
    get: Getter, list_: Lister, namespace: str, name: str, port: int
) -> Resolved:
    """``ResolveEndpoint``: a random ready endpoint address of the service port."""
    service = await get("", "services", namespace, name)
    if service is None:
        raise ResolveError(f'service "{name}" not found')
    service_type = _spec(service).get("type") or "ClusterIP"
    if service_type not in ("ClusterIP", "NodePort", "LoadBalancer"):
        raise ResolveError(f"unsupported service type {service_type!r}")
    port_name = str(_service_port(service, namespace, name, port).get("name") or "")
    slices = [
        s
        for s in await list_("discovery.k8s.io", "endpointslices", namespace)
        if ((s.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL) == name
    ]
    addresses = _slice_addresses(slices, port_name)
    if not addresses:
        endpoints = await get("", "endpoints", namespace, name)
        if endpoints is not None:
            addresses = _endpoints_addresses(endpoints, port_name)
    if not addresses:
        raise ResolveError(f'no endpoints available for service "{name}"')
    host, target = random.choice(addresses)
    return Resolved(host, target, f"{name}.{namespace}.svc")


async def resolve(
    get: Getter, list_: Lister, namespace: str, name: str, port: int, *, endpoint_routing: bool
) -> Resolved:
    """The resolver ``--enable-aggregator-routing`` selects."""
    if endpoint_routing:
        return await resolve_endpoint(get, list_, namespace, name, port)
    return await resolve_cluster(get, namespace, name, port)
