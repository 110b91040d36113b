"""WATCH over HTTP against a real etcd: the chunked stream of one JSON event per line,
resume from a resourceVersion, selectors, timeoutSeconds, and the 422 validation
messages (upstream ``endpoints/handlers/watch.go``, ``storage/cacher``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from tests.integration.conftest import create, pod_body

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
EVENT_TIMEOUT = 10.0


def pods(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/pods"


class EventStream:
    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp

    async def next(self) -> JSON:
        async with asyncio.timeout(EVENT_TIMEOUT):
            line = await self.resp.content.readline()
        assert line.endswith(b"\n"), f"stream ended: {line!r}"
        event: JSON = orjson.loads(line)
        return event

    async def ended(self) -> bool:
        async with asyncio.timeout(EVENT_TIMEOUT):
            return await self.resp.content.readline() == b""


@contextlib.asynccontextmanager
async def watching(http: aiohttp.ClientSession, path: str) -> AsyncIterator[EventStream]:
    async with http.get(path) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"].startswith("application/json")
        yield EventStream(resp)


async def test_watch_from_now_sees_changes_in_order(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    base = await create(http, pods(namespace), pod_body("before"))
    rv = base["metadata"]["resourceVersion"]
    async with watching(http, pods(namespace) + f"?watch=1&resourceVersion={rv}") as w:
        created = await create(http, pods(namespace), pod_body("w1"))
        async with http.patch(
            pods(namespace) + "/w1",
            data=b'{"metadata":{"labels":{"a":"b"}}}',
            headers={"Content-Type": "application/merge-patch+json"},
        ) as resp:
            assert resp.status == 200
        async with http.delete(pods(namespace) + "/w1") as resp:
            deleted = await resp.json()
        added, modified = await w.next(), await w.next()
        marked, gone = await w.next(), await w.next()
    assert added["type"] == "ADDED" and added["object"] == created
    assert modified["type"] == "MODIFIED"
    assert modified["object"]["metadata"]["labels"] == {"a": "b"}
    # a pod's deletion is written first (deletionTimestamp, grace 0), then removed
    assert marked["type"] == "MODIFIED"
    assert marked["object"]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert gone["type"] == "DELETED"
    assert gone["object"]["metadata"]["resourceVersion"] == deleted["metadata"]["resourceVersion"]


async def test_watch_without_resource_version_starts_with_current_state(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await create(http, pods(namespace), pod_body("a"))
    await create(http, pods(namespace), pod_body("b"))
    async with watching(http, pods(namespace) + "?watch=true") as w:
        first, second = await w.next(), await w.next()
    assert {first["type"], second["type"]} == {"ADDED"}
    assert sorted([first["object"]["metadata"]["name"], second["object"]["metadata"]["name"]]) == [
        "a",
        "b",
    ]


async def test_watch_with_label_selector(http: aiohttp.ClientSession, namespace: str) -> None:
    start = await create(http, pods(namespace), pod_body("seed"))
    rv = start["metadata"]["resourceVersion"]
    path = pods(namespace) + f"?watch=1&resourceVersion={rv}&labelSelector=app%3Dx"
    async with watching(http, path) as w:
        await create(http, pods(namespace), pod_body("other", labels={"app": "y"}))
        await create(http, pods(namespace), pod_body("mine", labels={"app": "x"}))
        event = await w.next()
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "mine"


async def test_watch_timeout_seconds_ends_cleanly(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    async with watching(http, pods(namespace) + "?watch=1&timeoutSeconds=1") as w:
        assert await w.ended()


async def test_watch_all_namespaces_and_legacy_path(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    start = await create(http, pods(namespace), pod_body("x0"))
    rv = start["metadata"]["resourceVersion"]
    fs = f"fieldSelector=metadata.namespace%3D{namespace}"
    async with watching(http, f"/api/v1/pods?watch=1&resourceVersion={rv}&{fs}") as w:
        await create(http, pods(namespace), pod_body("x1"))
        assert (await w.next())["object"]["metadata"]["name"] == "x1"
    async with watching(
        http, f"/api/v1/watch/namespaces/{namespace}/pods?resourceVersion={rv}"
    ) as w:
        assert (await w.next())["object"]["metadata"]["name"] == "x1"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "sendInitialEvents=true",
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
            "resourceVersionMatch to NotOlderThan",
        ),
        (
            "resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
            "sendInitialEvents is provided",
        ),
    ],
)
async def test_watch_validation_is_422(
    http: aiohttp.ClientSession, namespace: str, query: str, message: str
) -> None:
    async with http.get(pods(namespace) + "?watch=1&" + query) as resp:
        status = await resp.json()
        assert resp.status == 422
    assert status["message"] == f'ListOptions.meta.k8s.io "" is invalid: {message}'
