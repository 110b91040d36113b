"""``/openapi/v2``, as upstream's conformance specs 'CustomResourcePublishOpenAPI'
read it: a CRD's schema appears as ``definitions["<reversed group>.<version>.<Kind>"]``
and goes with the CRD; the built-in kinds are there, references point at
``#/definitions/``. Through ``watchcache serve`` on a real etcd."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

import aiohttp
import orjson

from tests.integration.conftest import JSON
from tests.integration.crd_support import CRDS, crd_body, install_crd, unique_group, wait_gone


async def swagger(http: aiohttp.ClientSession, etag: str = "") -> tuple[int, JSON, str]:
    headers = {"If-None-Match": etag} if etag else {}
    async with http.get("/openapi/v2", headers=headers) as resp:
        body = await resp.read()
        return resp.status, (orjson.loads(body) if body else {}), resp.headers.get("ETag", "")


async def until(http: aiohttp.ClientSession, check: Callable[[JSON], bool]) -> None:
    """Poll the document (as the specs do, every half second) until ``check`` holds."""
    async with asyncio.timeout(10):
        for _ in itertools.count():
            if check((await swagger(http))[1]["definitions"]):
                return
            await asyncio.sleep(0.1)


def rest_friendly(group: str, version: str, kind: str) -> str:
    """kube-openapi's ToRESTFriendlyName of group/version/kind."""
    return ".".join([*reversed(group.split(".")), version, kind])


async def test_openapi_v2_publishes_custom_resource_definitions(
    http: aiohttp.ClientSession,
) -> None:
    code, doc, etag = await swagger(http)
    assert code == 200 and doc["swagger"] == "2.0"
    pod = doc["definitions"]["io.k8s.api.core.v1.Pod"]
    # a described reference is the reference with its description, as v2 writes it
    assert pod["properties"]["spec"]["$ref"] == "#/definitions/io.k8s.api.core.v1.PodSpec"
    assert "allOf" not in pod["properties"]["spec"]
    int_or_string = doc["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert (int_or_string["type"], int_or_string["format"]) == ("string", "int-or-string")
    assert (await swagger(http, etag))[0] == 304

    group = unique_group()
    await install_crd(http, crd_body(group))
    name = rest_friendly(group, "v1", "Widget")
    await until(http, lambda definitions: name in definitions)
    definition = (await swagger(http))[1]["definitions"][name]
    assert definition["x-kubernetes-group-version-kind"] == [
        {"group": group, "kind": "Widget", "version": "v1"}
    ]
    assert definition["properties"]["spec"]["properties"]["color"]["type"] == "string"
    async with http.delete(f"{CRDS}/widgets.{group}") as resp:
        assert resp.status == 200
    await wait_gone(http, f"{CRDS}/widgets.{group}")
    await until(http, lambda definitions: name not in definitions)
    async with http.get("/openapi/v2", headers={"Accept": PROTOBUF_V2}) as resp:
        assert resp.status == 404  # the protobuf form is not built


PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


async def test_a_crd_preserving_unknown_fields_at_its_root_is_an_open_object_in_v2(
    http: aiohttp.ClientSession,
) -> None:
    """The conformance spec 'works for CRD without validation schema': a root that keeps
    unknown fields is published as ``type: object`` alone (kubectl would otherwise
    refuse any field it does not list)."""
    group = unique_group()
    body = crd_body(group)
    version = body["spec"]["versions"][0]
    version["schema"] = {"openAPIV3Schema": {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True}}
    version.pop("subresources", None)
    version.pop("selectableFields", None)
    version["additionalPrinterColumns"] = []
    await install_crd(http, body)
    name = rest_friendly(group, "v1", "Widget")
    await until(http, lambda definitions: name in definitions)
    assert (await swagger(http))[1]["definitions"][name] == {
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": group, "kind": "Widget", "version": "v1"}],
    }
