"""ClusterIP allocation, as kube-apiserver 1.37 allocates (``pkg/registry/core/service``):
each Service of a ClusterIP type gets a free address of ``--service-cluster-ip-range``
held by an IPAddress object, a taken or foreign address is 422 with upstream's words,
a failed or dry-run write holds nothing, and a deletion releases. Against a real etcd
through ``watchcache serve``."""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from lab.etcd import EtcdCluster
from tests.integration.conftest import ServerProcess, create, start_server

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
# 10.0.0.1-10.0.0.254; dynamic addresses come from above the 16 lowest (KEP-3070), so
# the static ones of these tests (10.0.0.2-16) never meet a dynamic one
CIDR = "10.0.0.0/24"
IPADDRESSES = "/apis/networking.k8s.io/v1/ipaddresses"
NODE_PORTS = "30000-30099"


@pytest.fixture(scope="module")
def small_range_server(etcd: EtcdCluster) -> Iterator[ServerProcess]:
    with start_server(
        etcd.endpoints, None, f"--service-cluster-ip-range={CIDR}",
        f"--service-node-port-range={NODE_PORTS}",
    ) as proc:  # fmt: skip
        yield proc


@pytest.fixture
async def http(small_range_server: ServerProcess) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=small_range_server.url) as session:
        yield session


@pytest.fixture
async def ns(http: aiohttp.ClientSession) -> str:
    name = f"svc-{uuid.uuid4().hex[:10]}"
    await create(http, "/api/v1/namespaces", {"metadata": {"name": name}})
    return name


