"""``application/vnd.kubernetes.protobuf`` over HTTP against a real etcd, once uncached and
once with the watch cache: request bodies, responses, Status errors, LISTs, watch frames,
and an etcd written half in JSON and half in protobuf.

Bodies are built and responses parsed with protobuf's own message classes (made from
the compiled Kubernetes descriptors), and watch frames are cut from the raw bytes by the
test: our converter is not used to check itself.
"""

from __future__ import annotations

import asyncio
import base64
import struct
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import Message

from lab.etcd import EtcdCluster
from storage.protobuf.schema import load_raw
from tests.integration.conftest import ServerProcess, create, start_server

PB = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
_POOL = descriptor_pool.DescriptorPool()
for _file in load_raw().descriptors.file:
    _POOL.Add(_file)


def cls(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(name))


Unknown = cls("k8s.io.apimachinery.pkg.runtime.Unknown")
ConfigMap = cls("k8s.io.api.core.v1.ConfigMap")
ConfigMapList = cls("k8s.io.api.core.v1.ConfigMapList")
Pod = cls("k8s.io.api.core.v1.Pod")
Status = cls("k8s.io.apimachinery.pkg.apis.meta.v1.Status")
WatchEvent = cls("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent")
DeleteOptions = cls("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions")
APIVersions = cls("k8s.io.apimachinery.pkg.apis.meta.v1.APIVersions")
APIResourceList = cls("k8s.io.apimachinery.pkg.apis.meta.v1.APIResourceList")
PartialObjectMetadata = cls("k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata")
PartialObjectMetadataList = cls("k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadataList")
BLUEPRINT = "kubernetes.io/initial-events-list-blueprint"
EMPTY_LIST_META = b"\n\x06\n\x00\x12\x00\x1a\x00"  # metadata{selfLink, resourceVersion, continue}


def envelope(api_version: str, kind: str, msg: Message | bytes) -> bytes:
    raw = msg if isinstance(msg, bytes) else msg.SerializeToString()
    unknown = Unknown(raw=raw, contentEncoding="", contentType="")
    unknown.typeMeta.apiVersion = api_version
    unknown.typeMeta.kind = kind
    data: bytes = unknown.SerializeToString()
    return MAGIC + data


def open_envelope(data: bytes) -> tuple[str, str, bytes]:
    assert data[:4] == MAGIC, data[:40]
    unknown = Unknown.FromString(data[4:])
    return unknown.typeMeta.apiVersion, unknown.typeMeta.kind, unknown.raw


def configmap(name: str, **data: str) -> bytes:
    cm = ConfigMap()
    cm.metadata.name = name
    for k, v in data.items():
        cm.data[k] = v
    return envelope("v1", "ConfigMap", cm)


@pytest.fixture(scope="module", params=["uncached", "cached"])
def pb_server(etcd: EtcdCluster, request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    flag = "--watch-cache=false" if request.param == "uncached" else "--watch-cache=true"
    proc = start_server(etcd.endpoints, None, flag)
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
async def http(pb_server: ServerProcess) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=pb_server.url) as session:
        yield session


@pytest.fixture
async def ns(http: aiohttp.ClientSession) -> str:
    name = f"pb-{uuid.uuid4().hex[:10]}"
    await create(http, "/api/v1/namespaces", {"metadata": {"name": name}})
    return name


