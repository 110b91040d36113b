"""How this server reaches a node's kubelet (upstream's ``pkg/kubelet/client``):
``NodeConnectionInfo`` from the Node object — the first of its ``status.addresses``
of the preferred types (``--kubelet-preferred-address-types``) and its
``status.daemonEndpoints.kubeletEndpoint.Port`` — and the TLS it is dialled with: the
``--kubelet-client-certificate``/``--kubelet-client-key`` this server presents, and
the kubelet's serving certificate checked against ``--kubelet-certificate-authority``
(not checked without one, as upstream: kubelets self-sign by default); dialled through
the egress selector's ``cluster`` network when one is configured."""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from proxy import apierrors

__all__ = ["DEFAULT_KUBELET_PORT", "KubeletClientConfig"]

JSON = dict[str, Any]
DEFAULT_KUBELET_PORT = 10250


@dataclass(frozen=True)
class KubeletClientConfig:
    preferred_address_types: tuple[str, ...]
    tls: ssl.SSLContext
    # how the kubelets are dialled: the egress selector's cluster network, as upstream's
    # kubelet client looks it up (None: directly)
    transport: Callable[[], aiohttp.BaseConnector] | None = None

    @classmethod
    def build(
        cls,
        preferred_address_types: tuple[str, ...],
        cert_file: str = "",
        key_file: str = "",
        ca_file: str = "",
        transport: Callable[[], aiohttp.BaseConnector] | None = None,
    ) -> KubeletClientConfig:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if ca_file:
            ctx.load_verify_locations(ca_file)
        else:  # upstream's TLSClientConfig.Insecure when no CA is configured
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if cert_file:
            ctx.load_cert_chain(cert_file, key_file or None)
        return cls(preferred_address_types, ctx, transport)

    def base_url(self, node: JSON) -> str:
        """``https://HOST:PORT`` of ``node``'s kubelet; a 500 Status when the node has no
        address of a preferred type (upstream's ``GetPreferredNodeAddress`` error)."""
        status = node.get("status") or {}
        addresses = status.get("addresses") or []
        host = _preferred_address(addresses, self.preferred_address_types)
        if host is None:
            known = " ".join(f"{{{a.get('type')} {a.get('address')}}}" for a in addresses)
            raise apierrors.internal_error(
                f"no preferred addresses found; known addresses: [{known}]"
            )
        endpoint = (status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
        port = int(endpoint.get("Port") or 0) or DEFAULT_KUBELET_PORT
        return f"https://{_join_host_port(host, port)}"


def _preferred_address(addresses: list[JSON], types: tuple[str, ...]) -> str | None:
    for kind in types:
        for address in addresses:
            if address.get("type") == kind and address.get("address"):
                return str(address["address"])
    return None


def _join_host_port(host: str, port: int) -> str:
    """Go's ``net.JoinHostPort``: an IPv6 address in brackets."""
    try:
        is_v6 = ipaddress.ip_address(host).version == 6
    except ValueError:
        is_v6 = False
    return f"[{host}]:{port}" if is_v6 else f"{host}:{port}"
