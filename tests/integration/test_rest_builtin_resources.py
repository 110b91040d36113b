"""Every built-in resource with plain storage is served at its preferred version: CRUD
through its etcd key (historic names included), discovery, OpenAPI and a NAME/AGE table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson
import pytest

from etcdclient import EtcdClient
from lab.etcd import EtcdCluster
from proxy.flowcontrol import bootstrap
from proxy.kube.conversion import VIEWS
from proxy.kube.resources import build_registry
from proxy.registry.resources import ResourceInfo
from storage import codec, keys
from storage.protobuf.serializer import get_serializer
from tests.integration.conftest import ServerProcess, create, start_server

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]

# the fields each kind requires beyond metadata (the smallest valid object)
REQUIRED: dict[str, JSON] = {
    "controllerrevisions": {"revision": 1, "data": {}},
    "horizontalpodautoscalers": {
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 2}
    },
    "ipaddresses": {"spec": {"parentRef": {"resource": "services", "name": "s"}}},
    "storageclasses": {"provisioner": "example.com/p"},
    "volumeattachments": {
        "spec": {"attacher": "a", "nodeName": "n", "source": {"persistentVolumeName": "pv"}}
    },
    "csidrivers": {"spec": {}},
    "csinodes": {"spec": {"drivers": []}},
    "csistoragecapacities": {"storageClassName": "sc"},
    "volumeattributesclasses": {"driverName": "d"},
    "runtimeclasses": {"handler": "runc"},
    "validatingadmissionpolicies": {
        "spec": {
            "matchConstraints": {
                "resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["deployments"],
                }]
            },
            "validations": [{"expression": "object.spec.replicas <= 5"}],
        }
    },
    "validatingadmissionpolicybindings": {
        "spec": {"policyName": "p", "validationActions": ["Deny"]}
    },
    "certificatesigningrequests": {"spec": {"request": "", "signerName": "example.com/s"}},
    "clustertrustbundles": {"spec": {"trustBundle": ""}},
    "podcertificaterequests": {
        "spec": {
            "signerName": "example.com/s",
            "podName": "p",
            "podUID": "u",
            "serviceAccountName": "sa",
            "serviceAccountUID": "u",
            "nodeName": "n",
            "nodeUID": "u",
            "stubPKCS10Request": "",
        }
    },
    "flowschemas": {"spec": {"priorityLevelConfiguration": {"name": "global-default"}}},
    "prioritylevelconfigurations": {"spec": {"type": "Exempt"}},
    "devicetaintrules": {"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}},
    "resourceslices": {
        "spec": {"driver": "d", "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1}}
    },
}

BOOTSTRAPPED = frozenset({
    # kube-apiserver's system PriorityClasses and API Priority and Fairness objects
    "system-node-critical", "system-cluster-critical",
    *bootstrap.MANDATORY_PRIORITY_LEVELS, *bootstrap.SUGGESTED_PRIORITY_LEVELS,
    *bootstrap.MANDATORY_FLOW_SCHEMAS, *bootstrap.SUGGESTED_FLOW_SCHEMAS,
    # the IPAddress that holds the default/kubernetes Service's ClusterIP
    "10.96.0.1",
    # the default ServiceCIDR (start-kubernetes-service-cidr-controller)
    "kubernetes",
})  # fmt: skip

# kube-apiserver's historic etcd paths of these resources (the group is never in the key)
HISTORIC_PATHS = {"replicationcontrollers": "controllers", "ingresses": "ingress"}

FIRST_BRIEF = 23  # the resources served before: their own suites cover them
# CRDs (named <plural>.<group>, serving what they define) have their suite: test_crd.py;
# APIServices (named <version>.<group>, and the server registers its own at start):
# tests/integration/test_apiservices.py
# (the versions served over another's storage have theirs: test_converted_versions.py)
NEW = [
    r for r in list(build_registry())[FIRST_BRIEF:]
    if r.group != "apiextensions.k8s.io" and r.plural != "apiservices"
    and (r.group, r.version, r.plural) not in VIEWS
]


def _base(info: ResourceInfo) -> str:
    return f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"


def _collection(info: ResourceInfo, namespace: str) -> str:
    if info.namespaced:
        return f"{_base(info)}/namespaces/{namespace}/{info.plural}"
    return f"{_base(info)}/{info.plural}"


@pytest.fixture(scope="module")
def cached_server(etcd: EtcdCluster) -> Iterator[ServerProcess]:
    with start_server(etcd.endpoints, None) as proc:
        yield proc


@pytest.mark.parametrize("info", NEW, ids=[r.plural for r in NEW])
async def test_crud_at_its_etcd_key(cached_server: ServerProcess, info: ResourceInfo) -> None:
    ns = f"ns-{info.plural}"[:63]
    async with aiohttp.ClientSession(base_url=cached_server.url) as http:
        if info.namespaced:
            await create(http, "/api/v1/namespaces", {"metadata": {"name": ns}})
        name = f"{info.plural}-1"
        body: JSON = {"apiVersion": info.api_version, "kind": info.kind}
        body["metadata"] = {"name": name, "labels": {"t": "x"}}
        body.update(REQUIRED.get(info.plural, {}))
        created = await create(http, _collection(info, ns), body)
        assert created["kind"] == info.kind and created["apiVersion"] == info.api_version
        rv = created["metadata"]["resourceVersion"]
        # the object sits at kube-apiserver's key for it
        key = keys.object_key(
            info.group, info.plural, name, ns if info.namespaced else "", cached_server.prefix
        )
        path = HISTORIC_PATHS.get(info.plural, info.plural)
        assert key.startswith(f"{cached_server.prefix}/{path}/")
        async with EtcdClient(list(cached_server.etcd_servers)) as client:
            stored = await client.get(key.encode())
        assert stored.kv is not None
        # protobuf, as kube-apiserver stores it, where the 0.32 schema has the kind (kinds
        # newer than it, e.g. networking.k8s.io/v1 IPAddress, are stored as JSON)
        in_schema = get_serializer().knows(info.api_version, info.kind)
        assert stored.kv.value.startswith(b"k8s\x00") == in_schema
        assert codec.decode_object(key, stored.kv.value)["kind"] == info.kind
        # an RV=0 LIST from the watch cache (at least as new as the write)
        path = f"{_collection(info, ns)}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan"
        async with http.get(path) as resp:
            assert resp.status == 200
            lst = await resp.json()
        assert lst["kind"] == info.list_kind
        listed = [i["metadata"]["name"] for i in lst["items"]]
        # (kube-apiserver bootstraps system-node-critical and system-cluster-critical)
        assert [n for n in listed if n not in BOOTSTRAPPED] == [name]
        table_type = "application/json;as=Table;v=v1;g=meta.k8s.io"
        async with http.get(_collection(info, ns), headers={"Accept": table_type}) as resp:
            table = await resp.json()
        assert [c["name"] for c in table["columnDefinitions"]][:1] == ["Name"]
        assert name in [row["cells"][0] for row in table["rows"]]
        async with http.delete(f"{_collection(info, ns)}/{name}") as resp:
            assert resp.status == 200
        async with http.get(f"{_collection(info, ns)}/{name}") as resp:
            assert resp.status == 404


async def test_discovery_and_openapi_name_every_new_resource(
    cached_server: ServerProcess,
) -> None:
    async with aiohttp.ClientSession(base_url=cached_server.url) as http:
        for info in NEW:
            async with http.get(_base(info)) as resp:
                doc = await resp.json()
            found = {r["name"]: r for r in doc["resources"]}
            assert found[info.plural]["kind"] == info.kind
            assert found[info.plural]["namespaced"] == info.namespaced
            for sub in info.subresources:
                assert f"{info.plural}/{sub}" in found
            gv = f"apis/{info.group}/{info.version}" if info.group else f"api/{info.version}"
            async with http.get(f"/openapi/v3/{gv}") as resp:
                assert resp.status == 200
                spec = await resp.json()
            assert (
                f"/{gv}/{'namespaces/{namespace}/' if info.namespaced else ''}{info.plural}"
                in (spec["paths"])
            ), info.plural


async def test_replicationcontroller_scale(cached_server: ServerProcess) -> None:
    async with aiohttp.ClientSession(base_url=cached_server.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "rc-scale"}})
        rc = {
            "metadata": {"name": "rc"},
            "spec": {"replicas": 1, "selector": {"app": "a", "b": "c"}},
        }
        await create(http, "/api/v1/namespaces/rc-scale/replicationcontrollers", rc)
        path = "/api/v1/namespaces/rc-scale/replicationcontrollers/rc/scale"
        async with http.get(path) as resp:
            scale = await resp.json()
        assert scale["spec"]["replicas"] == 1 and scale["status"]["selector"] == "app=a,b=c"
        patch = {"spec": {"replicas": 3}}
        headers = {"Content-Type": "application/merge-patch+json"}
        async with http.patch(path, data=orjson.dumps(patch), headers=headers) as resp:
            assert resp.status == 200, await resp.text()
        async with http.get(path.removesuffix("/scale")) as resp:
            assert (await resp.json())["spec"]["replicas"] == 3
