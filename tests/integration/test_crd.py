"""CustomResourceDefinitions and custom resources, as kube-apiserver serves them: cases
ported from ``apiextensions-apiserver/test/integration`` (basic_test, naming_test,
finalization_test, subresources_test, deletion_test, table_test, versioning_test,
fieldselector_test) and ``test/e2e/apimachinery/crd_*.go``. Each test states
upstream's answer (measured on kube-apiserver). Every case runs against a server with
the watch cache and one without.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import aiohttp
import orjson
import pytest

from lab.etcd import EtcdCluster, free_port
from proxy.server import certs
from tests.integration.conftest import PYTHON, REPO, ServerProcess, start_server
from tests.integration.crd_support import CRDS, crd_body, install_crd, unique_group, wait_gone

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module", params=["cached", "uncached"])
def crd_server(etcd: EtcdCluster, request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    flag = "--watch-cache=false" if request.param == "uncached" else "--watch-cache=true"
    with start_server(etcd.endpoints, None, flag) as proc:
        yield proc


@pytest.fixture
async def api(crd_server: ServerProcess) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=crd_server.url) as session:
        yield session


@pytest.fixture
async def group(api: aiohttp.ClientSession) -> str:
    """A group of its own for the test, with the namespace ``default`` present."""
    async with api.post("/api/v1/namespaces", json={"metadata": {"name": "default"}}):
        pass
    return unique_group()


def widgets(group: str, name: str = "", version: str = "v1", ns: str = "default") -> str:
    return f"/apis/{group}/{version}/namespaces/{ns}/widgets" + (f"/{name}" if name else "")


def widget(group: str, name: str, version: str = "v1", **spec: Any) -> JSON:
    return {
        "apiVersion": f"{group}/{version}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


async def _json(resp: aiohttp.ClientResponse) -> JSON:
    body: JSON = await resp.json(content_type=None)
    return body


def _names(body: JSON) -> list[str]:
    return [i["metadata"]["name"] for i in body.get("items") or []]


async def list_at(
    api: aiohttp.ClientSession, url: str, rv: str, check: Callable[[JSON], bool], **params: str
) -> JSON:
    """The LIST of ``url`` at ``rv``. At ``"0"`` (the watch cache) it is read again until
    ``check`` holds, for at most 10 s: ``resourceVersion=0`` is upstream's "any", which
    may answer before the cache has seen the last write (and ``NotOlderThan`` the latest
    revision can time out when that revision was another resource's and etcd sends no
    progress). The caller asserts on what is returned."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while True:
        async with api.get(url, params={**params, "resourceVersion": rv}) as resp:
            body = await _json(resp)
        if rv != "0" or check(body) or loop.time() > deadline:
            return body
        await asyncio.sleep(0.05)