def service(name: str, **spec: object) -> JSON:
    body: JSON = {"selector": {"app": name}, "ports": [{"port": 80}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


async def status_of(resp: aiohttp.ClientResponse) -> JSON:
    body: JSON = await resp.json()
    return body


async def ip_address(http: aiohttp.ClientSession, ip: str) -> JSON | None:
    async with http.get(f"{IPADDRESSES}/{ip}") as resp:
        if resp.status == 404:
            return None
        assert resp.status == 200, await resp.text()
        return await status_of(resp)


async def test_a_service_gets_a_free_cluster_ip_held_by_an_ip_address(
    http: aiohttp.ClientSession, ns: str
) -> None:
    svc = await create(http, f"/api/v1/namespaces/{ns}/services", service("web"))
    spec = svc["spec"]
    ip = spec["clusterIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(CIDR)
    assert int(ip.rsplit(".", 1)[1]) in range(17, 255)  # the upper band; no broadcast
    assert spec["clusterIPs"] == [ip]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    held = await ip_address(http, ip)
    assert held is not None
    assert held["spec"]["parentRef"] == {
        "group": "", "resource": "services", "namespace": ns, "name": "web"
    }  # fmt: skip
    assert held["metadata"]["labels"] == {
        "ipaddress.kubernetes.io/ip-family": "IPv4",
        "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io",
    }
    # a resubmitted manifest without the address keeps it (patchAllocatedValues)
    body = service("web")
    body["metadata"]["resourceVersion"] = svc["metadata"]["resourceVersion"]
    async with http.put(f"/api/v1/namespaces/{ns}/services/web", json=body) as resp:
        assert resp.status == 200, await resp.text()
        assert (await status_of(resp))["spec"]["clusterIP"] == ip


async def test_a_taken_cluster_ip_is_422_provided_ip_is_already_allocated(
    http: aiohttp.ClientSession, ns: str
) -> None:
    await create(http, f"/api/v1/namespaces/{ns}/services", service("a", clusterIP="10.0.0.9"))
    async with http.post(
        f"/api/v1/namespaces/{ns}/services", json=service("b", clusterIP="10.0.0.9")
    ) as resp:
        body = await status_of(resp)
    assert (resp.status, body["reason"]) == (422, "Invalid"), body
    assert body["message"] == (
        'Service "b" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.9"}: '
        "failed to allocate IP 10.0.0.9: provided IP is already allocated"
    )
    assert body["details"]["causes"] == [{
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: []string{"10.0.0.9"}: failed to allocate IP 10.0.0.9: '
        "provided IP is already allocated",
        "field": "spec.clusterIPs",
    }]  # fmt: skip


async def test_an_address_outside_the_range_is_422(http: aiohttp.ClientSession, ns: str) -> None:
    cases = {
        "192.168.7.7": "the provided network does not match the current range",
        "10.0.0.0": "the provided IP (10.0.0.0) is not in the valid range. "
        f"The range of valid IPs is {CIDR}",
    }
    for ip, words in cases.items():
        async with http.post(
            f"/api/v1/namespaces/{ns}/services", json=service("out", clusterIP=ip)
        ) as resp:
            body = await status_of(resp)
        assert resp.status == 422, body
        assert body["message"].endswith(f"failed to allocate IP {ip}: {words}"), body


async def test_deletion_releases_the_address(http: aiohttp.ClientSession, ns: str) -> None:
    path = f"/api/v1/namespaces/{ns}/services"
    await create(http, path, service("first", clusterIP="10.0.0.10"))
    async with http.delete(f"{path}/first") as resp:
        assert resp.status == 200
    assert await ip_address(http, "10.0.0.10") is None
    again = await create(http, path, service("second", clusterIP="10.0.0.10"))
    assert again["spec"]["clusterIP"] == "10.0.0.10"


async def test_a_failed_or_dry_run_create_holds_no_address(
    http: aiohttp.ClientSession, ns: str
) -> None:
    path = f"/api/v1/namespaces/{ns}/services"
    bad = service("bad", clusterIP="10.0.0.11")
    bad["spec"]["ports"] = [{"port": 0}]  # invalid: validation runs after allocation
    async with http.post(path, json=bad) as resp:
        assert resp.status == 422, await resp.text()
    assert await ip_address(http, "10.0.0.11") is None
    async with http.post(f"{path}?dryRun=All", json=service("dry")) as resp:
        dry = await status_of(resp)
        assert resp.status == 201, dry
    # upstream's allocator answers a dry run with the range's base address
    assert dry["spec"]["clusterIP"] == "10.0.0.0"
    async with http.get(IPADDRESSES) as resp:
        held = {i["metadata"]["name"] for i in (await status_of(resp))["items"]}
    assert "10.0.0.0" not in held
    async with http.post(f"{path}?dryRun=All", json=service("dry2", clusterIP="10.0.0.12")) as resp:
        assert resp.status == 201
    assert await ip_address(http, "10.0.0.12") is None


async def test_headless_and_external_name_services_get_no_address(
    http: aiohttp.ClientSession, ns: str
) -> None:
    path = f"/api/v1/namespaces/{ns}/services"
    headless = await create(http, path, service("hl", clusterIP="None"))
    assert headless["spec"]["clusterIPs"] == ["None"]
    assert headless["spec"]["ipFamilies"] == ["IPv4"]
    external = {"type": "ExternalName", "externalName": "example.com"}
    ext = await create(http, path, service("ext", **external))
    assert "clusterIP" not in ext["spec"] and "ipFamilies" not in ext["spec"]
    # ExternalName -> ClusterIP allocates; back to ExternalName releases once written
    body = service("ext", type="ClusterIP")
    async with http.put(f"{path}/ext", json=body) as resp:
        moved = await status_of(resp)
        assert resp.status == 200, moved
    ip = moved["spec"]["clusterIP"]
    assert await ip_address(http, ip) is not None
    body = service("ext", **external)
    body["spec"]["clusterIP"] = ""
    async with http.put(f"{path}/ext", json=body) as resp:
        assert resp.status == 200, await resp.text()
    assert await ip_address(http, ip) is None


async def test_dual_stack_requests_on_a_single_stack_cluster_are_422(
    http: aiohttp.ClientSession, ns: str
) -> None:
    path = f"/api/v1/namespaces/{ns}/services"
    async with http.post(path, json=service("ds", ipFamilyPolicy="RequireDualStack")) as resp:
        body = await status_of(resp)
    assert resp.status == 422, body
    assert body["message"] == (
        'Service "ds" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
        "this cluster is not configured for dual-stack services"
    )
    async with http.post(path, json=service("v6", ipFamilies=["IPv6"])) as resp:
        body = await status_of(resp)
    assert resp.status == 422, body
    assert body["message"] == (
        'Service "v6" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": '
        "not configured on this cluster"
    )


async def test_node_port_services_get_node_ports_and_a_taken_one_is_422(
    http: aiohttp.ClientSession, ns: str
) -> None:
    path = f"/api/v1/namespaces/{ns}/services"
    ports = [{"name": "tcp", "port": 53, "protocol": "TCP"},
             {"name": "udp", "port": 53, "protocol": "UDP"}]  # fmt: skip
    svc = await create(http, path, service("np", type="NodePort", ports=ports))
    given = [p["nodePort"] for p in svc["spec"]["ports"]]
    assert given[0] == given[1] and 30000 <= given[0] <= 30099  # one number, one nodePort
    # the 16 lowest ports are left to static requests (KEP-3668): no dynamic one meets it
    await create(http, path, service("fixed", type="NodePort",
                                     ports=[{"port": 80, "nodePort": 30005}]))  # fmt: skip
    cases = {
        30005: "provided port is already allocated",
        31000: "provided port is not in the valid range. "
        f"The range of valid ports is {NODE_PORTS}",
    }
    for port, words in cases.items():
        body = service("taken", type="NodePort", ports=[{"port": 80, "nodePort": port}])
        async with http.post(path, json=body) as resp:
            status = await status_of(resp)
        assert resp.status == 422, status
        assert status["message"] == (
            f'Service "taken" is invalid: spec.ports[0].nodePort: Invalid value: {port}: {words}'
        )
    # a resubmitted manifest keeps its nodePorts; deletion frees them
    body = service("np", type="NodePort", ports=ports)
    body["metadata"]["resourceVersion"] = svc["metadata"]["resourceVersion"]
    async with http.put(f"{path}/np", json=body) as resp:
        kept = await status_of(resp)
        assert resp.status == 200, kept
    assert [p["nodePort"] for p in kept["spec"]["ports"]] == given
    async with http.delete(f"{path}/fixed") as resp:
        assert resp.status == 200
    await create(http, path, service("again", type="NodePort",
                                     ports=[{"port": 80, "nodePort": 30005}]))  # fmt: skip


async def test_a_load_balancer_with_local_traffic_gets_a_health_check_node_port(
    http: aiohttp.ClientSession, ns: str
) -> None:
    path = f"/api/v1/namespaces/{ns}/services"
    svc = await create(http, path, service("lb", type="LoadBalancer",
                                           externalTrafficPolicy="Local"))  # fmt: skip
    spec = svc["spec"]
    assert 30000 <= spec["healthCheckNodePort"] <= 30099
    assert spec["healthCheckNodePort"] != spec["ports"][0]["nodePort"]
    quiet = await create(http, path, service("lb2", type="LoadBalancer",
                                             allocateLoadBalancerNodePorts=False))  # fmt: skip
    assert "nodePort" not in quiet["spec"]["ports"][0]


async def test_an_update_to_node_port_allocates_and_a_failed_one_gives_it_back(
    http: aiohttp.ClientSession, ns: str
) -> None:
    """beginUpdate: a ClusterIP Service made NodePort gets a nodePort; an update refused
    after allocating (validation) holds none (the port is free for the next Service)."""
    path = f"/api/v1/namespaces/{ns}/services"
    svc = await create(http, path, service("grow"))
    bad = {"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30010}],
                    "sessionAffinity": "Sometimes"}}  # fmt: skip
    merge = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{path}/grow", json=bad, headers=merge) as resp:
        assert resp.status == 422, await resp.text()
    await create(http, path, service("holder", type="NodePort",
                                     ports=[{"port": 80, "nodePort": 30010}]))  # fmt: skip
    good = {"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30011}]}}
    async with http.patch(f"{path}/grow", json=good, headers=merge) as resp:
        grown = await status_of(resp)
        assert resp.status == 200, grown
    assert grown["spec"]["ports"][0]["nodePort"] == 30011
    assert grown["spec"]["clusterIP"] == svc["spec"]["clusterIP"]  # kept by the update


async def test_lifting_the_last_finalizer_and_a_delete_collection_release_addresses(
    http: aiohttp.ClientSession, ns: str
) -> None:
    """afterDelete on the two other ways a Service is removed: the update that lifts
    its last finalizer from a deleted Service, and a delete collection."""
    path = f"/api/v1/namespaces/{ns}/services"
    held = service("held", clusterIP="10.0.0.13")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await create(http, path, held)
    async with http.delete(f"{path}/held") as resp:
        assert resp.status == 200  # kept: being deleted
    assert await ip_address(http, "10.0.0.13") is not None
    merge = {"Content-Type": "application/merge-patch+json"}
    lift = {"metadata": {"finalizers": None}}
    async with http.patch(f"{path}/held", json=lift, headers=merge) as resp:
        assert resp.status == 200, await resp.text()
    assert await ip_address(http, "10.0.0.13") is None
    await create(http, path, service("one", clusterIP="10.0.0.14"))
    await create(http, path, service("two", clusterIP="10.0.0.15"))
    async with http.delete(path) as resp:
        assert resp.status == 200, await resp.text()
    assert await ip_address(http, "10.0.0.14") is None
    assert await ip_address(http, "10.0.0.15") is None
