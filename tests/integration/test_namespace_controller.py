"""The server's namespace controller (proxy/kube/namespace): a DELETE of a namespace
answers at once with it Terminating, however much it holds; the controller empties it
in the background, then lifts its ``kubernetes`` finalizer and it is gone. Objects held
by finalizers keep it, with upstream's conditions saying why."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import ServerFactory, ServerProcess, create

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
MANY = 3000


async def _call(http: aiohttp.ClientSession, method: str, path: str,
                body: JSON | None = None) -> tuple[int, JSON]:  # fmt: skip
    async with http.request(method, path, json=body) as resp:
        return resp.status, await resp.json()


async def _watch_until(
    http: aiohttp.ClientSession, name: str, rv: str, done: Callable[[str, JSON], bool]
) -> JSON:
    """The namespace as the first of its watch events (from ``rv``) that is ``done``."""
    query = f"watch=1&fieldSelector=metadata.name%3D{name}&resourceVersion={rv}"
    async with http.get(f"/api/v1/namespaces?{query}") as resp:
        assert resp.status == 200, await resp.text()
        async for line in resp.content:
            event = json.loads(line)
            if done(event["type"], event["object"]):
                return dict(event["object"])
    raise AssertionError(f"the watch of namespace {name} ended first")


def _deleted(kind: str, ns: JSON) -> bool:
    return kind == "DELETED"


async def _fill(http: aiohttp.ClientSession, ns: str, count: int) -> None:
    cms = f"/api/v1/namespaces/{ns}/configmaps"
    names = iter(range(count))

    async def writer() -> None:
        for i in names:
            body = {"metadata": {"name": f"cm-{i:05d}"}, "data": {"k": "v" * 100}}
            async with http.post(cms, json=body) as resp:
                assert resp.status == 201, await resp.text()

    await asyncio.gather(*(writer() for _ in range(16)))


@pytest.fixture
def server(server_factory: ServerFactory) -> ServerProcess:
    return server_factory()


async def test_deleting_a_full_namespace_answers_at_once_and_empties_it(
    server: ServerProcess,
) -> None:
    async with aiohttp.ClientSession(base_url=server.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "full"}})
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "other"}})
        await create(http, "/api/v1/namespaces/other/configmaps", {"metadata": {"name": "kept"}})
        await _fill(http, "full", MANY)
        code, ns = await _call(http, "DELETE", "/api/v1/namespaces/full")
        # the answer is the marked namespace, not the end of its contents' deletion
        assert code == 200, ns
        assert ns["metadata"]["deletionTimestamp"] and ns["status"]["phase"] == "Terminating"
        assert ns["spec"]["finalizers"] == ["kubernetes"]
        # another client is answered while the controller works through the contents
        code, kept = await _call(http, "GET", "/api/v1/namespaces/other/configmaps/kept")
        assert code == 200 and kept["metadata"]["name"] == "kept"
        code, listed = await _call(http, "GET", "/api/v1/namespaces/full/configmaps?limit=1")
        assert code == 200 and listed["items"], "answered before the contents were gone"
        code, status = await _call(http, "POST", "/api/v1/namespaces/full/configmaps",
                                   {"metadata": {"name": "late"}})  # fmt: skip
        assert code == 403 and status["reason"] == "Forbidden", status
        async with asyncio.timeout(120):
            await _watch_until(http, "full", ns["metadata"]["resourceVersion"], _deleted)
        code, listed = await _call(http, "GET", "/api/v1/namespaces/full/configmaps")
        assert code == 200 and listed["items"] == []
        assert (await _call(http, "GET", "/api/v1/namespaces/other/configmaps/kept"))[0] == 200


async def test_content_held_by_a_finalizer_keeps_the_namespace_with_conditions(
    server: ServerProcess,
) -> None:
    async with aiohttp.ClientSession(base_url=server.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "held"}})
        cms = "/api/v1/namespaces/held/configmaps"
        await create(http, cms, {"metadata": {"name": "a", "finalizers": ["example.com/hold"]}})
        await create(http, cms, {"metadata": {"name": "b"}})
        code, marked = await _call(http, "DELETE", "/api/v1/namespaces/held")
        assert code == 200, marked
        async with asyncio.timeout(30):
            ns = await _watch_until(http, "held", marked["metadata"]["resourceVersion"],
                                    lambda kind, ns: bool(ns["status"].get("conditions")))
        conditions = {c["type"]: c for c in ns["status"]["conditions"]}
        assert [c["type"] for c in ns["status"]["conditions"]] == [
            "NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
            "NamespaceDeletionContentFailure", "NamespaceContentRemaining",
            "NamespaceFinalizersRemaining",
        ]  # fmt: skip
        assert {k: (c["status"], c["reason"], c["message"]) for k, c in conditions.items()} == {
            "NamespaceDeletionDiscoveryFailure":
                ("False", "ResourcesDiscovered", "All resources successfully discovered"),
            "NamespaceDeletionGroupVersionParsingFailure":
                ("False", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
            "NamespaceDeletionContentFailure": (
                "False", "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization"),
            "NamespaceContentRemaining": (
                "True", "SomeResourcesRemain",
                "Some resources are remaining: configmaps. has 1 resource instances"),
            "NamespaceFinalizersRemaining": (
                "True", "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: "
                "example.com/hold in 1 resource instances"),
        }  # fmt: skip
        assert (await _call(http, "GET", f"{cms}/b"))[0] == 404
        code, held = await _call(http, "GET", f"{cms}/a")
        assert code == 200 and held["metadata"]["deletionTimestamp"]
        # the finalizer lifted, the object goes, and the controller's next look (after
        # half the 15 s estimate) finalizes the namespace
        async with http.patch(f"{cms}/a", json={"metadata": {"finalizers": None}},
                              headers={"Content-Type": "application/merge-patch+json"}) as resp:
            assert resp.status == 200, await resp.text()
        async with asyncio.timeout(30):
            await _watch_until(http, "held", marked["metadata"]["resourceVersion"], _deleted)