async def test_a_created_crd_is_named_established_and_defaulted(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream: NamesAccepted True (NoConflicts, "no conflicts found"), Established True
    (InitialNamesAccepted, "the initial names have been accepted"), acceptedNames =
    spec.names with singular and listKind defaulted, conversion strategy None,
    storedVersions [v1], no finalizer until deleted."""
    crd = await install_crd(api, crd_body(group))
    async with asyncio.timeout(10):
        while len(crd["status"].get("conditions") or []) < 2:
            async with api.get(f"{CRDS}/widgets.{group}") as resp:
                crd = await _json(resp)
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["spec"]["names"]["singular"] == "widget"
    assert crd["spec"]["names"]["listKind"] == "WidgetList"
    assert "finalizers" not in crd["metadata"]
    status = crd["status"]
    assert status["acceptedNames"] == {
        "plural": "widgets",
        "singular": "widget",
        "shortNames": ["wd"],
        "kind": "Widget",
        "listKind": "WidgetList",
        "categories": ["all"],
    }
    assert status["storedVersions"] == ["v1"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["NamesAccepted"]["reason"] == "NoConflicts"
    assert conditions["NamesAccepted"]["message"] == "no conflicts found"
    assert conditions["Established"]["status"] == "True"
    assert conditions["Established"]["reason"] == "InitialNamesAccepted"
    assert conditions["Established"]["message"] == "the initial names have been accepted"


async def test_established_is_written_only_once_the_resource_is_served(
    api: aiohttp.ClientSession,
) -> None:
    """Upstream's naming controller writes NamesAccepted with Established
    False/Installing; the establishing controller sets Established True after the
    handler's informer has the accepted names, so it serves from then on: a client that
    polls the CRD until Established and creates an instance at once gets 201, never the
    404 of a resource not yet served (make test met it once: Established came in one
    write with the names, before the server's own informer delivered it)."""
    await api.post("/api/v1/namespaces", json={"metadata": {"name": "default"}})
    for _ in range(5):
        group = unique_group()
        body = crd_body(group)
        async with api.get(CRDS, params={"watch": "1", "fieldSelector": (
            f"metadata.name=widgets.{group}")}) as watch:  # fmt: skip
            async with api.post(CRDS, json=body) as resp:
                assert resp.status == 201, await resp.text()
            seen: list[tuple[str, str]] = []
            async with asyncio.timeout(10):
                async for line in watch.content:
                    status = orjson.loads(line)["object"].get("status") or {}
                    for c in status.get("conditions") or []:
                        if c["type"] == "Established":
                            seen.append((c["status"], c["reason"]))
                    if seen and seen[-1][0] == "True":
                        break
        async with api.post(widgets(group), json=widget(group, "first")) as resp:
            assert resp.status == 201, await resp.text()
        assert ("False", "Installing") in seen, seen
        assert seen[-1] == ("True", "InitialNamesAccepted"), seen


async def test_the_controllers_status_writes_are_recorded_as_kube_apiserver(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream: the naming and establishing controllers write the CRD's status as the
    manager ``kube-apiserver`` (Update, subresource status), so a server-side apply of
    the CRD by a user never owns or conflicts on it."""
    crd = await install_crd(api, crd_body(group))
    entries = [e for e in crd["metadata"]["managedFields"] if e["manager"] == "kube-apiserver"]
    assert [(e["operation"], e.get("subresource")) for e in entries] == [("Update", "status")]
    condition: JSON = {".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {},
                 "f:status": {}, "f:type": {}}  # fmt: skip
    owned = entries[0]["fieldsV1"]["f:status"]
    # kube-apiserver lists no "." on f:conditions; the generic Update records one for a
    # list it adds (left to the field manager: see the review's report)
    owned["f:conditions"].pop(".", None)
    assert owned == {
        "f:acceptedNames": {"f:categories": {}, "f:kind": {}, "f:listKind": {}, "f:plural": {},
                            "f:shortNames": {}, "f:singular": {}},
        "f:conditions": {'k:{"type":"Established"}': condition,
                         'k:{"type":"NamesAccepted"}': condition},
    }, json.dumps(entries)  # fmt: skip


async def test_an_invalid_crd_is_422_with_upstreams_causes(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream: one 422 naming metadata.name ("must be spec.names.plural+\\".\\"+spec.group"),
    spec.group ("should be a domain with at least one dot") and spec.scope (Unsupported
    value: "Weird": supported values: "Cluster", "Namespaced")."""
    body = crd_body("nodot", scope="Weird")
    body["metadata"]["name"] = f"bad.{group}"
    async with api.post(CRDS, json=body) as resp:
        status = await _json(resp)
    assert resp.status == 422, status
    causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    name_rule = 'must be spec.names.plural+"."+spec.group'
    assert causes == [
        ("metadata.name", f'Invalid value: "bad.{group}": {name_rule}'),
        ("spec.group", 'Invalid value: "nodot": should be a domain with at least one dot'),
        ("spec.scope", 'Unsupported value: "Weird": supported values: "Cluster", "Namespaced"'),
    ]
    assert status["message"].startswith(
        f'CustomResourceDefinition.apiextensions.k8s.io "bad.{group}" is invalid: ['
    )


async def test_a_conflicting_name_is_not_accepted(api: aiohttp.ClientSession, group: str) -> None:
    """Upstream (naming_test): a second CRD of the group asking for the kind another has
    accepted gets NamesAccepted False, ListKindConflict (the last conflict checked),
    '"WidgetList" is already in use', Established False NotAccepted, and is not served."""
    await install_crd(api, crd_body(group))
    second = crd_body(group, plural="gizmos", short_names=("gz",))
    async with api.post(CRDS, json=second) as resp:
        assert resp.status == 201
    async with asyncio.timeout(10):
        while True:
            async with api.get(f"{CRDS}/gizmos.{group}") as resp:
                crd = await _json(resp)
            conditions = {c["type"]: c for c in crd["status"].get("conditions") or []}
            if "NamesAccepted" in conditions:
                break
            await asyncio.sleep(0.05)
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["reason"] == "ListKindConflict"
    assert conditions["NamesAccepted"]["message"] == '"WidgetList" is already in use'
    assert conditions["Established"]["status"] == "False"
    assert conditions["Established"]["reason"] == "NotAccepted"
    async with api.get(f"/apis/{group}/v1/gizmos") as resp:
        assert resp.status == 404


async def test_discovery_lists_the_resource_and_the_etag_changes(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream: /apis/<group>/v1 lists widgets (namespaced, the CRD's singular name,
    short names, categories) and widgets/status, widgets/scale; the aggregated /apis
    document's ETag changes."""
    aggregated = {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}
    async with api.get("/apis", headers=aggregated) as resp:
        before = resp.headers["ETag"]
    body = crd_body(group)
    body["spec"]["names"]["singular"] = "wdgt"
    await install_crd(api, body)
    async with api.get(f"/apis/{group}/v1") as resp:
        listing = await _json(resp)
    by_name = {r["name"]: r for r in listing["resources"]}
    assert set(by_name) == {"widgets", "widgets/status", "widgets/scale"}
    assert by_name["widgets"]["singularName"] == "wdgt"
    assert by_name["widgets"]["shortNames"] == ["wd"]
    assert by_name["widgets"]["categories"] == ["all"]
    assert by_name["widgets"]["namespaced"] is True
    async with api.get("/apis", headers=aggregated) as resp:
        doc = await _json(resp)
        assert resp.headers["ETag"] != before
    [entry] = [g for g in doc["items"] if g["metadata"]["name"] == group]
    [resource] = entry["versions"][0]["resources"]
    assert resource["singularResource"] == "wdgt"
    assert [s["subresource"] for s in resource["subresources"]] == ["scale", "status"]


async def test_crud_and_cached_reads(api: aiohttp.ClientSession, group: str) -> None:
    """Upstream: create 201, get, list at RV=0 (the watch cache) and unset (etcd), merge
    patch 200 with generation 2, delete 200 then 404."""
    await install_crd(api, crd_body(group))
    async with api.post(widgets(group), json=widget(group, "w1", color="red")) as resp:
        created = await _json(resp)
    assert resp.status == 201, created
    assert created["metadata"]["generation"] == 1
    for rv in ("0", ""):
        listed = await list_at(api, widgets(group), rv, lambda b: _names(b) == ["w1"])
        assert _names(listed) == ["w1"]
        assert listed["kind"] == "WidgetList"
    body = orjson.dumps({"spec": {"color": "blue"}})
    async with api.patch(widgets(group, "w1"), data=body, headers=MERGE) as resp:
        patched = await _json(resp)
    assert patched["spec"]["color"] == "blue"
    assert patched["metadata"]["generation"] == 2
    async with api.delete(widgets(group, "w1")) as resp:
        assert resp.status == 200
    async with api.get(widgets(group, "w1")) as resp:
        assert resp.status == 404


async def test_strategic_merge_is_415_and_protobuf_406(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream: a strategic merge patch of a CR is 415 UnsupportedMediaType naming the
    three patch types; an Accept of protobuf alone is 406 NotAcceptable."""
    await install_crd(api, crd_body(group))
    await api.post(widgets(group), json=widget(group, "w1"))
    smp = {"Content-Type": "application/strategic-merge-patch+json"}
    async with api.patch(widgets(group, "w1"), data=b"{}", headers=smp) as resp:
        status = await _json(resp)
    assert resp.status == 415
    assert status["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )
    assert status["reason"] == "UnsupportedMediaType"
    pb = {"Accept": "application/vnd.kubernetes.protobuf"}
    async with api.get(widgets(group, "w1"), headers=pb) as resp:
        assert resp.status == 406


async def test_a_deprecated_version_warns_and_converts(
    api: aiohttp.ClientSession, group: str, crd_server: ServerProcess
) -> None:
    """Upstream (versioning, conversion None): a request to the deprecated v1beta1 gets
    `Warning: 299 - "<group>/v1beta1 Widget is deprecated; use <group>/v1 Widget"`; the
    object is stored in v1 and read back in the version asked for."""
    await install_crd(api, crd_body(group, beta=True))
    async with api.post(
        widgets(group, version="v1beta1"), json=widget(group, "w1", "v1beta1", color="red")
    ) as resp:
        assert resp.status == 201, await resp.text()
        assert resp.headers.getall("Warning") == [
            f'299 - "{group}/v1beta1 Widget is deprecated; use {group}/v1 Widget"'
        ]
    async with api.get(widgets(group, "w1")) as resp:
        assert (await _json(resp))["apiVersion"] == f"{group}/v1"
        assert "Warning" not in resp.headers
    url = widgets(group, version="v1beta1")
    listed = await list_at(api, url, "0", lambda b: len(b.get("items") or []) == 1)
    assert [i["apiVersion"] for i in listed["items"]] == [f"{group}/v1beta1"]


async def test_status_and_scale_subresources(api: aiohttp.ClientSession, group: str) -> None:
    """Upstream (subresources_test): the main resource ignores status, /status takes only
    status; /scale reads specReplicasPath, statusReplicasPath and labelSelectorPath and
    a scale patch writes spec.replicas."""
    await install_crd(api, crd_body(group))
    body = widget(group, "w1", replicas=1)
    body["status"] = {"replicas": 7}
    async with api.post(widgets(group), json=body) as resp:
        assert "status" not in await _json(resp)
    status = orjson.dumps({"status": {"replicas": 1, "selector": "app=w"}, "spec": {"color": "x"}})
    async with api.patch(widgets(group, "w1") + "/status", data=status, headers=MERGE) as resp:
        after = await _json(resp)
    assert after["status"] == {"replicas": 1, "selector": "app=w"}
    assert "color" not in after["spec"]
    scale_patch = orjson.dumps({"spec": {"replicas": 3}})
    async with api.patch(widgets(group, "w1") + "/scale", data=scale_patch, headers=MERGE) as r:
        scale = await _json(r)
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 1, "selector": "app=w"}
    async with api.get(widgets(group, "w1")) as resp:
        assert (await _json(resp))["spec"]["replicas"] == 3


async def test_selectable_fields(api: aiohttp.ClientSession, group: str) -> None:
    """Upstream (1.32+): a field selector on a selectableFields path filters; any other
    field is 400 BadRequest "field label not supported: spec.size"."""
    await install_crd(api, crd_body(group))
    for name, color in (("a", "red"), ("b", "blue")):
        await api.post(widgets(group), json=widget(group, name, color=color))
    for rv in ("0", ""):
        listed = await list_at(
            api, widgets(group), rv, lambda b: _names(b) == ["a"], fieldSelector="spec.color=red"
        )
        assert _names(listed) == ["a"]
    async with api.get(widgets(group), params={"fieldSelector": "spec.size=1"}) as resp:
        status = await _json(resp)
    assert resp.status == 400
    assert status["message"] == "field label not supported: spec.size"


async def test_printer_columns_in_the_table(api: aiohttp.ClientSession, group: str) -> None:
    """Upstream (table_test): Name, then the printer columns, each described as "Custom
    resource definition column (in JSONPath format): <path>"; a missing value is null."""
    await install_crd(api, crd_body(group))
    await api.post(widgets(group), json=widget(group, "w1", color="red"))
    table = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    async with api.get(widgets(group), headers=table) as resp:
        doc = await _json(resp)
    columns = [(c["name"], c["type"], c["priority"]) for c in doc["columnDefinitions"]]
    assert columns == [
        ("Name", "string", 0),
        ("Color", "string", 0),
        ("Replicas", "integer", 1),
        ("Age", "date", 0),
    ]
    assert doc["columnDefinitions"][1]["description"] == (
        "Custom resource definition column (in JSONPath format): .spec.color"
    )
    cells = doc["rows"][0]["cells"]
    assert cells[:3] == ["w1", "red", None]


async def test_each_served_version_prints_its_own_columns(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream keeps a Table convertor per served version (``crdInfo.tableConvertors``):
    v1beta1's own additionalPrinterColumns, not v1's."""
    body = crd_body(group, beta=True)
    body["spec"]["versions"][1]["additionalPrinterColumns"] = [
        {"name": "Hue", "type": "string", "jsonPath": ".spec.color"}
    ]
    await install_crd(api, body)
    await api.post(widgets(group), json=widget(group, "w1", color="red"))
    table = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    names = {}
    for version in ("v1", "v1beta1"):
        async with api.get(widgets(group, version=version), headers=table) as resp:
            doc = await _json(resp)
        names[version] = [c["name"] for c in doc["columnDefinitions"]]
    assert names == {"v1": ["Name", "Color", "Replicas", "Age"], "v1beta1": ["Name", "Hue"]}


async def test_a_changed_schema_drives_server_side_apply_at_once(
    api: aiohttp.ClientSession, group: str
) -> None:
    """A CRD update that makes ``spec.parts`` a list-map keyed by ``id`` changes how the
    next apply records ownership (per item, ``k:{"id":...}``), as upstream rebuilds the
    version's type converter when the CRD changes; before, the list is atomic."""
    body = crd_body(group)
    parts: JSON = {"type": "array", "x-kubernetes-list-type": "atomic", "items": {
        "type": "object", "required": ["id"],
        "properties": {"id": {"type": "string"}, "size": {"type": "integer"}}}}  # fmt: skip
    spec_schema = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"]["parts"] = parts
    crd = await install_crd(api, body)
    apply = {"Content-Type": "application/apply-patch+yaml"}

    async def apply_as(manager: str, name: str) -> JSON:
        obj = widget(group, name, parts=[{"id": "a", "size": 1}])
        url = widgets(group, name)
        async with api.patch(url, params={"fieldManager": manager}, data=json.dumps(obj),
                             headers=apply) as resp:  # fmt: skip
            assert resp.status == 201, await resp.text()
            got = await _json(resp)
        (entry,) = [m for m in got["metadata"]["managedFields"] if m["manager"] == manager]
        fields: JSON = entry["fieldsV1"]["f:spec"]["f:parts"]
        return fields

    assert await apply_as("before", "w1") == {}  # atomic: the list is owned whole
    parts["x-kubernetes-list-type"] = "map"
    parts["x-kubernetes-list-map-keys"] = ["id"]
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = spec_schema
    async with api.put(f"{CRDS}/{crd['metadata']['name']}", json=crd) as resp:
        assert resp.status == 200, await resp.text()
    async with asyncio.timeout(10):
        while True:  # the new schema is served once the CRD's serving is rebuilt
            got = await apply_as("after", f"w{time.monotonic_ns()}")
            if got:
                break
            await asyncio.sleep(0.05)
    assert got == {'k:{"id":"a"}': {".": {}, "f:id": {}, "f:size": {}}}


async def test_openapi_v3_of_the_group_version(api: aiohttp.ClientSession, group: str) -> None:
    """Upstream: /openapi/v3/apis/<group>/v1 has <reversed group>.v1.Widget and
    WidgetList with their group-version-kind, and PATCH takes json, merge and apply
    patches only."""
    await install_crd(api, crd_body(group))
    async with api.get(f"/openapi/v3/apis/{group}/v1") as resp:
        doc = await _json(resp)
    prefix = ".".join(reversed(group.split("."))) + ".v1."
    schemas = doc["components"]["schemas"]
    assert schemas[prefix + "Widget"]["x-kubernetes-group-version-kind"] == [
        {"group": group, "kind": "Widget", "version": "v1"}
    ]
    assert prefix + "WidgetList" in schemas
    item = doc["paths"][f"/apis/{group}/v1/namespaces/{{namespace}}/widgets/{{name}}"]
    assert sorted(item["patch"]["requestBody"]["content"]) == [
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ]


async def test_deleting_the_crd_removes_instances_and_stops_serving(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream (finalization_test, deletion_test): DELETE answers 200 with the CRD kept
    by the customresourcecleanup finalizer and Terminating True
    (InstanceDeletionInProgress); creates are then 405 "create not allowed while custom
    resource definition is terminating"; instances go, then the CRD; the resource is no
    longer served and open watches end."""
    await install_crd(api, crd_body(group))
    held = widget(group, "held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    async with api.post(widgets(group), json=held) as resp:
        assert resp.status == 201, await resp.text()
    async with api.get(widgets(group), params={"watch": "1"}) as watch:
        async with api.delete(f"{CRDS}/widgets.{group}") as resp:
            deleted = await _json(resp)
        assert resp.status == 200
        assert deleted["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
        assert deleted["metadata"]["deletionTimestamp"]
        async with asyncio.timeout(10):
            while True:
                async with api.post(widgets(group), json=widget(group, "late")) as resp:
                    if resp.status == 405:
                        status = await _json(resp)
                        break
                await asyncio.sleep(0.05)
        assert status["message"] == (
            "create not allowed while custom resource definition is terminating"
        )
        async with api.get(f"{CRDS}/widgets.{group}") as resp:
            crd = await _json(resp)
        terminating = [c for c in crd["status"]["conditions"] if c["type"] == "Terminating"]
        assert terminating[0]["reason"] == "InstanceDeletionInProgress"
        unhold = orjson.dumps({"metadata": {"finalizers": None}})
        async with api.patch(widgets(group, "held"), data=unhold, headers=MERGE) as resp:
            assert resp.status == 200, await resp.text()
        await wait_gone(api, f"{CRDS}/widgets.{group}")
        async with asyncio.timeout(10):
            await watch.content.read()  # the stream ends
    async with api.get(widgets(group)) as resp:
        assert resp.status == 404


async def test_a_watch_sees_the_instances_deleted_before_the_crd_goes(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream (crdHandler keeps a CRD's storage while only its status changes; the
    finalizer deletes the instances through it): a watch open when the CRD is deleted
    (``kubectl get -w``) gets a DELETED event for every instance, then its stream ends
    when the CRD is gone. Marking the CRD Terminating must not end it early."""
    await install_crd(api, crd_body(group))
    for name in ("one", "two"):
        async with api.post(widgets(group), json=widget(group, name)) as resp:
            assert resp.status == 201, await resp.text()
    events: list[tuple[str, str]] = []
    async with api.get(widgets(group), params={"watch": "1"}) as watch:
        async with api.delete(f"{CRDS}/widgets.{group}") as resp:
            assert resp.status == 200, await resp.text()
        async with asyncio.timeout(15):
            async for line in watch.content:
                event = orjson.loads(line)
                events.append((event["type"], event["object"]["metadata"]["name"]))
    assert sorted(e for e in events if e[0] == "DELETED") == [
        ("DELETED", "one"),
        ("DELETED", "two"),
    ], events
    await wait_gone(api, f"{CRDS}/widgets.{group}")


async def test_a_byte_field_that_is_not_base64_is_invalid(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream: a CR is unstructured, so a ``format: byte`` string that is not base64
    is the schema's 422 (``spec.blob in body must be of type byte``), not a built-in
    kind's 400 decoding error."""
    body = crd_body(group)
    props = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    props["spec"]["properties"]["blob"] = {"type": "string", "format": "byte"}
    await install_crd(api, body)
    async with api.post(widgets(group), json=widget(group, "b1", blob="!!!")) as resp:
        status = await _json(resp)
    assert (resp.status, status["message"]) == (
        422,
        f'Widget.{group} "b1" is invalid: spec.blob: Invalid value: "!!!": spec.blob in body '
        'must be of type byte: "!!!"',
    ), status
    async with api.post(widgets(group), json=widget(group, "b2", blob="YQ==")) as resp:
        assert resp.status == 201, await resp.text()


async def test_unknown_fields_and_wrong_types(api: aiohttp.ClientSession, group: str) -> None:
    """Upstream: unknown fields are dropped with `Warning: 299 - "unknown field
    \\"spec.junk\\""` (fieldValidation Warn, the default); Strict is 400 `Widget in version
    "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.junk",
    unknown field "top"`; a wrong type is 422 FieldValueTypeInvalid `spec.color in body
    must be of type string: "integer"`."""
    await install_crd(api, crd_body(group))
    body = widget(group, "u1", junk=1, color="x")
    body["top"] = 2
    async with api.post(widgets(group), json=body) as resp:
        created = await _json(resp)
        assert resp.headers.getall("Warning") == [
            '299 - "unknown field \\"spec.junk\\""',
            '299 - "unknown field \\"top\\""',
        ]
    assert created["spec"] == {"color": "x"} and "top" not in created
    body["metadata"]["name"] = "u2"
    async with api.post(widgets(group), json=body, params={"fieldValidation": "Strict"}) as resp:
        status = await _json(resp)
    assert resp.status == 400
    assert status["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "spec.junk", unknown field "top"'
    )
    async with api.post(widgets(group), json=widget(group, "u3", color=7)) as resp:
        status = await _json(resp)
    assert resp.status == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "integer": spec.color in body must be of type string: '
            '"integer"',
            "field": "spec.color",
        }
    ]
    assert status["message"].startswith(f'Widget.{group} "u3" is invalid: spec.color: ')


@pytest.fixture(scope="module")
def conversion_webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The suite's HTTPS conversion webhook (its own process, a certificate from a CA
    made here): (url, caBundle)."""
    directory = tmp_path_factory.mktemp("webhook")
    ca = certs.new_ca("conversion-webhook-ca")
    served = certs.sign(ca, "webhook", ips=("127.0.0.1",), server=True)
    served.write(directory / "tls.crt", directory / "tls.key")
    port = free_port()
    proc = subprocess.Popen(
        [PYTHON, "-m", "tests.integration.conversion_webhook", "--port", str(port),
         "--cert", str(directory / "tls.crt"), "--key", str(directory / "tls.key")],
        cwd=REPO, stdout=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"listening\n"
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the webhook does not listen"
                time.sleep(0.05)
        yield f"https://127.0.0.1:{port}/convert", base64.b64encode(ca.cert_pem).decode()
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


def webhook_crd(group: str, url: str, ca_bundle: str) -> JSON:
    """Widgets in v1 (spec.color, stored) and v2 (spec.colour), converted by the webhook."""
    body = crd_body(group)
    v2 = {
        "name": "v2",
        "served": True,
        "storage": False,
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "properties": {"colour": {"type": "string"}}}
                },
            }
        },
    }
    body["spec"]["versions"].append(v2)
    body["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": url, "caBundle": ca_bundle},
        },
    }
    return body


async def test_webhook_conversion(
    api: aiohttp.ClientSession, group: str, conversion_webhook: tuple[str, str]
) -> None:
    """Upstream (webhook_conversion_test, crd_conversion_webhook.go): a v2 object is
    stored through the webhook in v1 and read back in either version (GET, LIST from the
    cache, WATCH); a webhook Failure is 500 without a reason, `conversion webhook for
    <group>/v2, Kind=Widget failed: <its message>`."""
    url, ca_bundle = conversion_webhook
    await install_crd(api, webhook_crd(group, url, ca_bundle))
    body = {
        "apiVersion": f"{group}/v2",
        "kind": "Widget",
        "metadata": {"name": "c1"},
        "spec": {"colour": "red"},
    }
    async with api.post(widgets(group, version="v2"), json=body) as resp:
        created = await _json(resp)
    assert resp.status == 201, created
    assert created["spec"] == {"colour": "red"}
    async with api.get(widgets(group, "c1")) as resp:
        assert (await _json(resp))["spec"] == {"color": "red"}
    listed = await list_at(
        api, widgets(group, version="v2"), "0", lambda b: len(b.get("items") or []) == 1
    )
    assert [i["spec"] for i in listed["items"]] == [{"colour": "red"}]
    watch = {"watch": "1", "resourceVersion": created["metadata"]["resourceVersion"]}
    async with api.get(widgets(group, version="v2"), params={**watch, "timeoutSeconds": "5"}) as w:
        await api.patch(
            widgets(group, "c1"), data=orjson.dumps({"spec": {"color": "blue"}}), headers=MERGE
        )
        event = orjson.loads(await w.content.readline())
    assert event["type"] == "MODIFIED"
    assert event["object"]["spec"] == {"colour": "blue"}
    body["metadata"] = {"name": "c2", "labels": {"convert": "refuse"}}
    async with api.post(widgets(group, version="v2"), json=body) as resp:
        status = await _json(resp)
    assert resp.status == 500
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"conversion webhook for {group}/v2, Kind=Widget failed: refusing to convert",
        "code": 500,
    }


async def test_selectable_fields_of_a_converted_version(
    api: aiohttp.ClientSession, group: str, conversion_webhook: tuple[str, str]
) -> None:
    """The conformance spec 'CustomResourceFieldSelectors MUST list and watch custom
    resources matching the field selector': a field selector of v2 names v2's field
    (``spec.colour``) while the objects are stored in v1 (``spec.color``); it is
    evaluated on the converted objects, as upstream's cacher of v2 holds them. A watch
    sees an object that comes into the selection as ADDED, one that leaves it as
    DELETED."""
    url, ca_bundle = conversion_webhook
    crd = webhook_crd(group, url, ca_bundle)
    crd["spec"]["versions"][1]["selectableFields"] = [{"jsonPath": ".spec.colour"}]
    await install_crd(api, crd)
    for name, colour in (("r1", "red"), ("b1", "blue"), ("r2", "red")):
        body = {"apiVersion": f"{group}/v2", "kind": "Widget", "metadata": {"name": name},
                "spec": {"colour": colour}}  # fmt: skip
        async with api.post(widgets(group, version="v2"), json=body) as resp:
            created = await _json(resp)
            assert resp.status == 201, created
    red = {"fieldSelector": "spec.colour=red"}
    # from etcd, then from the cache once it holds the last create (RV=0 would be "any
    # version", which a cache a few milliseconds behind answers with fewer objects)
    last = created["metadata"]["resourceVersion"]
    for rv in ("", last):
        params = {**red, **({"resourceVersion": rv} if rv else {})}
        async with api.get(widgets(group, version="v2"), params=params) as resp:
            listed = await _json(resp)
            assert resp.status == 200, listed
        assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["r1", "r2"], rv
    watch = {**red, "watch": "1", "resourceVersion": listed["metadata"]["resourceVersion"],
             "timeoutSeconds": "5"}  # fmt: skip
    async with api.get(widgets(group, version="v2"), params=watch) as w:
        for name, colour in (("b1", "red"), ("r1", "blue")):
            patch = orjson.dumps({"spec": {"color": colour}})
            async with api.patch(widgets(group, name), data=patch, headers=MERGE) as resp:
                assert resp.status == 200
        events = [orjson.loads(line) for line in [await w.content.readline() for _ in range(2)]
                  if line]  # fmt: skip
    assert [(e["type"], e["object"]["metadata"]["name"], e["object"]["spec"]) for e in events] == [
        ("ADDED", "b1", {"colour": "red"}), ("DELETED", "r1", {"colour": "blue"})]


async def test_defaults_and_validation_rules_on_write(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream: a schema default is set on create (spec.color "blue"); a failing
    x-kubernetes-validations rule is 422 on its field with the rule's message (1.37
    prints no value for an object: `spec: Invalid value: min must not exceed max`; 1.32
    printed `Invalid value: "object"`, see docs/crd-schema.md)."""
    body = crd_body(group)
    spec_schema = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"].update({"min": {"type": "integer"}, "max": {"type": "integer"}})
    spec_schema["properties"]["color"]["default"] = "blue"
    spec_schema["x-kubernetes-validations"] = [
        {"rule": "!has(self.min) || self.min <= self.max", "message": "min must not exceed max"}
    ]
    await install_crd(api, body)
    async with api.post(widgets(group), json=widget(group, "ok", min=1, max=2)) as resp:
        created = await _json(resp)
    assert resp.status == 201, created
    assert created["spec"] == {"color": "blue", "max": 2, "min": 1}
    async with api.post(widgets(group), json=widget(group, "bad", min=3, max=2)) as resp:
        status = await _json(resp)
    assert resp.status == 422, status
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: min must not exceed max",
            "field": "spec",
        }
    ]
    # a type error blocks the rules (hasBlockingErr): one more cause says so
    async with api.post(widgets(group), json=widget(group, "typed", min="3", max=2)) as resp:
        status = await _json(resp)
    assert resp.status == 422, status
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "string": spec.min in body must be of type integer: '
            '"string"',
            "field": "spec.min",
        },
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "null": some validation rules were not checked because '
            "the object was invalid; correct the existing errors to complete validation",
            "field": "<nil>",
        },
    ]


