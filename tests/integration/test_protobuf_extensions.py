"""CustomResourceDefinitions and APIServices in ``application/vnd.kubernetes.protobuf``
against a real etcd, as client-go's apiextensions and aggregator clientsets send them:
a create in protobuf with a rich schema, GET in JSON and in protobuf, LIST and WATCH in
protobuf, and the value in etcd still JSON (as kube-apiserver stores these kinds).

Bodies are built and answers read with protobuf's own message classes made from the
compiled descriptors; the JSON ⇄ proto mapping of the special members (``$ref``,
``x-kubernetes-*``, ``default``/``example``/``enum`` as raw JSON, the OrBool/OrArray/
OrStringArray unions) is written out here, from upstream's marshal.go, not taken from
the converter under test.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from google.protobuf import json_format

from etcdclient import EtcdClient
from tests.integration.conftest import ServerProcess, create
from tests.integration.crd_support import CRDS, wait_established
from tests.integration.test_rest_protobuf import (
    PB,
    DeleteOptions,
    _watch,
    cls,
    envelope,
    frames,
    open_envelope,
    pb_server,
)

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
_EXT = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
_REG = "k8s.io.kube_aggregator.pkg.apis.apiregistration.v1"
CRD = cls(f"{_EXT}.CustomResourceDefinition")
CRDList = cls(f"{_EXT}.CustomResourceDefinitionList")
APIService = cls(f"{_REG}.APIService")
APIServiceList = cls(f"{_REG}.APIServiceList")
APISERVICES = "/apis/apiregistration.k8s.io/v1/apiservices"
HEADERS = {"Content-Type": PB, "Accept": PB}
__all__ = ["pb_server"]  # once uncached, once with the watch cache


@pytest.fixture
def server(pb_server: ServerProcess) -> ServerProcess:
    return pb_server


@pytest.fixture
async def http(server: ServerProcess) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=server.url) as session:
        yield session


def _raw(value: Any) -> JSON:
    return {"raw": base64.b64encode(orjson.dumps(value)).decode()}


def _camel(name: str) -> str:  # x-kubernetes-list-type -> xKubernetesListType
    return re.sub(r"-(\w)", lambda m: m.group(1).upper(), name)


def schema_to_proto(schema: JSON) -> JSON:
    """A JSONSchemaProps in JSON as protobuf's JSON mapping spells the message."""
    out: JSON = {}
    for key, value in schema.items():
        if key in ("default", "example"):
            out[key] = _raw(value)
        elif key == "enum":
            out[key] = [_raw(v) for v in value]
        elif key in ("properties", "patternProperties", "definitions"):
            out[key] = {k: schema_to_proto(v) for k, v in value.items()}
        elif key in ("allOf", "oneOf", "anyOf"):
            out[key] = [schema_to_proto(v) for v in value]
        elif key == "not":
            out[key] = schema_to_proto(value)
        elif key == "items":
            many = isinstance(value, list)
            out[key] = ({"jSONSchemas": [schema_to_proto(v) for v in value]} if many
                        else {"schema": schema_to_proto(value)})  # fmt: skip
        elif key in ("additionalProperties", "additionalItems"):
            out[key] = ({"allows": value} if isinstance(value, bool)
                        else {"allows": True, "schema": schema_to_proto(value)})  # fmt: skip
        elif key == "dependencies":
            out[key] = {k: {"property": v} if isinstance(v, list) else
                        {"schema": schema_to_proto(v)} for k, v in value.items()}  # fmt: skip
        else:
            out[_camel(key.lstrip("$"))] = value
    return out


def _times(conditions: list[JSON]) -> list[JSON]:
    out = []
    for c in conditions:
        c = dict(c)
        if c.get("lastTransitionTime"):
            stamp = c["lastTransitionTime"].replace("Z", "+00:00")
            c["lastTransitionTime"] = {"seconds": int(_fromiso(stamp))}
        out.append(c)
    return out


def _fromiso(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp).timestamp()


