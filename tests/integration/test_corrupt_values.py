"""Values written into etcd by hand that cannot be decoded (a Pod whose labels are not
strings, truncated JSON, protobuf bytes that are not a valid envelope), through a real server over a
real etcd: the watch cache skips and reports them and keeps serving every valid object;
reads from etcd answer as kube-apiserver 1.37 does with AllowUnsafeMalformedObjectDeletion
(on by default since 1.37), including the unsafe delete of a corrupt value."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from etcdclient import EtcdClient
from tests.integration.conftest import ServerFactory, ServerProcess, create, pod_body
from tests.integration.test_watch_http import EVENT_TIMEOUT, next_event

pytestmark = pytest.mark.etcd

JSON = dict[str, object]

BAD_VALUES = {
    "labels": orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "labels", "namespace": "{ns}", "labels": {"a": 1}},
        }
    ),
    "truncated": b'{"a":',
    # the k8s\0 magic, then typeMeta holding "v1" as if it were a message: wire type 6
    "protobuf": b"k8s\x00\x0a\x02v1\x12\x03Pod",
}
CORRUPT_PREFIX = "StorageError: corrupt object, Code: 7, Key: "
UNSAFE = "ignoreStoreReadErrorWithClusterBreakingPotential"


async def put_bad_values(srv: ServerProcess, ns: str) -> dict[str, str]:
    """Write every BAD_VALUES entry under the namespace's pods; {name: etcd key}."""
    keys = {name: f"{srv.prefix}/pods/{ns}/{name}" for name in BAD_VALUES}
    async with EtcdClient(list(srv.etcd_servers)) as client:
        for name, value in BAD_VALUES.items():
            await client.put(keys[name].encode(), value.replace(b"{ns}", ns.encode()))
    return keys


@pytest.fixture
async def ns_http(
    request: pytest.FixtureRequest, server_factory: ServerFactory
) -> AsyncIterator[tuple[ServerProcess, aiohttp.ClientSession, str]]:
    flags = getattr(request, "param", ())
    srv = server_factory(*flags)
    ns = f"ns-{uuid.uuid4().hex[:8]}"
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": ns}})
        yield srv, http, ns


def names(body: JSON) -> list[str]:
    items = body["items"]
    assert isinstance(items, list)
    return [i["metadata"]["name"] for i in items]


async def test_the_cache_skips_corrupt_values_and_keeps_serving(
    ns_http: tuple[ServerProcess, aiohttp.ClientSession, str],
) -> None:
    """Before: the labels value killed the reflector (``_shrink``: TypeError), the pods
    cache froze, /readyz stayed 200 and new pods never reached RV=0 reads or watches."""
    srv, http, ns = ns_http
    pods = f"/api/v1/namespaces/{ns}/pods"
    first = await create(http, pods, pod_body("p1"))
    rv = first["metadata"]["resourceVersion"]
    async with http.get(f"{pods}?watch=1&resourceVersion={rv}") as watch:
        assert watch.status == 200
        await put_bad_values(srv, ns)
        await create(http, pods, pod_body("p2"))
        event = await next_event(watch)
    added = event["object"]
    assert (event["type"], added["metadata"]["name"]) == ("ADDED", "p2")
    async with http.get(f"{pods}?resourceVersion=0") as resp:
        assert resp.headers["X-Watchcache-Served-From"] == "cache"
        assert names(await resp.json()) == ["p1", "p2"]
    async with http.get(f"{pods}/p2?resourceVersion=0") as resp:
        assert resp.status == 200
    async with http.get("/readyz") as resp:
        assert resp.status == 200
    async with http.get("/metrics") as resp:
        metrics = await resp.text()
    decode_errors = [
        line
        for line in metrics.splitlines()
        if line.startswith('apiserver_storage_decode_errors_total{resource="pods"}')
    ]
    assert decode_errors and float(decode_errors[0].split()[-1]) >= len(BAD_VALUES)


async def test_reads_from_etcd_answer_as_kube_1_37(
    ns_http: tuple[ServerProcess, aiohttp.ClientSession, str],
) -> None:
    """Before: GET and LIST answered 500 ``unable to decode object at ...`` for the
    first bad value; 1.37 names every corrupt key in one StorageReadError."""
    srv, http, ns = ns_http
    pods = f"/api/v1/namespaces/{ns}/pods"
    await create(http, pods, pod_body("good"))
    keys = await put_bad_values(srv, ns)
    async with http.get(f"{pods}/truncated") as resp:
        status = await resp.json()
        assert resp.status == 500
    assert status["reason"] == "InternalError"
    assert status["message"].startswith(
        f"Internal error occurred: {CORRUPT_PREFIX}{keys['truncated']}, ResourceVersion: 0, "
        "AdditionalErrorMsg: object not decodable revision="
    )
    async with http.get(pods) as resp:
        status = await resp.json()
        assert resp.status == 500
    assert status["reason"] == "StorageReadError"
    assert status["message"].startswith(
        f"failed to read one or more pods from the storage: {CORRUPT_PREFIX}"
    )
    assert status["message"].endswith("(and 1 more)")
    details = status["details"]
    assert (details["kind"], details["name"]) == ("pods", "list") and "group" not in details
    # Without typed decoding the labels value is JSON this store serves (kube's typed
    # decoder rejects it); the cache, which must read labels, skips it (test above).
    assert [c["field"] for c in details["causes"]] == [keys["protobuf"], keys["truncated"]]
    assert {c["reason"] for c in details["causes"]} == {"UnexpectedServerResponse"}
    # kubectl's Table (its rows printed while etcd is read): the very same Status
    table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    async with http.get(pods, headers={"Accept": table}) as resp:
        assert resp.status == 500
        assert await resp.json() == status


