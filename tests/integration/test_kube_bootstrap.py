"""What kube-apiserver writes at start: the ``default/kubernetes`` Service with its
Endpoints and EndpointSlice (upstream's e2e suite cannot start without it: "Failed to
get kubernetes service ClusterIP"), and ``kube-system/extension-apiserver-
authentication`` with the client CA and request-header settings."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import aiohttp
import pytest

from etcdclient import EtcdClient
from proxy.kube.bootstrap.cluster_authentication import ClusterAuthentication, authentication_data
from proxy.kube.bootstrap.kubernetes_service import advertise_address, first_service_ip
from proxy.kube.bootstrap.master_leases import MasterLeases
from proxy.kube.bootstrap.writer import BootstrapWriter
from proxy.loopback.client import LoopbackClient
from proxy.loopback.config import LoopbackConfig
from proxy.options.settings import ConfigError, Settings, load_settings
from tests.integration.conftest import JSON, ServerFactory


async def _eventually(http: aiohttp.ClientSession, path: str) -> JSON:
    """The object at ``path`` once the bootstrap controller has written it (≤ 10 s)."""
    for _ in range(100):
        async with http.get(path) as resp:
            if resp.status == 200:
                return await resp.json()  # type: ignore[no-any-return]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} never appeared")


async def test_the_kubernetes_service_and_its_endpoints(server_factory: ServerFactory) -> None:
    proc = server_factory("--service-cluster-ip-range=10.100.0.0/16")
    port = int(proc.url.rsplit(":", 1)[1])
    async with aiohttp.ClientSession(base_url=proc.url) as http:
        svc = await _eventually(http, "/api/v1/namespaces/default/services/kubernetes")
        assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
        assert svc["spec"] == {
            "type": "ClusterIP", "clusterIP": "10.100.0.1", "clusterIPs": ["10.100.0.1"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
        }  # fmt: skip
        ep = await _eventually(http, "/api/v1/namespaces/default/endpoints/kubernetes")
        assert ep["subsets"] == [{
            "addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }]  # fmt: skip
        slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"
        eps = await _eventually(http, slices)
        assert eps["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
        assert eps["addressType"] == "IPv4"
        assert eps["endpoints"] == [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]
        assert eps["ports"] == [{"name": "https", "port": port, "protocol": "TCP"}]
        cm = await _eventually(
            http, "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
        )
        assert cm.get("data", {}) == {}  # no client CA, no front proxy: nothing to trust


async def test_republishing_unchanged_authentication_data_writes_nothing(
    server_factory: ServerFactory,
) -> None:
    """The controller publishes again every minute, on every server: with nothing to
    trust (``data`` empty, which storage omits) that must be no write. It was one per
    server per minute, for ever: etcd's revision moving on an idle cluster, and every
    consistent read after it paying for a progress request."""
    proc = server_factory()
    path = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
    async with aiohttp.ClientSession(base_url=proc.url) as http:
        before = await _eventually(http, path)
        await asyncio.sleep(1.1)  # a write now would carry a new managedFields time
        loopback = LoopbackClient(LoopbackConfig(proc.url, token="unused-on-the-plain-port"))
        try:
            writer = BootstrapWriter(loopback)
            published = ClusterAuthentication(authentication_data(Settings()))
            assert await published.publish_once(writer)
        finally:
            await loopback.close()
        async with http.get(path) as resp:
            after = await resp.json()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_a_second_server_with_no_endpoint_reconciler_leaves_them_alone(
    server_factory: ServerFactory,
) -> None:
    """Two servers on one etcd prefix on different ports: the second, with
    ``--endpoint-reconciler-type=none`` (as the bench's and the lab demos' extra servers
    run), never rewrites the first one's port into the Service or its endpoints; they
    would otherwise be rewritten every reconcile, moving etcd's revision for ever."""
    prefix = f"/t-{uuid.uuid4().hex[:12]}/registry"
    first = server_factory(prefix=prefix)
    port = int(first.url.rsplit(":", 1)[1])
    async with aiohttp.ClientSession(base_url=first.url) as http:
        ep = await _eventually(http, "/api/v1/namespaces/default/endpoints/kubernetes")
        second = server_factory("--endpoint-reconciler-type=none", prefix=prefix)
        async with (
            aiohttp.ClientSession(base_url=second.url) as other,
            other.get("/readyz/poststarthook/bootstrap-controller") as resp,
        ):
            assert resp.status == 200
        async with http.get("/api/v1/namespaces/default/endpoints/kubernetes") as resp:
            after = await resp.json()
        assert after["metadata"]["resourceVersion"] == ep["metadata"]["resourceVersion"]
        assert after["subsets"][0]["ports"][0]["port"] == port
        svc = await _eventually(http, "/api/v1/namespaces/default/services/kubernetes")
        assert svc["spec"]["ports"][0]["targetPort"] == port