async def test_create_get_list_and_errors_in_protobuf(http: aiohttp.ClientSession, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    headers = {"Content-Type": PB, "Accept": f"{PB}, application/json"}
    async with http.post(cms, data=configmap("a", k="v"), headers=headers) as resp:
        assert resp.status == 201, await resp.text()
        assert resp.headers["Content-Type"] == PB
        api_version, kind, raw = open_envelope(await resp.read())
    created = ConfigMap.FromString(raw)
    assert (api_version, kind) == ("v1", "ConfigMap")
    assert created.metadata.name == "a" and created.metadata.namespace == ns
    assert dict(created.data) == {"k": "v"} and created.metadata.uid
    rv = created.metadata.resourceVersion
    assert rv

    async with http.get(f"{cms}/a", headers={"Accept": PB}) as resp:
        got = ConfigMap.FromString(open_envelope(await resp.read())[2])
    assert got.metadata.resourceVersion == rv and got.metadata.creationTimestamp.seconds > 0
    async with http.get(f"{cms}/a") as resp:  # JSON stays the default
        assert (await resp.json())["data"] == {"k": "v"}

    # from etcd (uncached) or the cache; RV=0 could be served before the cache saw "a"
    for query in ("", f"?resourceVersion={rv}&resourceVersionMatch=NotOlderThan"):
        async with http.get(cms + query, headers={"Accept": f"{PB}, application/json"}) as resp:
            assert resp.headers["Content-Type"] == PB
            body = await resp.read()
            # its size is known before the first byte: no chunked encoding
            assert "Transfer-Encoding" not in resp.headers
            assert resp.headers["Content-Length"] == str(len(body))
            api_version, kind, raw = open_envelope(body)
        listed = ConfigMapList.FromString(raw)
        assert (api_version, kind) == ("v1", "ConfigMapList")
        assert [i.metadata.name for i in listed.items] == ["a"]
        assert int(listed.metadata.resourceVersion) >= int(rv)

    async with http.get(f"{cms}/missing", headers={"Accept": PB}) as resp:
        assert resp.status == 404 and resp.headers["Content-Type"] == PB
        api_version, kind, raw = open_envelope(await resp.read())
    status = Status.FromString(raw)
    assert (api_version, kind) == ("v1", "Status")
    assert (status.code, status.reason) == (404, "NotFound")
    assert status.message == 'configmaps "missing" not found'
    # a filter's own Status (here the timeout filter's 400) is negotiated the same way
    async with http.get(f"{cms}?timeout=soon", headers={"Accept": PB}) as resp:
        assert resp.status == 400 and resp.headers["Content-Type"] == PB
        api_version, kind, raw = open_envelope(await resp.read())
    assert Status.FromString(raw).message.startswith("invalid timeout specified")

    partial = f"{PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    async with http.get(cms, headers={"Accept": partial}) as resp:
        assert resp.headers["Content-Type"] == PB
        api_version, kind, raw = open_envelope(await resp.read())
    assert (api_version, kind) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    async with http.get(cms, headers={"Accept": f"{PB};as=Table;g=meta.k8s.io;v=v1"}) as resp:
        assert resp.status == 406
        assert (await resp.json())["message"] == (
            "only the following media types are accepted: application/json, "
            "application/yaml, application/vnd.kubernetes.protobuf"
        )
    # a table is never protobuf (as upstream): the JSON alternative answers
    table = f"{PB};as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"
    async with http.get(cms, headers={"Accept": table}) as resp:
        assert (await resp.json())["kind"] == "Table"


async def _status(resp: aiohttp.ClientResponse) -> tuple[int, str, str]:
    body = await resp.json()
    return resp.status, body["reason"], body["message"]


async def test_bad_protobuf_bodies(http: aiohttp.ClientSession, ns: str) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    headers = {"Content-Type": PB}
    async with http.post(pods, data=b'{"kind":"Pod"}', headers=headers) as resp:
        assert await _status(resp) == (
            400, "BadRequest",
            "the object provided is unrecognized (must be of type Pod): provided data does "
            'not appear to be a protobuf message, expected prefix [107 56 115 0] ({"kind":"Pod"})',
        )  # fmt: skip
    pod = Pod()
    pod.metadata.name = "p"
    truncated = envelope("v1", "Pod", pod)[:-7]  # inside the Pod message
    async with http.post(pods, data=truncated, headers=headers) as resp:
        code, reason, message = await _status(resp)
        assert (code, reason) == (400, "BadRequest") and "unexpected EOF" in message
    async with http.post(pods, data=envelope("v1", "Widget", Pod()), headers=headers) as resp:
        assert await _status(resp) == (
            400, "BadRequest",
            'Widget in version "v1" cannot be handled as a Pod: no kind "Widget" is '
            'registered for version "v1" in scheme "pkg/api/legacyscheme/scheme.go:30"',
        )  # fmt: skip
    async with http.post(pods, data=configmap("c"), headers=headers) as resp:
        assert await _status(resp) == (
            400, "BadRequest",
            'ConfigMap in version "v1" cannot be handled as a Pod: converting (v1.ConfigMap) '
            "to (core.Pod): unknown conversion",
        )  # fmt: skip
    async with http.post(pods, data=MAGIC, headers=headers) as resp:
        assert await _status(resp) == (
            400, "BadRequest",
            "the object provided is unrecognized (must be of type Pod): empty body (6b387300)",
        )  # fmt: skip
    async with http.post(pods, data=envelope("v1", "Pod", b"\x0a\xff"), headers=headers) as resp:
        message = (await _status(resp))[2]
    assert message == 'Pod in version "v1" cannot be handled as a Pod: unexpected EOF'

    # PATCH bodies stay JSON/YAML, as upstream
    async with http.patch(f"{pods}/x", data=configmap("c"), headers=headers) as resp:
        assert resp.status == 415


def frames(data: bytes) -> list[tuple[str, str, str, bytes]]:
    """(event type, object apiVersion, kind, object message) per length-prefixed frame."""
    out = []
    while data:
        (size,) = struct.unpack(">I", data[:4])
        frame, data = data[4 : 4 + size], data[4 + size :]
        assert not frame.startswith(MAGIC)  # the event itself has no envelope, its object has
        event = WatchEvent.FromString(frame)
        obj_version, obj_kind, obj_raw = open_envelope(event.object.raw)
        out.append((event.type, obj_version, obj_kind, obj_raw))
    return out


async def _watch(
    http: aiohttp.ClientSession, path: str, until: int, accept: str = f"{PB};stream=watch"
) -> bytes:
    """The raw body of a protobuf watch, read until ``until`` frames arrived."""
    headers = {"Accept": accept}
    async with http.get(path, headers=headers) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == f"{PB};stream=watch"
        data = b""
        async with asyncio.timeout(20):
            while len(frames_complete(data)) < until:
                chunk = await resp.content.readany()
                assert chunk, "stream ended early"
                data += chunk
        return data


def frames_complete(data: bytes) -> list[int]:
    sizes, pos = [], 0
    while pos + 4 <= len(data):
        (size,) = struct.unpack(">I", data[pos : pos + 4])
        if pos + 4 + size > len(data):
            break
        sizes.append(size)
        pos += 4 + size
    return sizes


async def test_watch_frames(http: aiohttp.ClientSession, ns: str) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    first = await create(http, cms, {"metadata": {"name": "w0"}})
    rv = first["metadata"]["resourceVersion"]

    async def change() -> None:
        await create(http, cms, {"metadata": {"name": "w1"}, "data": {"a": "1"}})
        body = {"metadata": {"name": "w1"}, "data": {"a": "2"}}
        async with http.put(f"{cms}/w1", json=body) as resp:
            assert resp.status == 200
        async with http.delete(f"{cms}/w1") as resp:
            assert resp.status == 200

    # the watch starts from rv: the changes reach it whenever it opens (no wait needed)
    watch = asyncio.create_task(_watch(http, f"{cms}?watch=1&resourceVersion={rv}", 3))
    await change()
    got = frames(await watch)
    assert [(t, k) for t, _, k, _ in got] == [
        ("ADDED", "ConfigMap"), ("MODIFIED", "ConfigMap"), ("DELETED", "ConfigMap")
    ]  # fmt: skip
    assert dict(ConfigMap.FromString(got[1][3]).data) == {"a": "2"}

    # a streaming list: ADDED for what exists, then the initial-events-end BOOKMARK
    query = (
        "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    )
    got = frames(await _watch(http, f"{cms}?{query}", 2))
    assert got[0][0] == "ADDED" and ConfigMap.FromString(got[0][3]).metadata.name == "w0"
    assert got[1][0] == "BOOKMARK" and got[1][2] == "ConfigMap"
    bookmark = ConfigMap.FromString(got[1][3])
    assert bookmark.metadata.annotations["k8s.io/initial-events-end"] == "true"


async def test_watch_list_in_protobuf_as_partial_object_metadata_carries_the_blueprint(
    http: aiohttp.ClientSession, ns: str
) -> None:
    """What client-go's metadata informers send (protobuf first): PartialObjectMetadata
    objects, and an end bookmark whose blueprint is an empty PartialObjectMetadataList
    envelope (the object stream's encoding), as 1.32's watchListTransformer makes it;
    without ``as=``, the blueprint is the resource's empty List envelope."""
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    await create(http, cms, {"metadata": {"name": "m0"}, "data": {"k": "v"}})
    query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    query += "&allowWatchBookmarks=true"
    accept = f"{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
    got = frames(await _watch(http, f"{cms}?{query}", 2, accept))
    assert [(t, v, k) for t, v, k, _ in got] == [
        ("ADDED", "meta.k8s.io/v1", "PartialObjectMetadata"),
        ("BOOKMARK", "meta.k8s.io/v1", "PartialObjectMetadata"),
    ]
    assert PartialObjectMetadata.FromString(got[0][3]).metadata.name == "m0"
    annotations = PartialObjectMetadata.FromString(got[1][3]).metadata.annotations
    assert annotations["k8s.io/initial-events-end"] == "true"
    version, kind, raw = open_envelope(base64.b64decode(annotations[BLUEPRINT]))
    assert (version, kind) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    # an empty ListMeta as Go's generated marshaller writes it (its strings always)
    assert raw == EMPTY_LIST_META and not PartialObjectMetadataList.FromString(raw).items

    got = frames(await _watch(http, f"{cms}?{query}", 2))
    end = ConfigMap.FromString(got[1][3]).metadata.annotations
    version, kind, raw = open_envelope(base64.b64decode(end[BLUEPRINT]))
    assert (version, kind, raw) == ("v1", "ConfigMapList", EMPTY_LIST_META)


async def test_watch_error_event_is_a_protobuf_status(
    http: aiohttp.ClientSession, ns: str, pb_server: ServerProcess
) -> None:
    if "--watch-cache=false" in pb_server.extra_args:
        pytest.skip("the 410 comes from the cache window")
    got = frames(
        await _watch(http, f"/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=1", 1)
    )
    assert [(t, v, k) for t, v, k, _ in got] == [("ERROR", "v1", "Status")]
    status = Status.FromString(got[0][3])
    assert (status.code, status.reason) == (410, "Expired")


async def test_mixed_encodings_in_one_etcd(etcd: EtcdCluster) -> None:
    """Objects written as JSON by one server and as protobuf by another (same prefix) are
    listed and watched by both, from etcd and from the cache."""
    prefix = f"/t-{uuid.uuid4().hex[:12]}/registry"
    as_json = start_server(etcd.endpoints, prefix, "--storage-media-type=application/json")
    as_pb = start_server(etcd.endpoints, prefix, "--watch-cache=true")
    try:
        async with (
            aiohttp.ClientSession(base_url=as_json.url) as j,
            aiohttp.ClientSession(base_url=as_pb.url) as p,
        ):
            await create(j, "/api/v1/namespaces", {"metadata": {"name": "mix"}})
            cms = "/api/v1/namespaces/mix/configmaps"
            await create(j, cms, {"metadata": {"name": "json"}, "data": {"k": "j"}})
            last = await create(p, cms, {"metadata": {"name": "proto"}, "data": {"k": "p"}})
            rv = last["metadata"]["resourceVersion"]
            for http in (j, p):
                # RV=0 could be served before a cache saw the last write
                for query in ("", f"?resourceVersion={rv}&resourceVersionMatch=NotOlderThan"):
                    async with http.get(cms + query) as resp:
                        items = (await resp.json())["items"]
                    assert {i["metadata"]["name"]: i["data"]["k"] for i in items} == {
                        "json": "j", "proto": "p"
                    }  # fmt: skip
            # the JSON server updates the protobuf object: it is stored as JSON now
            body = {"metadata": {"name": "proto"}, "data": {"k": "p2"}}
            async with j.put(f"{cms}/proto", json=body) as resp:
                assert resp.status == 200
            async with asyncio.timeout(10):
                while True:
                    async with p.get(f"{cms}/proto?resourceVersion=0") as resp:
                        if (await resp.json())["data"]["k"] == "p2":
                            break
                    await asyncio.sleep(0.1)
    finally:
        as_json.stop()
        as_pb.stop()


async def test_delete_options_in_protobuf(http: aiohttp.ClientSession, ns: str) -> None:
    # client-go's typed clients send DeleteOptions in the client's content type
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    await create(http, cms, {"metadata": {"name": "d"}})
    opts = DeleteOptions()
    opts.preconditions.uid = "not-its-uid"
    body = envelope("meta.k8s.io/v1", "DeleteOptions", opts)
    headers = {"Content-Type": PB}
    async with http.delete(f"{cms}/d", data=body, headers=headers) as resp:
        assert resp.status == 409
        assert "not-its-uid" in (await resp.json())["message"]
    opts = DeleteOptions(propagationPolicy="Background")
    body = envelope("meta.k8s.io/v1", "DeleteOptions", opts)
    async with http.delete(f"{cms}/d", data=body, headers=headers) as resp:
        assert resp.status == 200


async def test_discovery_in_protobuf(http: aiohttp.ClientSession) -> None:
    async with http.get("/api", headers={"Accept": f"{PB}, application/json"}) as resp:
        assert resp.headers["Content-Type"] == PB
        api_version, kind, raw = open_envelope(await resp.read())
    assert (api_version, kind) == ("v1", "APIVersions")
    assert list(APIVersions.FromString(raw).versions) == ["v1"]
    async with http.get("/apis/apps/v1", headers={"Accept": PB}) as resp:
        api_version, kind, raw = open_envelope(await resp.read())
    resources = {r.name: r for r in APIResourceList.FromString(raw).resources}
    assert kind == "APIResourceList" and "deployments" in resources
    assert "list" in resources["deployments"].verbs.items
    async with http.get("/apis/apps/v1") as resp:  # JSON stays the default
        assert (await resp.json())["groupVersion"] == "apps/v1"