def crd_to_proto(obj: JSON) -> Any:
    """The CustomResourceDefinition message of a JSON CRD (spec, status and name)."""
    spec = dict(obj["spec"])
    spec["versions"] = []
    for version in obj["spec"]["versions"]:
        version = dict(version)
        if "schema" in version:
            version["schema"] = {
                "openAPIV3Schema": schema_to_proto(version["schema"]["openAPIV3Schema"])
            }
        spec["versions"].append(version)
    status = dict(obj.get("status") or {})
    status["conditions"] = _times(status.get("conditions") or [])
    body = {"metadata": {"name": obj["metadata"]["name"]}, "spec": spec, "status": status}
    return json_format.ParseDict(body, CRD())


def _same_object(got: Any, answer: JSON, to_proto: Any) -> None:
    """``got`` (a decoded message) is ``answer`` (the JSON form), field by field."""
    expected = to_proto(answer)
    assert got.metadata.name == answer["metadata"]["name"]
    assert got.metadata.uid == answer["metadata"]["uid"]
    assert got.metadata.resourceVersion == answer["metadata"]["resourceVersion"]
    for part in ("spec", "status"):
        assert _nonzero(getattr(got, part)) == _nonzero(getattr(expected, part)), part


async def _same_version(http: aiohttp.ClientSession, path: str, message: Any, to_proto: Any) -> Any:
    """GET ``path`` in protobuf and in JSON until both answers are one version (a
    controller may write the status in between), compare them, return the message."""
    for _ in range(50):
        async with http.get(path, headers={"Accept": PB}) as resp:
            assert resp.headers["Content-Type"] == PB
            got = message.FromString(open_envelope(await resp.read())[2])
        async with http.get(path, headers={"Accept": "application/json"}) as resp:
            answer = await resp.json()
        if answer["metadata"]["resourceVersion"] == got.metadata.resourceVersion:
            _same_object(got, answer, to_proto)
            return got
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} kept changing")


