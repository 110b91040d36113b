"""The simulated cluster's pod garbage collector (``lab.sim.podgc``) against a real
server and etcd, with a short period and quarantine: the terminated pods over the
threshold go (the evicted first, then the oldest), the pods of a node that does not
exist are marked Failed with ``DisruptionTarget``/``DeletionByPodGC`` and deleted, an
unscheduled terminating pod is marked Failed and force-deleted, and what it must keep
stays."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from lab.etcd import EtcdCluster
from lab.sim.client import JSON, APIError, Client
from lab.sim.informer import Informer
from lab.sim.podgc import PodGC, plan
from tests.integration.conftest import start_server

pytestmark = pytest.mark.etcd

NS = "default"


def _pod(name: str, node: str = "n1", finalizers: tuple[str, ...] = ()) -> JSON:
    meta: JSON = {"name": name, "namespace": NS}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    spec: JSON = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


@pytest.fixture
async def server_url(etcd: EtcdCluster) -> AsyncIterator[str]:
    with start_server(etcd.endpoints, None, "--lifecycle-controllers=true") as server:
        yield server.url


async def _create(c: Client, name: str, phase: str = "", reason: str = "", **kw: object) -> JSON:
    pod = await c.call(c.core.create_namespaced_pod, NS, _pod(name, **kw))  # type: ignore[arg-type]
    if phase:
        pod["status"] = {**(pod.get("status") or {}), "phase": phase, "reason": reason or None}
        pod = await c.call(c.core.replace_namespaced_pod_status, name, NS, pod)
    return pod


async def _exists(c: Client, name: str) -> JSON | None:
    try:
        return await c.call(c.core.read_namespaced_pod, name, NS)
    except APIError as e:
        assert e.status == 404
        return None


async def _until(check: Callable[[], Awaitable[bool]], within: float = 30) -> None:
    async with asyncio.timeout(within):
        for _ in itertools.count():
            if await check():
                return
            await asyncio.sleep(0.2)


async def test_pod_gc_collects_what_nothing_else_will(server_url: str) -> None:
    c = Client(server_url, "podgc-test")
    try:
        await _collects(c, server_url)
    finally:
        await c.close()


async def _collects(c: Client, server_url: str) -> None:
    await c.call(c.core.create_node, {"apiVersion": "v1", "kind": "Node",
                                      "metadata": {"name": "n1"}})  # fmt: skip
    await _create(c, "done-old", "Succeeded")
    await asyncio.sleep(1.1)  # creationTimestamps a second apart: the order is theirs
    await _create(c, "evicted", "Failed", "Evicted")
    await _create(c, "done-new", "Succeeded")
    await _create(c, "running")
    pods, nodes = Informer(c, c.core.list_pod_for_all_namespaces), Informer(c, c.core.list_node)
    seen: dict[str, list[JSON]] = {}
    pods.add_handler(lambda kind, pod, old: seen.setdefault(pod["metadata"]["name"], [])
                     .append(pod))  # fmt: skip
    gc = PodGC(server_url, pods, nodes, threshold=1, period=0.2, quarantine=1.0)
    tasks = [asyncio.create_task(t) for t in (pods.run(), nodes.run(), gc.run())]

    async def names() -> set[str]:
        return {p["metadata"]["name"] for p in
                (await c.call(c.core.list_namespaced_pod, NS))["items"]}  # fmt: skip

    try:  # the evicted first, then the oldest, down to the threshold
        await _until(lambda: _true(gc.deleted.get("terminated") == 2))
        assert await names() == {"done-new", "running"}
        gc.threshold = 0  # (the Failed pods below would count too)
        await _create(c, "orphan", node="ghost")
        await _create(c, "stuck", node="", finalizers=("example.com/hold",))
        await c.call(c.core.delete_namespaced_pod, "stuck", NS)  # held by its finalizer
        await _until(lambda: _true(gc.deleted.get("orphaned") == 1
                                   and gc.deleted.get("unscheduled", 0) >= 1))  # fmt: skip
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert await names() == {"done-new", "running", "stuck"}
    failed = next(p for p in seen["orphan"] if p["status"].get("phase") == "Failed")
    (target,) = [x for x in failed["status"]["conditions"] if x["type"] == "DisruptionTarget"]
    assert (target["reason"], target["message"]) == ("DeletionByPodGC",
                                                     "PodGC: node no longer exists")
    stuck = await _exists(c, "stuck")
    assert stuck is not None and stuck["status"]["phase"] == "Failed"  # its finalizer holds it
    await c.call(c.core.patch_namespaced_pod, "stuck", NS, [
        {"op": "remove", "path": "/metadata/finalizers"}])  # fmt: skip


async def _true(value: bool) -> bool:
    return value


def test_plan_keeps_the_threshold_and_finds_missing_nodes() -> None:
    def pod(name: str, created: str, phase: str, node: str = "n1", reason: str = "") -> JSON:
        return {"metadata": {"name": name, "creationTimestamp": created},
                "spec": {"nodeName": node}, "status": {"phase": phase, "reason": reason}}

    pods = [pod("a", "2026-01-01T00:00:03Z", "Succeeded"),
            pod("b", "2026-01-01T00:00:01Z", "Failed"),
            pod("c", "2026-01-01T00:00:09Z", "Failed", reason="Evicted"),
            pod("d", "2026-01-01T00:00:00Z", "Running", node="gone")]  # fmt: skip
    work = plan(pods, {"n1": {}}, threshold=1)
    assert [p["metadata"]["name"] for p in work.terminated] == ["c", "b"]
    assert work.missing_nodes == {"gone"}
    assert plan(pods, {"n1": {}}, threshold=0).terminated == []