async def test_unsafe_delete_of_a_corrupt_value(
    ns_http: tuple[ServerProcess, aiohttp.ClientSession, str],
) -> None:
    srv, http, ns = ns_http
    pods = f"/api/v1/namespaces/{ns}/pods"
    await create(http, pods, pod_body("good"))
    keys = await put_bad_values(srv, ns)
    async with http.delete(f"{pods}/protobuf") as resp:  # an ordinary delete cannot read it
        assert resp.status == 500
    unsafe = {"kind": "DeleteOptions", "apiVersion": "v1", UNSAFE: True}
    async with http.delete(f"{pods}/protobuf", json={**unsafe, "gracePeriodSeconds": 0}) as resp:
        status = await resp.json()
        assert resp.status == 422
    assert status["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": UNSAFE,
        "message": "Invalid value: true: cannot be set together with .gracePeriodSeconds",
    }]  # fmt: skip
    async with http.delete(f"{pods}/good", json=unsafe) as resp:
        status = await resp.json()
        assert resp.status == 409
    assert status["message"] == (
        'Operation cannot be fulfilled on pods "good": StorageError: invalid object, Code: 4, '
        f"Key: {srv.prefix}/pods/{ns}/good, ResourceVersion: 0, AdditionalErrorMsg: "
        "unsafe deletion is not allowed because the object is decodable from storage"
    )
    async with http.delete(f"{pods}/protobuf?dryRun=All&{UNSAFE}=true") as resp:
        assert resp.status == 200
    async with http.delete(f"{pods}/protobuf", json=unsafe) as resp:
        status = await resp.json()
        assert resp.status == 200
    assert status == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": "protobuf", "kind": "Pod"}, "code": 200,
    }  # fmt: skip
    async with EtcdClient(list(srv.etcd_servers)) as client:
        assert (await client.get(keys["protobuf"].encode())).kv is None
    async with http.delete(f"{pods}/protobuf", json=unsafe) as resp:
        assert resp.status == 404
    async with http.delete(pods, json=unsafe) as resp:
        status = await resp.json()
        assert resp.status == 422
    assert status["details"]["causes"][0]["message"] == (
        "Invalid value: true: is not allowed with DELETECOLLECTION, "
        "try again after removing the option"
    )


@pytest.mark.parametrize(
    "ns_http", [("--feature-gates=AllowUnsafeMalformedObjectDeletion=false",)], indirect=True
)
async def test_without_the_gate_the_unsafe_option_is_ignored(
    ns_http: tuple[ServerProcess, aiohttp.ClientSession, str],
) -> None:
    srv, http, ns = ns_http
    pods = f"/api/v1/namespaces/{ns}/pods"
    await put_bad_values(srv, ns)
    async with http.get(pods) as resp:
        status = await resp.json()
        assert resp.status == 500
    assert status["reason"] == "InternalError" and "unable to decode object at" in status["message"]
    unsafe = {"kind": "DeleteOptions", "apiVersion": "v1", UNSAFE: True}
    async with http.delete(f"{pods}/truncated", json=unsafe) as resp:
        assert resp.status == 500


@pytest.mark.parametrize("ns_http", [("--watch-cache=false",)], indirect=True)
async def test_an_etcd_watch_meeting_a_corrupt_value_ends_with_one_error(
    ns_http: tuple[ServerProcess, aiohttp.ClientSession, str],
) -> None:
    srv, http, ns = ns_http
    pods = f"/api/v1/namespaces/{ns}/pods"
    first = await create(http, pods, pod_body("p1"))
    rv = first["metadata"]["resourceVersion"]
    async with http.get(f"{pods}?watch=1&resourceVersion={rv}") as watch:
        async with EtcdClient(list(srv.etcd_servers)) as client:
            await client.put(f"{srv.prefix}/pods/{ns}/bad".encode(), BAD_VALUES["truncated"])
        event = await next_event(watch)
        async with asyncio.timeout(EVENT_TIMEOUT):
            assert await watch.content.readline() == b""  # the stream ended
    status = event["object"]
    assert event["type"] == "ERROR"
    assert (status["code"], status["reason"]) == (500, "InternalError")
    assert CORRUPT_PREFIX in status["message"]



