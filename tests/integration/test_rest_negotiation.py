"""Response negotiation: Tables (as kubectl asks), PartialObjectMetadata, aggregated
discovery, 406 for nothing acceptable."""

from __future__ import annotations

import asyncio
import datetime as dt

import aiohttp
import orjson
import pytest

from tests.integration.conftest import create, pod_body

pytestmark = pytest.mark.etcd

KUBECTL_TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)


async def test_list_and_get_as_table(http: aiohttp.ClientSession, namespace: str) -> None:
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("t1"))
    headers = {"Accept": KUBECTL_TABLE}
    async with http.get(f"/api/v1/namespaces/{namespace}/pods", headers=headers) as resp:
        assert resp.headers["Content-Type"].startswith("application/json;as=Table;v=v1")
        tbl = await resp.json()
    assert tbl["kind"] == "Table"
    assert [c["name"] for c in tbl["columnDefinitions"]][:3] == ["Name", "Ready", "Status"]
    assert tbl["rows"][0]["cells"][0] == "t1"
    assert tbl["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    async with http.get(f"/api/v1/namespaces/{namespace}/pods/t1", headers=headers) as resp:
        one = await resp.json()
    assert one["kind"] == "Table" and len(one["rows"]) == 1


async def test_partial_object_metadata(http: aiohttp.ClientSession, namespace: str) -> None:
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("pm"))
    accept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    async with http.get(f"/api/v1/namespaces/{namespace}/pods", headers={"Accept": accept}) as resp:
        lst = await resp.json()
    assert lst["kind"] == "PartialObjectMetadataList"
    assert lst["items"][0]["metadata"]["name"] == "pm"
    assert "spec" not in lst["items"][0]


async def test_not_acceptable_is_406(http: aiohttp.ClientSession, namespace: str) -> None:
    async with http.get(
        f"/api/v1/namespaces/{namespace}/pods", headers={"Accept": "text/html"}
    ) as resp:
        status = await resp.json()
        assert resp.status == 406
    assert status["reason"] == "NotAcceptable"


async def test_aggregated_discovery(http: aiohttp.ClientSession) -> None:
    for path in ("/api", "/apis"):
        async with http.get(path, headers={"Accept": AGGREGATED}) as resp:
            assert resp.status == 200
            assert "as=APIGroupDiscoveryList" in resp.headers["Content-Type"]
            etag = resp.headers["ETag"]
            doc = await resp.json()
        assert doc["kind"] == "APIGroupDiscoveryList"
        async with http.get(path, headers={"Accept": AGGREGATED, "If-None-Match": etag}) as resp:
            assert resp.status == 304
    async with http.get("/apis", headers={"Accept": "application/json"}) as resp:
        assert (await resp.json())["kind"] == "APIGroupList"


async def test_openapi_v3_index_and_document(http: aiohttp.ClientSession) -> None:
    async with http.get("/openapi/v3") as resp:
        index = await resp.json()
    url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
    async with http.get(url) as resp:
        assert resp.status == 200
        assert "immutable" in resp.headers["Cache-Control"]
        doc = await resp.json()
    assert any(path.endswith("/deployments/{name}") for path in doc["paths"])
    async with http.get("/openapi/v3/apis/nope/v1") as resp:
        assert resp.status == 404


# --- bad input: every answer a Status with upstream's code, reason and words ----------


async def _status(resp: aiohttp.ClientResponse, code: int, reason: str) -> str:
    body = await resp.json()
    assert (resp.status, body["kind"], body["reason"]) == (code, "Status", reason), body
    message: str = body["message"]
    return message


async def test_metadata_that_is_not_an_object_is_400(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    for metadata, go_type in (("x", "string"), ([1], "array"), (5, "number")):
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata}
        async with http.post(f"/api/v1/namespaces/{namespace}/pods", json=body) as resp:
            message = await _status(resp, 400, "BadRequest")
        assert message == (
            'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
            f"{go_type} into Go struct field Pod.metadata of type v1.ObjectMeta"
        )


