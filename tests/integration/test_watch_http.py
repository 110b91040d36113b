"""WATCH and RV=0 LIST through ``watchcache serve`` with its watch cache (the default), and
real clients on top: the official Python client's ``watch.Watch().stream`` and
``kubectl get --watch --output-watch-events``."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from lab.etcd import EtcdCluster
from lab.kubeconfig import write_kubeconfig
from tests.client_python import Watch, meta
from tests.integration.conftest import KUBECTL, ServerProcess, create, pod_body, start_server

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
EVENT_TIMEOUT = 10.0
BLUEPRINT = "kubernetes.io/initial-events-list-blueprint"
AS_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"


@pytest.fixture(scope="module")
def cached_server(etcd: EtcdCluster) -> Iterator[ServerProcess]:
    """A server with a small fixed history ring and fast bookmarks."""
    with start_server(
        etcd.endpoints, None, "--default-watch-cache-size=5", "--watch-bookmark-interval=300ms"
    ) as proc:
        yield proc


@pytest.fixture
async def http(cached_server: ServerProcess) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=cached_server.url) as session:
        yield session


@pytest.fixture
async def ns(http: aiohttp.ClientSession) -> str:
    name = f"ns-{uuid.uuid4().hex[:10]}"
    await create(http, "/api/v1/namespaces", {"metadata": {"name": name}})
    return name


def pods(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/pods"


@contextlib.asynccontextmanager
async def watching(http: aiohttp.ClientSession, path: str) -> AsyncIterator[aiohttp.ClientResponse]:
    async with http.get(path) as resp:
        assert resp.status == 200, await resp.text()
        yield resp


async def next_event(resp: aiohttp.ClientResponse) -> JSON:
    async with asyncio.timeout(EVENT_TIMEOUT):
        line = await resp.content.readline()
    assert line.endswith(b"\n"), f"stream ended: {line!r}"
    event: JSON = orjson.loads(line)
    return event


async def ended(resp: aiohttp.ClientResponse) -> bool:
    async with asyncio.timeout(EVENT_TIMEOUT):
        return await resp.content.readline() == b""


def rv(obj: JSON) -> str:
    value: str = obj["metadata"]["resourceVersion"]
    return value


async def test_too_old_resource_version_is_http_200_with_one_410_error(
    http: aiohttp.ClientSession, ns: str
) -> None:
    first = await create(http, pods(ns), pod_body("p"))
    for i in range(8):  # more changes than the ring of 5 holds
        async with http.patch(
            f"{pods(ns)}/p",
            data=orjson.dumps({"metadata": {"labels": {"i": str(i)}}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ) as resp:
            assert resp.status == 200
            last = await resp.json()
    async with http.get(f"{pods(ns)}?resourceVersion={rv(last)}") as resp:
        assert resp.status == 200  # the cache has seen every change (RV=N waits for it)
    async with watching(http, f"{pods(ns)}?watch=1&resourceVersion={rv(first)}") as resp:
        event = await next_event(resp)
        assert await ended(resp)
    status = event["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"].startswith(f"too old resource version: {rv(first)} (")


async def test_bookmarks_and_streaming_list_over_http(http: aiohttp.ClientSession, ns: str) -> None:
    a = await create(http, pods(ns), pod_body("a"))
    query = (
        "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        f"&resourceVersion={rv(a)}&allowWatchBookmarks=true"
    )
    async with watching(http, f"{pods(ns)}?{query}") as resp:
        added = await next_event(resp)
        end = await next_event(resp)
        b = await create(http, pods(ns), pod_body("b"))
        live = await next_event(resp)
        while live["type"] == "BOOKMARK":  # periodic bookmarks may come first
            live = await next_event(resp)
        periodic = await next_event(resp)
    assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", "a")
    assert end["type"] == "BOOKMARK"
    annotations = end["object"]["metadata"]["annotations"]
    assert annotations["k8s.io/initial-events-end"] == "true"
    assert base64.b64decode(annotations[BLUEPRINT]) == (
        b'{"kind":"PodList","apiVersion":"v1","metadata":{},"items":null}\n'
    )  # client-go 1.32's WatchList decodes its list from it
    assert int(rv(end["object"])) >= int(rv(a))
    assert (live["type"], live["object"]["metadata"]["name"]) == ("ADDED", "b")
    assert periodic["type"] == "BOOKMARK" and periodic["object"]["kind"] == "Pod"
    assert int(rv(periodic["object"])) >= int(rv(b))


async def test_watch_list_as_partial_object_metadata_sends_metadata_and_the_blueprint(
    http: aiohttp.ClientSession, ns: str
) -> None:
    """client-go's metadata client (garbage collector, quota) watches and WatchLists with
    ``as=PartialObjectMetadata``: every event's object is one, the end bookmark too, and
    the blueprint is an empty PartialObjectMetadataList."""
    await create(http, pods(ns), pod_body("a"))
    query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    query += "&allowWatchBookmarks=true&timeoutSeconds=10"
    headers = {"Accept": AS_METADATA}
    async with http.get(f"{pods(ns)}?{query}", headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        added, end = await next_event(resp), await next_event(resp)
        await create(http, pods(ns), pod_body("b"))
        live = await next_event(resp)
        while live["type"] == "BOOKMARK":
            live = await next_event(resp)
    for event in (added, end, live):
        assert event["object"]["kind"] == "PartialObjectMetadata", event
        assert event["object"]["apiVersion"] == "meta.k8s.io/v1"
        assert set(event["object"]) == {"kind", "apiVersion", "metadata"}
    assert (added["object"]["metadata"]["name"], live["object"]["metadata"]["name"]) == ("a", "b")
    annotations = end["object"]["metadata"]["annotations"]
    assert annotations["k8s.io/initial-events-end"] == "true"
    assert base64.b64decode(annotations[BLUEPRINT]) == (
        b'{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",'
        b'"metadata":{},"items":null}\n'
    )


async def test_plain_watch_as_partial_object_metadata_has_no_blueprint(
    http: aiohttp.ClientSession, ns: str
) -> None:
    """A watch that is not a WatchList: PartialObjectMetadata events (not the full
    objects of the next media range), bookmarks without the blueprint."""
    a = await create(http, pods(ns), pod_body("a"))
    query = f"watch=1&resourceVersion={rv(a)}&allowWatchBookmarks=true&timeoutSeconds=10"
    async with http.get(f"{pods(ns)}?{query}", headers={"Accept": AS_METADATA}) as resp:
        await create(http, pods(ns), pod_body("b"))
        live = await next_event(resp)
        periodic = await next_event(resp)
        while periodic["type"] != "BOOKMARK":
            periodic = await next_event(resp)
    assert live["object"]["kind"] == periodic["object"]["kind"] == "PartialObjectMetadata"
    assert live["object"]["metadata"]["name"] == "b"
    assert BLUEPRINT not in (periodic["object"]["metadata"].get("annotations") or {})


async def test_rv0_list_from_cache_ignores_limit(http: aiohttp.ClientSession, ns: str) -> None:
    last: JSON = {}
    for n in ("a", "b", "c"):
        last = await create(http, pods(ns), pod_body(n))
    # RV=N first: the cache has then seen every write, so RV=0 shows all of them
    async with http.get(f"{pods(ns)}?resourceVersion={rv(last)}") as resp:
        assert resp.status == 200
    async with http.get(f"{pods(ns)}?resourceVersion=0&limit=1") as resp:
        body = await resp.json()
        assert resp.status == 200
        served = resp.headers.get("X-Watchcache-Served-From")
    assert [p["metadata"]["name"] for p in body["items"]] == ["a", "b", "c"]
    assert not body["metadata"].get("continue")
    assert served in (None, "cache")
    async with http.get(f"{pods(ns)}?limit=1") as resp:
        paged = await resp.json()
    assert [p["metadata"]["name"] for p in paged["items"]] == ["a"]  # unset RV: etcd, paged


def test_python_client_watch_stream(cached_server: ServerProcess) -> None:
    from kubernetes import client

    seen: list[tuple[str, str | None]] = []
    with client.ApiClient(client.Configuration(host=cached_server.url)) as api:
        core = client.CoreV1Api(api)
        ns = f"py-{uuid.uuid4().hex[:8]}"
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
        metadata = client.V1ObjectMeta(name="first")
        body = client.V1Pod(
            metadata=metadata,
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
        )
        core.create_namespaced_pod(ns, body)
        w = Watch()
        for ev in w.stream(core.list_namespaced_pod, ns, timeout_seconds=10):
            seen.append((ev["type"], meta(ev["object"]).name))
            if len(seen) == 1:
                metadata.name = "second"
                core.create_namespaced_pod(ns, body)
            if len(seen) == 2:
                w.stop()
    assert seen == [("ADDED", "first"), ("ADDED", "second")]


def test_kubectl_get_watch_output_watch_events(
    cached_server: ServerProcess, tmp_path: Path
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", cached_server.url)
    env = {"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    ns = f"kw-{uuid.uuid4().hex[:8]}"

    def kubectl(*args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, env=env,
            timeout=60,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    kubectl("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n")
    pod = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {}\n"
        "spec:\n  containers:\n  - name: c\n    image: busybox\n"
    )
    kubectl("-n", ns, "apply", "-f", "-", stdin=pod.format("one"))
    watcher = subprocess.Popen(
        [str(KUBECTL), "-n", ns, "get", "pods", "--watch", "--output-watch-events",
         "--request-timeout=20s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert watcher.stdout is not None
        header = watcher.stdout.readline()
        first = watcher.stdout.readline()
        kubectl("-n", ns, "apply", "-f", "-", stdin=pod.format("two"))
        second = watcher.stdout.readline()
        kubectl("-n", ns, "delete", "pod", "one", "--wait=false")
        marked = watcher.stdout.readline()  # written with its deletionTimestamp first
        third = watcher.stdout.readline()
    finally:
        watcher.kill()
        watcher.wait(10)
        if watcher.stdout is not None:
            watcher.stdout.close()
        if watcher.stderr is not None:
            watcher.stderr.close()
    assert header.split()[:2] == ["EVENT", "NAME"]
    assert [line.split()[:2] for line in (first, second, marked, third)] == [
        ["ADDED", "one"],
        ["ADDED", "two"],
        ["MODIFIED", "one"],
        ["DELETED", "one"],
    ]
    assert "Terminating" in marked.split()


async def test_etcd_outage_over_http_watch_survives_and_resumes(
    etcd_own: EtcdCluster, tmp_path: Path
) -> None:
    """etcd stops: RV=0 LIST still answers from the cache, an unset-RV LIST fails with a
    Status in bounded time, open watches stay open; etcd starts: the next write reaches
    the raw HTTP watch and the official Python client's watch alike."""
    import threading

    from kubernetes import client

    flags = ("--etcd-request-timeout=2s", "--etcd-dial-timeout=1s")
    with (
        start_server(etcd_own.endpoints, None, *flags) as server,
        client.ApiClient(client.Configuration(host=server.url)) as api,
    ):
        async with aiohttp.ClientSession(base_url=server.url) as http:
            ns = f"out-{uuid.uuid4().hex[:8]}"
            await create(http, "/api/v1/namespaces", {"metadata": {"name": ns}})
            first = await create(http, pods(ns), pod_body("a"))
            async with http.get(f"{pods(ns)}?resourceVersion={rv(first)}") as fresh:
                assert fresh.status == 200  # the cache has seen "a" (RV=N waits for it)
            # the Python client's watch, in a thread, from the first pod's RV
            seen: list[tuple[str, str | None]] = []
            w = Watch()

            def follow() -> None:
                core = client.CoreV1Api(api)
                for ev in w.stream(core.list_namespaced_pod, ns, resource_version=rv(first),
                                   _request_timeout=60):  # fmt: skip
                    seen.append((ev["type"], meta(ev["object"]).name))
                    w.stop()

            thread = threading.Thread(target=follow, daemon=True)
            thread.start()
            async with watching(http, f"{pods(ns)}?watch=1&resourceVersion={rv(first)}") as resp:
                await asyncio.to_thread(etcd_own.stop_member, 0)
                async with http.get(f"{pods(ns)}?resourceVersion=0") as listed:
                    assert listed.status == 200
                    names = [p["metadata"]["name"] for p in (await listed.json())["items"]]
                    assert names == ["a"]
                loop = asyncio.get_running_loop()
                began = loop.time()
                async with http.get(pods(ns)) as failed:
                    status = await failed.json()
                    assert failed.status >= 500 and status["kind"] == "Status"
                assert loop.time() - began < 10
                await asyncio.to_thread(etcd_own.start_member, 0)
                created: JSON = {}
                async with asyncio.timeout(30):
                    while not created:
                        async with http.post(pods(ns), json=pod_body("b")) as r:
                            if r.status == 201:
                                created = await r.json()
                            else:
                                await asyncio.sleep(0.1)  # etcd is coming back
                event = await next_event(resp)
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "b")
            await asyncio.to_thread(thread.join, 30)
            assert seen == [("ADDED", "b")]


async def test_a_watch_list_is_never_a_table(http: aiohttp.ClientSession, ns: str) -> None:
    """Upstream's 'API Streaming (aka. WatchList)' specs: a WatchList asked only as a
    Table is 406 (client-go then lists), one that also takes JSON gets JSON objects."""
    await create(http, pods(ns), pod_body("a"))
    query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    query += "&allowWatchBookmarks=true&timeoutSeconds=5"
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    async with http.get(f"{pods(ns)}?{query}", headers={"Accept": table}) as resp:
        assert resp.status == 406, await resp.text()
    headers = {"Accept": f"{table},application/json"}
    async with http.get(f"{pods(ns)}?{query}", headers=headers) as resp:
        assert resp.status == 200
        added = await next_event(resp)
    assert (added["type"], added["object"]["kind"]) == ("ADDED", "Pod")
    plain_watch = "watch=1&timeoutSeconds=5&resourceVersion=0"
    async with http.get(f"{pods(ns)}?{plain_watch}", headers={"Accept": table}) as resp:
        assert resp.status == 200  # an ordinary watch still prints Tables
        assert (await next_event(resp))["object"]["kind"] == "Table"