async def test_a_crd_update_is_served_and_extends_stored_versions(
    api: aiohttp.ClientSession, group: str
) -> None:
    """Upstream: adding v2 as the storage version serves it and appends it to
    status.storedVersions (["v1", "v2"]); objects written before read back in v2."""
    crd = await install_crd(api, crd_body(group))
    await api.post(widgets(group), json=widget(group, "old", color="red"))
    v2 = {**crd["spec"]["versions"][0], "name": "v2"}
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["versions"].append(v2)
    async with api.put(f"{CRDS}/widgets.{group}", json=crd) as resp:
        updated = await _json(resp)
    assert resp.status == 200, updated
    assert updated["status"]["storedVersions"] == ["v1", "v2"]
    async with asyncio.timeout(10):
        while True:
            async with api.get(widgets(group, "old", version="v2")) as resp:
                if resp.status == 200:
                    obj = await _json(resp)
                    break
            await asyncio.sleep(0.05)
    assert obj["apiVersion"] == f"{group}/v2" and obj["spec"] == {"color": "red"}
    async with api.get(f"/apis/{group}") as resp:
        assert (await _json(resp))["preferredVersion"]["version"] == "v2"


async def test_defaults_are_applied_on_read(api: aiohttp.ClientSession, group: str) -> None:
    """Upstream: a default added to the schema later shows on objects stored before it,
    in GET and in LISTs from etcd and from the watch cache (defaulting on read)."""
    crd = await install_crd(api, crd_body(group))
    await api.post(widgets(group), json=widget(group, "old", replicas=1))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["color"]["default"] = "blue"
    async with api.put(f"{CRDS}/widgets.{group}", json=crd) as resp:
        assert resp.status == 200, await resp.text()
    async with asyncio.timeout(10):
        while True:
            async with api.get(widgets(group, "old")) as resp:
                if (await _json(resp))["spec"].get("color") == "blue":
                    break
            await asyncio.sleep(0.05)
    want = [{"color": "blue", "replicas": 1}]

    def defaulted(body: JSON) -> bool:
        return [i["spec"] for i in body.get("items") or []] == want

    for rv in ("0", ""):
        listed = await list_at(api, widgets(group), rv, defaulted)
        assert [i["spec"] for i in listed["items"]] == want


@pytest.mark.parametrize("schema", [{}, None, {"openAPIV3Schema": None}])
async def test_a_version_without_a_schema_is_422_schemas_are_required(
    api: aiohttp.ClientSession, group: str, schema: object
) -> None:
    """``schema: {}`` was a 500 ``unexpected KeyError`` (found by the fuzzer of issue 23)."""
    body = crd_body(group)
    version = body["spec"]["versions"][0]
    version.pop("subresources")  # the scale paths would be checked against the schema
    version.pop("selectableFields")
    version.pop("additionalPrinterColumns")
    if schema is None:
        version.pop("schema")
    else:
        version["schema"] = schema
    async with api.post(CRDS, json=body) as resp:
        status = await _json(resp)
    assert resp.status == 422, status
    causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    required = "Required value: schemas are required"
    assert ("spec.versions[0].schema.openAPIV3Schema", required) in causes