async def test_unsupported_body_type_is_415(http: aiohttp.ClientSession, namespace: str) -> None:
    async with http.post(
        f"/api/v1/namespaces/{namespace}/pods", data=b"{}", headers={"Content-Type": "text/plain"}
    ) as resp:
        assert (await _status(resp, 415, "UnsupportedMediaType")).endswith(
            "accepted media types include: application/json, application/yaml, "
            "application/vnd.kubernetes.protobuf"
        )
    path = f"/api/v1/namespaces/{namespace}/pods/none"
    async with http.patch(path, data=b"{}", headers={"Content-Type": "application/json"}) as r:
        # go-restful refuses a body the PATCH route does not consume, before the handler
        assert await _status(r, 415, "UnsupportedMediaType") == "415: Unsupported Media Type"
    async with http.patch(path, headers={"Content-Type": "application/json"}) as r:
        # without a body (Content-Length: 0) go-restful is left with no route to produce
        assert await _status(r, 406, "NotAcceptable") == (
            "406: Not Acceptable\n\nAvailable representations: "
        )
    headers = {"Content-Type": "application/apply-patch+cbor"}
    async with http.patch(path, data=b"{}", headers=headers) as r:
        # CBOR apply needs a feature gate upstream: go-restful's 415, as for JSON
        assert await _status(r, 415, "UnsupportedMediaType") == "415: Unsupported Media Type"
    headers = {"Content-Type": "application/apply-patch+yaml"}
    async with http.patch(path, data=b"{}", headers=headers) as r:
        # server-side apply without a field manager: upstream's ValidatePatchOptions
        assert await _status(r, 422, "Invalid") == (
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
            "is required for apply patch"
        )


async def test_delete_options_from_the_body_and_the_query(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await create(http, pods, pod_body("keep", labels={"a": "b"}))
    dry = {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}
    async with http.delete(f"{pods}/keep", json=dry) as resp:  # as kubectl sends it
        assert resp.status == 200
    async with http.delete(pods, json={**dry, "propagationPolicy": "Background"}) as resp:
        assert resp.status == 200
        assert [i["metadata"]["name"] for i in (await resp.json())["items"]] == ["keep"]
    async with http.delete(f"{pods}?dryRun=All") as resp:
        assert resp.status == 200
    async with http.get(f"{pods}/keep") as resp:
        assert resp.status == 200  # none of the dry runs deleted it

    async with http.delete(f"{pods}/keep?gracePeriodSeconds=abc") as resp:
        assert await _status(resp, 400, "BadRequest") == (
            'strconv.ParseInt: parsing "abc": invalid syntax'
        )
    # every boolean parses as upstream's query conversion reads it: "maybe" is true
    query = "orphanDependents=maybe&propagationPolicy=Background"
    async with http.delete(f"{pods}/keep?{query}") as resp:
        assert "cannot be both set" in await _status(resp, 422, "Invalid")
    async with http.delete(f"{pods}/keep?propagationPolicy=Sometimes") as resp:
        assert await _status(resp, 422, "Invalid") == (
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
            '"Sometimes": supported values: "Foreground", "Background", "Orphan", "nil"'
        )
    async with http.delete(f"{pods}/keep", json={"dryRun": ["Yes"]}) as resp:
        assert "dryRun: Unsupported value" in await _status(resp, 422, "Invalid")
    async with http.delete(f"{pods}/keep", json={"gracePeriodSeconds": "x"}) as resp:
        await _status(resp, 400, "BadRequest")
    headers = {"Content-Type": "application/json"}
    async with http.delete(f"{pods}/keep", data=b"{bad", headers=headers) as resp:
        await _status(resp, 400, "BadRequest")
    async with http.delete(f"{pods}/keep", data=b"{bad") as resp:  # application/octet-stream
        await _status(resp, 415, "UnsupportedMediaType")
    both = {"orphanDependents": True, "propagationPolicy": "Orphan"}
    async with http.delete(f"{pods}/keep", json=both) as resp:
        assert "cannot be both set" in await _status(resp, 422, "Invalid")
    async with http.get(f"{pods}/keep") as resp:
        assert resp.status == 200
    async with http.delete(f"{pods}/keep", json={"gracePeriodSeconds": 0}) as resp:
        assert resp.status == 200


async def test_bad_query_parameters(http: aiohttp.ClientSession, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    cases = [
        ("?limit=abc", 400, "BadRequest", 'strconv.ParseInt: parsing "abc": invalid syntax'),
        ("?watch=1&timeoutSeconds=abc", 400, "BadRequest", "strconv.ParseInt"),
        ("?labelSelector=a%3D%3D%3Db", 400, "BadRequest", "unable to parse requirement"),
        ("?fieldSelector=spec.foo%3Dx", 400, "BadRequest", "field label not supported"),
        ("?resourceVersion=abc", 400, "BadRequest", "invalid resource version"),
        ("?resourceVersionMatch=Foo", 422, "Invalid", "ListOptions.meta.k8s.io"),
    ]
    for query, code, reason, words in cases:
        async with http.get(pods + query) as resp:
            assert words in await _status(resp, code, reason), query
    async with http.get(f"/api/v1/namespaces/{namespace}/foos") as resp:
        await _status(resp, 404, "NotFound")


async def test_streaming_list_on_the_uncached_store_ends_with_the_bookmark(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("s1"))
    query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    query += "&allowWatchBookmarks=true&timeoutSeconds=5"
    async with http.get(f"/api/v1/namespaces/{namespace}/pods?{query}") as resp:
        assert resp.status == 200
        added = orjson.loads(await resp.content.readline())
        bookmark = orjson.loads(await resp.content.readline())
        assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "s1")
        assert bookmark["type"] == "BOOKMARK"
        meta = bookmark["object"]["metadata"]
        assert meta["annotations"]["k8s.io/initial-events-end"] == "true"
        assert "kubernetes.io/initial-events-list-blueprint" in meta["annotations"]
        assert int(meta["resourceVersion"]) >= int(added["object"]["metadata"]["resourceVersion"])
        await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("s2"))
        later = orjson.loads(await resp.content.readline())
        assert (later["type"], later["object"]["metadata"]["name"]) == ("ADDED", "s2")
    query = query.replace("sendInitialEvents=true", "sendInitialEvents=false")
    async with http.get(f"/api/v1/namespaces/{namespace}/pods?{query}") as resp:
        await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("s3"))
        only = orjson.loads(await resp.content.readline())
        assert (only["type"], only["object"]["metadata"]["name"]) == ("ADDED", "s3")


