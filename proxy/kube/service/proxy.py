"""``services/proxy`` (upstream's service ``ProxyREST`` over the Service REST's
``ResourceLocation``): a request to ``/api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]
/proxy/PATH`` goes to one ready endpoint of the Service, picked at random as upstream
does, through the egress selector's ``cluster`` network (the pod IPs):

- a port *number* is the service port's name (503 ``no service port N found for
  service "x"`` when the Service has none such); a port name is used as given, no port
  is the unnamed port;
- the endpoints are those of the Service's EndpointSlices (label
  ``kubernetes.io/service-name``; upstream reads the EndpointSlices since the Endpoints
  API was deprecated), ready (``conditions.ready`` unset or true), of a slice carrying
  the port by that name, at that slice port;
- an address is used only when its ``targetRef`` is a Pod of the namespace that has
  that IP (upstream's ``isValidAddress``), so an EndpointSlice written by hand cannot
  point the server at anything but a pod;
- none: 503 ``no endpoints available for service "x"``.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from proxy import apierrors
from proxy.kube.pod_connect import (
    Options,
    ProxyOptions,
    Transport,
    is_global_unicast,
    proxy_location,
    split_scheme_name_port,
)
from proxy.kube.token import ObjectReader
from proxy.registry.rest import ConnectTarget, Context

__all__ = ["SERVICE_NAME_LABEL", "ServiceProxyREST", "SliceLister"]

JSON = dict[str, Any]
# namespace -> the EndpointSlices of that namespace
SliceLister = Callable[[str], Awaitable[list[JSON]]]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def _unavailable(message: str) -> apierrors.StatusError:
    """``errors.NewServiceUnavailable``: 503, no details."""
    return apierrors.StatusError(apierrors.status_body(503, "ServiceUnavailable", message))


def _port_name(service: JSON, name: str, port: str) -> str:
    """The service port's name a port number stands for (a name as given)."""
    if not port.isdigit():
        return port
    for p in (service.get("spec") or {}).get("ports") or []:
        if str(p.get("port")) == str(int(port)):
            return str(p.get("name") or "")
    raise _unavailable(f'no service port {int(port)} found for service "{name}"')


def _candidates(slices: list[JSON], port_name: str) -> list[tuple[JSON, int]]:
    """(endpoint, port) of every ready endpoint of a slice that has the port."""
    out: list[tuple[JSON, int]] = []
    for s in slices:
        ports = [p for p in s.get("ports") or [] if (p.get("name") or "") == port_name]
        if not ports or ports[0].get("port") is None:
            continue
        for endpoint in s.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            out.append((endpoint, int(ports[0]["port"])))
    return out


@dataclass(frozen=True)
class ServiceProxyREST(ProxyOptions):
    options_kind = "ServiceProxyOptions"
    read: ObjectReader
    slices: SliceLister
    transport: Transport

    async def connect(self, ctx: Context, name: str, options: Options, path: str) -> ConnectTarget:
        split = split_scheme_name_port(name)
        if split is None:
            raise apierrors.bad_request(f'invalid service request "{name}"')
        scheme, service_name, port = split
        service = await self.read("services", ctx.namespace, service_name)
        port_name = _port_name(service, service_name, port)
        slices = [s for s in await self.slices(ctx.namespace)
                  if ((s.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL)
                  == service_name]  # fmt: skip
        if not any(s.get("endpoints") for s in slices):
            raise _unavailable(f'no endpoints available for service "{service_name}"')
        candidates = _candidates(slices, port_name)
        random.shuffle(candidates)
        for endpoint, target_port in candidates:
            for address in endpoint.get("addresses") or []:
                if await self._valid(ctx, endpoint, str(address)):
                    url = proxy_location(scheme, str(address), str(target_port), path, options)
                    return ConnectTarget(url, False, name=service_name, transport=self.transport)
        raise _unavailable(f'no endpoints available for service "{name}"')

    async def _valid(self, ctx: Context, endpoint: JSON, address: str) -> bool:
        """``isValidAddress``: the endpoint names a Pod of the namespace holding
        ``address``."""
        ref = endpoint.get("targetRef") or {}
        if ref.get("kind") != "Pod" or not ref.get("name") or not is_global_unicast(address):
            return False
        if (ref.get("namespace") or ctx.namespace) != ctx.namespace:
            return False
        try:
            pod = await self.read("pods", ctx.namespace, str(ref["name"]))
        except apierrors.StatusError:
            return False
        status = pod.get("status") or {}
        ips = {str(i.get("ip")) for i in status.get("podIPs") or []} | {status.get("podIP")}
        return address in ips