def _nonzero(msg: Any) -> Any:
    """A message's fields as a dict without zero values: upstream's Marshal writes every
    non-pointer field (``id: ""``, ``preserveUnknownFields: false``) that JSON omits."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            kept = {k: strip(v) for k, v in value.items()}
            return {k: v for k, v in kept.items() if v not in ("", False, 0, [], {}, "0")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json_format.MessageToDict(msg))


def rich_crd(group: str) -> JSON:
    size = {"type": "integer", "minimum": 1, "maximum": 10.5, "multipleOf": 0.5,
            "default": 3, "enum": [1, 2, 3], "example": {"a": [1, "b"]}}  # fmt: skip
    spec_schema = {
        "type": "object",
        "required": ["size"],
        "x-kubernetes-validations": [
            {
                "rule": "self.size > 0",
                "message": "positive",
                "reason": "FieldValueForbidden",
                "fieldPath": ".size",
            },
        ],
        "properties": {
            "size": size,
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "x-kubernetes-list-type": "set",
                "maxItems": 5,
            },
            "labels": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "x-kubernetes-map-type": "granular",
            },
            "closed": {"type": "object", "additionalProperties": False},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 15}
                    },
                },
            },
            "port": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            "free": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "nullable": True,
                "description": "anything",
                "title": "Free",
            },
            "embedded": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
                "shortNames": ["wdg"],
                "categories": ["all"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": spec_schema,
                                "status": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                },
                            },
                        }
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.size",
                            "statusReplicasPath": ".status.size",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1}
                    ],
                    "selectableFields": [{"jsonPath": ".spec.size"}],
                }
            ],
        },
    }


async def test_crd_in_protobuf(server: ServerProcess, http: aiohttp.ClientSession) -> None:
    group = f"pb{uuid.uuid4().hex[:8]}.example.com"
    crd = rich_crd(group)
    body = envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd_to_proto(crd))
    async with http.post(CRDS, data=body, headers=HEADERS) as resp:
        assert resp.status == 201, await resp.read()
        assert resp.headers["Content-Type"] == PB
        version, kind, raw = open_envelope(await resp.read())
    assert (version, kind) == ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    created = CRD.FromString(raw)
    name = crd["metadata"]["name"]
    # the JSON view of the same version: every spec field as sent, each member spelled
    # as upstream's JSON ($ref, x-kubernetes-*, raw default/example/enum)
    async with http.get(f"{CRDS}/{name}") as resp:
        as_json = await resp.json()
    sent = crd["spec"]["versions"][0]["schema"]
    assert as_json["spec"]["versions"][0]["schema"] == sent
    assert as_json["metadata"]["uid"] == created.metadata.uid
    # (the status may be newer: the CRD controller writes it)
    assert _nonzero(created.spec) == _nonzero(crd_to_proto(as_json).spec)

    # GET in protobuf, once Established (its status written by the controller)
    established = await wait_established(http, name)
    got = await _same_version(http, f"{CRDS}/{name}", CRD, crd_to_proto)
    assert {c.type for c in got.status.conditions} >= {"Established", "NamesAccepted"}
    assert got.status.acceptedNames.kind == "Widget"
    assert list(got.status.storedVersions) == ["v1"]

    # LIST in protobuf
    async with http.get(CRDS, headers={"Accept": PB}) as resp:
        version, kind, raw = open_envelope(await resp.read())
    assert kind == "CustomResourceDefinitionList"
    listed = {i.metadata.name: i for i in CRDList.FromString(raw).items}
    assert listed[name].spec == got.spec

    # WATCH in protobuf: a label patch arrives as a MODIFIED CustomResourceDefinition
    rv = established["metadata"]["resourceVersion"]
    patch = {"metadata": {"labels": {"pb": "yes"}}}
    async with http.patch(f"{CRDS}/{name}", json=patch,
                          headers={"Content-Type": "application/merge-patch+json",
                                   "Accept": PB}) as resp:  # fmt: skip
        assert resp.status == 200, await resp.read()
        patched = CRD.FromString(open_envelope(await resp.read())[2])
    assert patched.metadata.labels["pb"] == "yes"
    data = await _watch(http, f"{CRDS}?watch=1&resourceVersion={rv}"
                              f"&fieldSelector=metadata.name={name}", 1)  # fmt: skip
    event, version, kind, raw = frames(data)[0]
    assert (event, kind) == ("MODIFIED", "CustomResourceDefinition")
    assert CRD.FromString(raw) == patched

    # PUT in protobuf, as client-go's Update sends it
    patched.metadata.labels["put"] = "pb"
    body = envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", patched)
    async with http.put(f"{CRDS}/{name}", data=body, headers=HEADERS) as resp:
        assert resp.status == 200, await resp.read()
        updated = CRD.FromString(open_envelope(await resp.read())[2])
    assert dict(updated.metadata.labels) == {"pb": "yes", "put": "pb"}
    assert updated.spec == patched.spec

    # stored as JSON, as kube-apiserver stores CRDs, whatever --storage-media-type says
    async with EtcdClient(list(server.etcd_servers)) as client:
        stored = await client.get(f"{server.prefix}/apiextensions.k8s.io/"
                                  f"customresourcedefinitions/{name}".encode())  # fmt: skip
    assert stored.kv is not None and stored.kv.value.startswith(b"{")
    # DELETE with DeleteOptions in protobuf, as client-go's Delete sends them
    options = envelope(
        "meta.k8s.io/v1", "DeleteOptions", DeleteOptions(propagationPolicy="Background")
    )
    async with http.delete(f"{CRDS}/{name}", data=options, headers=HEADERS) as resp:
        assert resp.status == 200, await resp.read()
        _, kind, _ = open_envelope(await resp.read())
    assert kind == "CustomResourceDefinition"  # terminating: its instances are cleaned up


def apiservice_to_proto(obj: JSON) -> Any:
    status = {"conditions": _times((obj.get("status") or {}).get("conditions") or [])}
    body = {"metadata": {"name": obj["metadata"]["name"]}, "spec": obj["spec"], "status": status}
    return json_format.ParseDict(body, APIService())


async def test_apiservice_in_protobuf(server: ServerProcess, http: aiohttp.ClientSession) -> None:
    group = f"pb{uuid.uuid4().hex[:8]}.example.com"
    name = f"v1alpha1.{group}"
    spec = {"group": group, "version": "v1alpha1", "groupPriorityMinimum": 1000,
            "versionPriority": 15, "caBundle": base64.b64encode(b"not a real CA").decode(),
            "service": {"namespace": "default", "name": "nowhere", "port": 8443}}  # fmt: skip
    body = envelope("apiregistration.k8s.io/v1", "APIService",
                    apiservice_to_proto({"metadata": {"name": name}, "spec": spec}))  # fmt: skip
    async with http.post(APISERVICES, data=body, headers=HEADERS) as resp:
        assert resp.status == 201, await resp.read()
        created = APIService.FromString(open_envelope(await resp.read())[2])
    assert created.spec.service.port == 8443
    assert created.spec.caBundle == b"not a real CA"
    async with http.get(f"{APISERVICES}/{name}") as resp:
        as_json = await resp.json()
    assert as_json["spec"] == spec
    got = await _same_version(http, f"{APISERVICES}/{name}", APIService, apiservice_to_proto)

    async with http.get(APISERVICES, headers={"Accept": PB}) as resp:
        _, kind, raw = open_envelope(await resp.read())
    assert kind == "APIServiceList"
    items = {i.metadata.name: i for i in APIServiceList.FromString(raw).items}
    assert items[name].spec == got.spec
    assert "v1.apiextensions.k8s.io" in items  # the local APIServices too

    data = await _watch(http, f"{APISERVICES}?watch=1&fieldSelector=metadata.name={name}", 1)
    event, version, kind, raw = frames(data)[0]
    assert (event, version, kind) == ("ADDED", "apiregistration.k8s.io/v1", "APIService")
    assert APIService.FromString(raw).spec == got.spec

    # /status in protobuf, as an aggregator's UpdateStatus sends it (retried on 409: the
    # availability controller writes the status too)
    for _ in range(20):
        async with http.get(f"{APISERVICES}/{name}", headers={"Accept": PB}) as resp:
            current = APIService.FromString(open_envelope(await resp.read())[2])
        del current.status.conditions[:]
        condition = current.status.conditions.add(type="Available", status="False")
        condition.reason, condition.message = "ByProtobuf", "set in protobuf"
        body = envelope("apiregistration.k8s.io/v1", "APIService", current)
        async with http.put(f"{APISERVICES}/{name}/status", data=body, headers=HEADERS) as resp:
            if resp.status == 409:
                continue
            assert resp.status == 200, await resp.read()
            written = APIService.FromString(open_envelope(await resp.read())[2])
            break
    assert [(c.type, c.reason) for c in written.status.conditions] == [("Available", "ByProtobuf")]
    assert written.spec == got.spec
    async with EtcdClient(list(server.etcd_servers)) as client:
        stored = await client.get(f"{server.prefix}/apiregistration.k8s.io/apiservices/{name}"
                                  .encode())  # fmt: skip
    assert stored.kv is not None and stored.kv.value.startswith(b"{")
    async with http.delete(f"{APISERVICES}/{name}") as resp:
        assert resp.status == 200


async def test_negotiation_offers_protobuf_for_these_kinds_not_for_custom_resources(
    http: aiohttp.ClientSession,
) -> None:
    for path in (CRDS, APISERVICES):
        async with http.get(path, headers={"Accept": "text/plain"}) as resp:
            assert resp.status == 406
            # go-restful's answer for a route whose Produces does not match, as upstream
            assert (await resp.json())["message"].endswith(
                "Available representations: application/json, application/yaml, "
                "application/vnd.kubernetes.protobuf, application/json;stream=watch, "
                "application/vnd.kubernetes.protobuf;stream=watch"
            )
        async with http.post(path, data=b"k8s\x00", headers=HEADERS) as resp:
            assert resp.status == 400, (path, await resp.text())  # taken, then malformed
    # custom resources stay JSON-only, as upstream: 415 listing JSON and YAML
    group = f"pb{uuid.uuid4().hex[:8]}.example.com"
    crd = rich_crd(group)
    await create(http, CRDS, crd)
    await wait_established(http, crd["metadata"]["name"])
    widgets = f"/apis/{group}/v1/namespaces/default/widgets"
    headers = {"Content-Type": PB, "Accept": "application/json"}
    async with http.post(widgets, data=b"k8s\x00", headers=headers) as resp:
        assert resp.status == 415
        assert (await resp.json())["message"].endswith(
            "accepted media types include: application/json, application/yaml"
        )
    async with http.delete(f"{CRDS}/{crd['metadata']['name']}") as resp:
        assert resp.status == 200