async def test_table_watch_sends_columns_on_the_first_event_only(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("w1"))
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("w2"))
    headers = {"Accept": KUBECTL_TABLE}
    path = f"/api/v1/namespaces/{namespace}/pods?watch=1&timeoutSeconds=5"
    async with http.get(path, headers=headers) as resp:
        first = orjson.loads(await resp.content.readline())
        second = orjson.loads(await resp.content.readline())
    assert first["object"]["kind"] == second["object"]["kind"] == "Table"
    assert [c["name"] for c in first["object"]["columnDefinitions"]][:2] == ["Name", "Ready"]
    assert not second["object"].get("columnDefinitions")
    assert second["object"]["rows"][0]["cells"][0] == "w2"


async def test_system_namespaces_exist(http: aiohttp.ClientSession) -> None:
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        async with http.get(f"/api/v1/namespaces/{name}") as resp:
            assert resp.status == 200
            assert (await resp.json())["status"] == {"phase": "Active"}
    async with http.get("/readyz?verbose") as resp:
        assert "[+]poststarthook/start-system-namespaces-controller ok" in await resp.text()


async def test_the_legacy_token_tracking_config_map_is_written_at_start(
    http: aiohttp.ClientSession,
) -> None:
    """kube-controller-manager's legacy token cleaner reads it (an error every sync
    while it is missing): the date from which legacy token use is tracked."""
    path = "/api/v1/namespaces/kube-system/configmaps/"
    path += "kube-apiserver-legacy-service-account-token-tracking"
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        async with http.get(path) as resp:
            if resp.status == 200 or asyncio.get_running_loop().time() > deadline:
                assert resp.status == 200, await resp.text()
                since = (await resp.json())["data"]["since"]
                break
        await asyncio.sleep(0.2)
    assert since == dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    async with http.get("/readyz?verbose") as resp:
        assert "[+]poststarthook/start-legacy-token-tracking-controller ok" in await resp.text()