async def test_the_default_service_cidr_is_created_ready_and_comes_back(
    server_factory: ServerFactory,
) -> None:
    """Upstream 1.33+ (defaultservicecidr): ServiceCIDR ``kubernetes`` holds
    ``--service-cluster-ip-range``, its Ready condition applied by the
    kubernetes-service-cidr-controller field manager; /readyz waits for it; a deleted one
    is created again; ``kubectl get servicecidr`` shows its CIDRs."""
    proc = server_factory("--service-cluster-ip-range=10.100.0.0/16")
    path = "/apis/networking.k8s.io/v1/servicecidrs/kubernetes"
    async with aiohttp.ClientSession(base_url=proc.url) as http:
        async with http.get("/readyz/poststarthook/start-kubernetes-service-cidr-controller") as r:
            assert r.status == 200, await r.text()
        cidr = await _eventually(http, path)
        assert cidr["spec"] == {"cidrs": ["10.100.0.0/16"]}
        (ready,) = cidr["status"]["conditions"]
        assert (ready["type"], ready["status"], ready["message"]) == (
            "Ready", "True", "Kubernetes default Service CIDR is ready",
        )  # fmt: skip
        managers = {(m["manager"], m["operation"], m.get("subresource", ""))
                    for m in cidr["metadata"]["managedFields"]}  # fmt: skip
        assert ("kubernetes-service-cidr-controller", "Apply", "status") in managers
        table = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
        async with http.get(path, headers=table) as r:
            row = (await r.json())["rows"][0]["cells"]
        assert row[:2] == ["kubernetes", "10.100.0.0/16"]
        async with http.delete(path) as r:
            assert r.status == 200
        async with asyncio.timeout(30):  # the next round (every 10 s) creates it again
            while True:
                async with http.get(path) as r:
                    again = await r.json() if r.status == 200 else None
                if again and again["metadata"]["uid"] != cidr["metadata"]["uid"]:
                    break
                await asyncio.sleep(0.2)


def test_an_unknown_endpoint_reconciler_type_is_refused() -> None:
    with pytest.raises(ConfigError, match="one of lease, master-count, none"):
        load_settings(["--etcd-servers=http://127.0.0.1:2379", "--endpoint-reconciler-type=x"])


async def test_master_leases_list_the_live_servers_only(client: EtcdClient) -> None:
    """Upstream's lease reconciler: each server's key lives under an etcd lease; one that
    stops refreshing drops out when its lease expires."""
    leases = MasterLeases(client, f"/t-{uuid.uuid4().hex[:12]}/registry", ttl=2)
    await leases.update("10.0.0.2")
    await leases.update("10.0.0.1")
    assert await leases.addresses() == ["10.0.0.1", "10.0.0.2"]
    async with asyncio.timeout(15):
        while await leases.addresses() != ["10.0.0.1"]:
            await leases.update("10.0.0.1")  # alive; 10.0.0.2 is not refreshed
            await asyncio.sleep(0.5)
    await leases.remove("10.0.0.1")
    assert await leases.addresses() == []


async def test_the_endpoints_drop_a_replica_whose_lease_expired(
    server_factory: ServerFactory, client: EtcdClient
) -> None:
    """With the lease reconciler (upstream's default) the endpoints list every live server: another
    replica's lease appears in them, and once its key is gone the next reconcile (every
    10 s) drops it; master-count would keep it for ever."""
    prefix = f"/t-{uuid.uuid4().hex[:12]}/registry"
    other = MasterLeases(client, prefix)
    await other.update("127.0.0.9")  # a replica alive at start
    proc = server_factory("--endpoint-reconciler-type=lease", prefix=prefix)
    path = "/api/v1/namespaces/default/endpoints/kubernetes"
    async with aiohttp.ClientSession(base_url=proc.url) as http:
        ep = await _eventually(http, path)
        assert [a["ip"] for a in ep["subsets"][0]["addresses"]] == ["127.0.0.1", "127.0.0.9"]
        await other.remove("127.0.0.9")  # it died (as when its lease expires)
        async with asyncio.timeout(25):
            while True:
                async with http.get(path) as resp:
                    ep = await resp.json()
                if [a["ip"] for a in ep["subsets"][0]["addresses"]] == ["127.0.0.1"]:
                    break
                await asyncio.sleep(0.2)
    assert await MasterLeases(client, prefix).addresses() == ["127.0.0.1"]


def test_the_service_ip_is_the_ranges_first() -> None:
    assert first_service_ip("10.96.0.0/12") == "10.96.0.1"
    assert first_service_ip("fd00:10:96::/112") == "fd00:10:96::1"
    assert advertise_address("10.0.0.7", "0.0.0.0") == "10.0.0.7"
    assert advertise_address("", "192.168.1.2") == "192.168.1.2"
    assert advertise_address("", "0.0.0.0") not in ("", "0.0.0.0")


def test_the_published_authentication_data(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n")
    settings = Settings(
        client_ca_file=str(ca), requestheader_client_ca_file=str(ca),
        requestheader_allowed_names=("front-proxy-client",),
        requestheader_username_headers=("X-Remote-User",),
        requestheader_group_headers=("X-Remote-Group",),
        requestheader_extra_headers_prefix=("X-Remote-Extra-",),
    )  # fmt: skip
    data = authentication_data(settings)
    assert data["client-ca-file"] == data["requestheader-client-ca-file"] == ca.read_text()
    assert json.loads(data["requestheader-allowed-names"]) == ["front-proxy-client"]
    assert data["requestheader-username-headers"] == '["X-Remote-User"]'  # Go's json.Marshal
    assert data["requestheader-group-headers"] == '["X-Remote-Group"]'
    assert data["requestheader-extra-headers-prefix"] == '["X-Remote-Extra-"]'
    assert "requestheader-uid-headers" not in data
    assert authentication_data(Settings()) == {}
