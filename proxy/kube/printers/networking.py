"""Column handlers of the ``networking.k8s.io`` group (kubectl's ``printIngress``,
``printIngressClass``, ``printNetworkPolicy``, ``printServiceCIDR``, ``printIPAddress``).
Server-side printing is wide (upstream's table convertor asks ``Wide: true``), so an
Ingress's addresses are never clipped."""

from __future__ import annotations

import datetime as dt

from proxy.printers.columns import (
    AGE,
    JSON,
    NAME,
    Column,
    Row,
    TablePrinter,
    as_list,
    format_label_selector,
    lookup,
    name_age,
)

__all__ = ["HANDLERS"]

_NET = "io.k8s.api.networking.v1."
_HOSTS_SHOWN = 3  # formatHosts' max

_CLASS = "The name of the IngressClass resource that should be used for additional configuration"
_HOSTS = "Hosts that incoming requests are matched against before the ingress rule"
_ADDRESS = "Address is a list containing ingress points for the load-balancer"
INGRESS_COLUMNS = (
    NAME,
    Column("Class", description=_CLASS),
    Column("Hosts", description=_HOSTS),
    Column("Address", description=_ADDRESS),
    Column("Ports", description="Ports of TLS configurations that open"),
    AGE,
)
INGRESS_CLASS_COLUMNS = (
    NAME,
    Column("Controller", description="Controller that is responsible for handling this class"),
    Column("Parameters", description="A reference to a resource with additional parameters"),
    AGE,
)
NETWORK_POLICY_COLUMNS = (
    NAME,
    Column("Pod-Selector", doc=_NET + "NetworkPolicySpec.podSelector"),
    AGE,
)
SERVICE_CIDR_COLUMNS = (NAME, Column("CIDRs", doc=_NET + "ServiceCIDRSpec.cidrs"), AGE)
# upstream defines two columns and prints three cells (the age is never shown): kept so
IP_ADDRESS_COLUMNS = (NAME, Column("ParentRef", doc=_NET + "IPAddressSpec.parentRef"))


def _hosts(rules: JSON) -> str:
    """``formatHosts``: hosts until three are shown (rules without one are skipped), then
    ``+ N more...`` counting rules, not hosts; none: ``*``."""
    rules = as_list(rules)
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == _HOSTS_SHOWN:
            more = True
        host = lookup(rule, "host")
        if not more and host:
            hosts.append(str(host))
    if not hosts:
        return "*"
    shown = ",".join(hosts)
    return f"{shown} + {len(rules) - _HOSTS_SHOWN} more..." if more else shown


def _ingress_addresses(obj: dict[str, JSON]) -> str:
    """``ingressLoadBalancerStatusStringer`` (wide): each point's IP, else its hostname,
    sorted and unique."""
    found: set[str] = set()
    for point in as_list(lookup(obj, "status", "loadBalancer", "ingress")):
        value = lookup(point, "ip") or lookup(point, "hostname")
        if value:
            found.add(str(value))
    return ",".join(sorted(found))


def print_ingress(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(obj, now)
    class_name = lookup(obj, "spec", "ingressClassName")
    ports = "80, 443" if as_list(lookup(obj, "spec", "tls")) else "80"
    cells = [name, str(class_name) if class_name is not None else "<none>",
             _hosts(lookup(obj, "spec", "rules")), _ingress_addresses(obj), ports, age]  # fmt: skip
    return cells, []


def print_ingress_class(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(obj, now)
    params = lookup(obj, "spec", "parameters")
    shown = "<none>"
    if isinstance(params, dict):
        group = params.get("apiGroup")
        kind = str(params.get("kind") or "") + (f".{group}" if group is not None else "")
        shown = f"{kind}/{params.get('name') or ''}"
    return [name, str(lookup(obj, "spec", "controller") or ""), shown, age], []


def print_network_policy(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(obj, now)
    # metav1.FormatLabelSelector: an empty selector (every pod) reads <none>
    selector = format_label_selector(lookup(obj, "spec", "podSelector")) or "<none>"
    return [name, selector, age], []


def print_service_cidr(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(obj, now)
    cidrs = ",".join(str(c) for c in as_list(lookup(obj, "spec", "cidrs")))
    return [name, cidrs, age], []


def print_ip_address(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(obj, now)
    ref = lookup(obj, "spec", "parentRef")
    parent = "<none>"
    if isinstance(ref, dict):
        # schema.GroupResource.String(), lower-cased: resource[.group]
        resource, group = str(ref.get("resource") or ""), str(ref.get("group") or "")
        parent = (f"{resource}.{group}" if group else resource).lower()
        if ref.get("namespace"):
            parent += f"/{ref['namespace']}"
        parent += f"/{ref.get('name') or ''}"
    return [name, parent, age], []


# kubectl's handler for the networking.k8s.io group, by resource
HANDLERS: dict[str, TablePrinter] = {
    "ingresses": TablePrinter(INGRESS_COLUMNS, print_ingress),
    "ingressclasses": TablePrinter(INGRESS_CLASS_COLUMNS, print_ingress_class),
    "networkpolicies": TablePrinter(NETWORK_POLICY_COLUMNS, print_network_policy),
    "servicecidrs": TablePrinter(SERVICE_CIDR_COLUMNS, print_service_cidr),
    "ipaddresses": TablePrinter(IP_ADDRESS_COLUMNS, print_ip_address),
}