async def test_pathological_bodies_are_400(http: aiohttp.ClientSession, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    deep = "1"
    for _ in range(300):
        deep = '{"a":' + deep + "}"
    body = '{"metadata":{"name":"d"},"spec":{"affinity":' + deep + "}}"
    headers = {"Content-Type": "application/json"}
    async with http.post(pods, data=body, headers=headers) as resp:
        assert "exceeded max depth of 200" in await _status(resp, 400, "BadRequest")
    yaml_headers = {"Content-Type": "application/yaml"}
    async with http.post(pods, data="a: " + "[" * 5000, headers=yaml_headers) as resp:
        assert "yaml: " in await _status(resp, 400, "BadRequest")
    bomb = 'a: &a ["x", "x"]\n'
    for level, prev in zip("bcdefgh", "abcdefg", strict=True):
        bomb += f"{level}: &{level} [{', '.join([f'*{prev}'] * 9)}]\n"
    bomb += "i: [" + ", ".join(["*h"] * 9) + "]\n"
    async with http.post(pods, data=bomb, headers=yaml_headers) as resp:
        assert "excessive aliasing" in await _status(resp, 400, "BadRequest")
    await create(http, pods, pod_body("d"))
    patch_headers = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{pods}/d", data='{"spec":' + deep + "}", headers=patch_headers) as r:
        assert await _status(r, 400, "BadRequest") == (
            "error decoding patch: exceeded max depth of 200"
        )


async def test_strict_patch_is_invalid_without_a_kind(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await create(http, pods, pod_body("sp"))
    headers = {"Content-Type": "application/merge-patch+json"}
    path = f"{pods}/sp?fieldValidation=Strict"
    async with http.patch(path, data=b'{"spec":{"foo":1}}', headers=headers) as resp:
        body = await resp.json()
    assert (resp.status, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[foo:1]]": '
        'strict decoding error: unknown field "spec.foo"'
    )
    assert "kind" not in body["details"] and body["details"]["causes"][0]["field"] == "patch"


async def test_negative_watch_timeout_ends_the_watch(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    async with asyncio.timeout(10):
        path = f"/api/v1/namespaces/{namespace}/pods?watch=1&timeoutSeconds=-5"
        async with http.get(path) as resp:
            assert resp.status == 200
            assert await resp.read() == b""


async def test_field_manager_accepted_and_checked(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    await create(http, f"{pods}?fieldManager=kubectl-client-side-apply", pod_body("fm"))
    headers = {"Content-Type": "application/merge-patch+json"}
    patch = b'{"metadata":{"labels":{"a":"b"}}}'
    async with http.patch(f"{pods}/fm?fieldManager=kubectl-label", data=patch, headers=headers):
        pass
    async with http.patch(f"{pods}/fm?fieldManager={'m' * 129}", data=patch, headers=headers) as r:
        assert await _status(r, 422, "Invalid") == (
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: '
            "Too long: may not be more than 128 bytes"
        )
    async with http.post(f"{pods}?fieldManager=a%07b", json=pod_body("fm2")) as resp:
        assert await _status(resp, 422, "Invalid") == (
            'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\ab": '
            "invalid character U+0007 (at position 1)"
        )


async def test_scale_subresource(http: aiohttp.ClientSession, namespace: str) -> None:
    base = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    deployment = {
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    await create(http, base, deployment)
    async with http.get(f"{base}/d/scale") as resp:
        scale = await resp.json()
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 1}
    scale["spec"]["replicas"] = 4
    async with http.put(f"{base}/d/scale", json=scale) as resp:
        assert resp.status == 200 and (await resp.json())["spec"] == {"replicas": 4}
    async with http.put(f"{base}/d/scale", json=scale) as resp:  # stale resourceVersion
        await _status(resp, 409, "Conflict")
    merge = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{base}/d/scale", data=b'{"spec":{"replicas":-1}}', headers=merge) as r:
        assert "spec.replicas: Invalid value: -1" in await _status(r, 422, "Invalid")
    async with http.patch(
        f"{base}/d/scale?dryRun=All", data=b'{"spec":{"replicas":9}}', headers=merge
    ) as resp:
        assert (await resp.json())["spec"] == {"replicas": 9}
    async with http.get(f"{base}/d") as resp:
        stored = await resp.json()
    assert stored["spec"]["replicas"] == 4 and stored["metadata"]["generation"] == 2
    async with http.put(f"{base}/d/scale", json={**deployment, "kind": "Deployment"}) as resp:
        await _status(resp, 400, "BadRequest")
    async with http.get(f"{base}/none/scale") as resp:
        await _status(resp, 404, "NotFound")
