"""networking.k8s.io rows, as upstream's printers_test expects them (TestPrintIngress,
TestPrintIngressClass, TestPrintNetworkPolicy, TestPrintServiceCIDR, TestPrintIPAddress)."""

from __future__ import annotations

from typing import Any

from tests.unit.proxy.printers.support import cells, columns
from tests.unit.proxy.resources import Res


def _res(kind: str, plural: str, namespaced: bool = False) -> Res:
    return Res("networking.k8s.io", "v1", kind, plural, namespaced=namespaced)


INGRESS = _res("Ingress", "ingresses", namespaced=True)


def _ingress(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "test1"}, "spec": spec}


def test_ingress_row_and_columns() -> None:
    ing = _ingress(
        ingressClassName="foo",
        rules=[{"host": "a.example"}, {"host": ""}, {"host": "c.example"}, {"host": "d"}],
        tls=[{"hosts": ["a.example"]}],
    )
    ing["status"] = {"loadBalancer": {"ingress": [
        {"ip": "2.3.4.5"}, {"hostname": "lb.example"}, {"ip": "2.3.4.5"}, {"ip": "1.1.1.1"},
    ]}}  # fmt: skip
    assert columns(INGRESS) == ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
    assert cells(INGRESS, ing) == [
        "test1", "foo", "a.example,c.example,d", "1.1.1.1,2.3.4.5,lb.example",
        "80, 443", "<unknown>",
    ]  # fmt: skip


def test_ingress_hosts_past_three_count_rules() -> None:
    rules = [{"host": h} for h in ("a", "b", "c", "d", "e")]
    assert cells(INGRESS, _ingress(rules=rules))[2] == "a,b,c + 2 more..."


def test_ingress_without_class_hosts_or_tls() -> None:
    assert cells(INGRESS, _ingress()) == ["test1", "<none>", "*", "", "80", "<unknown>"]


def test_ingress_class_parameters() -> None:
    res = _res("IngressClass", "ingressclasses")
    spec: dict[str, Any] = {"controller": "example.com/controller"}
    obj = {"metadata": {"name": "c"}, "spec": spec}
    assert cells(res, obj) == ["c", "example.com/controller", "<none>", "<unknown>"]
    spec["parameters"] = {"apiGroup": "example.com", "kind": "customgroup", "name": "custom"}
    assert cells(res, obj)[2] == "customgroup.example.com/custom"
    spec["parameters"] = {"kind": "ConfigMap", "name": "p"}
    assert cells(res, obj)[2] == "ConfigMap/p"


def test_network_policy_selector() -> None:
    res = _res("NetworkPolicy", "networkpolicies", namespaced=True)
    obj: dict[str, Any] = {"metadata": {"name": "np"}, "spec": {"podSelector": {}}}
    assert columns(res) == ["Name", "Pod-Selector", "Age"]
    assert cells(res, obj) == ["np", "<none>", "<unknown>"]
    obj["spec"]["podSelector"] = {"matchLabels": {"app": "web", "tier": "fe"}}
    assert cells(res, obj)[1] == "app=web,tier=fe"


def test_service_cidr_and_ip_address() -> None:
    cidr = _res("ServiceCIDR", "servicecidrs")
    obj = {"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.96.0.0/12", "fd00::/108"]}}
    assert columns(cidr) == ["Name", "CIDRs", "Age"]
    assert cells(cidr, obj) == ["kubernetes", "10.96.0.0/12,fd00::/108", "<unknown>"]
    ip = _res("IPAddress", "ipaddresses")
    ref = {"group": "", "resource": "services", "namespace": "default", "name": "kubernetes"}
    addr = {"metadata": {"name": "10.96.0.1"}, "spec": {"parentRef": ref}}
    assert columns(ip) == ["Name", "ParentRef"]
    assert cells(ip, addr)[:2] == ["10.96.0.1", "services/default/kubernetes"]
    ref.update(group="Gateway.networking.k8s.io", resource="Gateways", namespace="")
    assert cells(ip, addr)[1] == "gateways.gateway.networking.k8s.io/kubernetes"
    assert cells(ip, {"metadata": {"name": "x"}, "spec": {}})[1] == "<none>"