async def test_a_value_with_bytes_that_are_not_utf8_reads_as_go_reads_it(
    ns_http: tuple[ServerProcess, aiohttp.ClientSession, str],
) -> None:
    """Was served raw (a 200 that is not JSON) and its DELETE a 500 ``unexpected
    JSONDecodeError``: Go's decoder reads each invalid byte as U+FFFD, so kube-apiserver
    serves and deletes it as any other object."""
    srv, http, ns = ns_http
    pods = f"/api/v1/namespaces/{ns}/pods"
    value = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"u","labels":{"a":"x\xffy"}}}'
    async with EtcdClient(list(srv.etcd_servers)) as client:
        await client.put(f"{srv.prefix}/pods/{ns}/u".encode(), value)
    async with http.get(f"{pods}/u") as resp:
        assert resp.status == 200
        assert (await resp.json())["metadata"]["labels"] == {"a": "x\ufffdy"}
    async with http.get(pods) as resp:
        assert names(await resp.json()) == ["u"]
    async with http.delete(f"{pods}/u") as resp:
        assert resp.status == 200, await resp.text()
    async with http.get(pods) as resp:
        assert names(await resp.json()) == []


async def test_a_value_nested_past_the_decoders_depth_is_a_corrupt_object(
    ns_http: tuple[ServerProcess, aiohttp.ClientSession, str],
) -> None:
    """Was served raw (JSON nested 1,100 levels) and its DELETE a 500 ``unexpected
    JSONDecodeError``. Go reads up to 10,000 levels, orjson 1,024: past that the value is
    a corrupt object here (docs/security.md), deleted with the unsafe option."""
    srv, http, ns = ns_http
    pods = f"/api/v1/namespaces/{ns}/pods"
    key = f"{srv.prefix}/pods/{ns}/deep"
    value = (b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep"},"spec":'
             + b'{"a":' * 1100 + b"1" + b"}" * 1100 + b"}")  # fmt: skip
    async with EtcdClient(list(srv.etcd_servers)) as client:
        await client.put(key.encode(), value)
    for method in ("GET", "DELETE"):
        async with http.request(method, f"{pods}/deep") as resp:
            status = await resp.json()
            assert resp.status == 500, status
        assert status["reason"] == "InternalError"
        assert status["message"].startswith(f"Internal error occurred: {CORRUPT_PREFIX}{key}")
    unsafe = {"kind": "DeleteOptions", "apiVersion": "v1", UNSAFE: True}
    async with http.delete(f"{pods}/deep", json=unsafe) as resp:
        assert resp.status == 200, await resp.text()
    async with http.get(pods) as resp:
        assert resp.status == 200 and names(await resp.json()) == []


async def _get_json(http: aiohttp.ClientSession, path: str) -> tuple[int, Any]:
    async with http.get(path) as resp:
        return resp.status, await resp.json()


async def _corrupt_gauge(http: aiohttp.ClientSession) -> float:
    async with http.get("/metrics") as resp:
        text = await resp.text()
    found = [line for line in text.splitlines()
             if line.startswith('watchcache_corrupt_objects{resource="configmaps"}')]  # fmt: skip
    return float(found[0].split()[-1]) if found else 0.0


async def test_a_corrupt_overwrite_takes_the_old_version_out_of_the_cache(
    ns_http: tuple[ServerProcess, aiohttp.ClientSession, str],
) -> None:
    """``{garbage`` put over a valid ConfigMap: RV=0 reads kept serving the original, a
    watch saw nothing, /readyz said nothing. The cache now holds what a re-list would
    (the key is skipped), tells its watchers the old version is gone, says so in a
    metric and /readyz?verbose, and serves a valid value written later as usual."""
    srv, http, ns = ns_http
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    created = await create(http, cms, {"metadata": {"name": "stale"}, "data": {"a": "1"}})
    rv = created["metadata"]["resourceVersion"]
    key = f"{srv.prefix}/configmaps/{ns}/stale".encode()
    async with http.get(f"{cms}?watch=1&resourceVersion={rv}") as watch:
        assert watch.status == 200
        async with EtcdClient(list(srv.etcd_servers)) as client:
            await client.put(key, b"{garbage")
            event = await next_event(watch)
            assert (event["type"], event["object"]["metadata"]["name"]) == ("DELETED", "stale")
            assert event["object"]["data"] == {"a": "1"}  # the last version the cache had
            assert (await _get_json(http, f"{cms}/stale?resourceVersion=0"))[0] == 404
            status, listed = await _get_json(http, f"{cms}?resourceVersion=0")
            assert status == 200 and names(listed) == []
            assert await _corrupt_gauge(http) == 1
            async with http.get("/readyz?verbose") as resp:
                text = await resp.text()
                assert resp.status == 200, text
            assert "[+]watch-cache ok: objects in etcd that cannot be decoded" in text
            assert "configmaps: 1" in text
            valid = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "stale", "namespace": ns},
                                  "data": {"a": "2"}})  # fmt: skip
            await client.put(key, valid)
            event = await next_event(watch)
    assert (event["type"], event["object"]["data"]) == ("ADDED", {"a": "2"})
    status, got = await _get_json(http, f"{cms}/stale?resourceVersion=0")
    assert status == 200 and got["data"] == {"a": "2"}
    assert await _corrupt_gauge(http) == 0
