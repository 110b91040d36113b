"""Hostile request bodies stall no one (issue 23 §2): a 3 MiB body of each content type a
write accepts (JSON, YAML, protobuf, the three patch types, apply, DeleteOptions, a
review) that costs its decoder the most per byte (a flow sequence of zeros), while
another client's small GET is answered within 100 ms. Before, a 0.5 MB YAML review
held the event loop for 10 s and /healthz waited 16 s."""

from __future__ import annotations

import asyncio
import io
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest

from proxy.endpoints import protobuf
from tests.integration.conftest import ServerFactory, ServerProcess, create

pytestmark = pytest.mark.etcd

SIZE = 3 * 1024 * 1024 - 4096  # under the 3 MiB limit, with room for the envelope
PROBES = 15
ANSWERED_WITHIN = 0.100  # the bound for the other client's request
ZEROS = b",".join([b"0"] * (SIZE // 2))  # 1.5 M values: the most nodes per byte
CM = "/api/v1/namespaces/hostile/configmaps"


@dataclass(frozen=True)
class Hostile:
    method: str
    path: str
    content_type: str
    body: bytes


def _protobuf_body() -> bytes:
    """A ConfigMap whose data has ~200,000 tiny entries (protobuf has no list of bare
    numbers to send: a map of many entries is its costliest decode)."""
    data = {f"k{i}": "" for i in range((SIZE - 64) // 14)}
    encoded = protobuf.encode_object(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "h-pb"}, "data": data}
    )
    assert encoded is not None and len(encoded) < 3 * 1024 * 1024
    return encoded


HOSTILE = {
    "json": Hostile("POST", CM, "application/json",
                    b'{"metadata":{"name":"h-json"},"spec":{"x":[' + ZEROS + b"]}}"),
    "yaml": Hostile("POST", CM, "application/yaml",
                    b"metadata: {name: h-yaml}\nspec: {x: [" + ZEROS + b"]}"),
    "protobuf": Hostile("POST", CM, "application/vnd.kubernetes.protobuf", b""),
    "update-yaml": Hostile("PUT", CM + "/target", "application/yaml",
                           b"metadata: {name: target}\nspec: {x: [" + ZEROS + b"]}"),
    "merge-patch": Hostile("PATCH", CM + "/target", "application/merge-patch+json",
                           b'{"spec":{"x":[' + ZEROS + b"]}}"),
    "strategic-merge-patch": Hostile("PATCH", CM + "/target",
                                     "application/strategic-merge-patch+json",
                                     b'{"spec":{"x":[' + ZEROS + b"]}}"),
    "json-patch": Hostile("PATCH", CM + "/target", "application/json-patch+json",
                          b'[{"op":"test","path":"/x","value":[' + ZEROS + b"]}]"),
    "apply-yaml": Hostile("PATCH", CM + "/target?fieldManager=h",
                          "application/apply-patch+yaml",
                          b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: target}\n"
                          b"spec: {x: [" + ZEROS + b"]}"),
    "delete-options-yaml": Hostile("DELETE", CM + "/target", "application/yaml",
                                   b"kind: DeleteOptions\nx: [" + ZEROS + b"]"),
}  # fmt: skip


@pytest.fixture
async def served(server_factory: ServerFactory) -> AsyncIterator[ServerProcess]:
    proc = server_factory()
    async with aiohttp.ClientSession(base_url=proc.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "hostile"}})
        await create(http, CM, {"metadata": {"name": "target"}})
        await create(http, CM, {"metadata": {"name": "probe"}, "data": {"k": "v"}})
    yield proc


async def _probe(http: aiohttp.ClientSession) -> float:
    start = time.perf_counter()
    async with http.get(CM + "/probe") as resp:
        assert resp.status == 200
        await resp.read()
    return time.perf_counter() - start


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_a_hostile_body_stalls_no_other_client(served: ServerProcess, kind: str) -> None:
    hostile = HOSTILE[kind]
    body = _protobuf_body() if kind == "protobuf" else hostile.body
    assert len(body) <= 3 * 1024 * 1024
    async with (
        aiohttp.ClientSession(base_url=served.url) as attacker,
        aiohttp.ClientSession(base_url=served.url) as other,
    ):
        await _probe(other)  # the connection is open and warm

        async def attack() -> int:
            headers = {"Content-Type": hostile.content_type}
            async with attacker.request(
                hostile.method, hostile.path, data=io.BytesIO(body), headers=headers
            ) as resp:
                await resp.read()
                return resp.status

        task = asyncio.create_task(attack())
        await asyncio.sleep(0.3)  # the body is sent: the server is decoding it
        latencies = []
        for _ in range(PROBES):
            latencies.append(await _probe(other))
            await asyncio.sleep(0.05)
        task.cancel()
        (outcome,) = await asyncio.gather(task, return_exceptions=True)
    # the attack was answered (a Status) or still being decoded: never a client error
    assert isinstance(outcome, int | asyncio.CancelledError), outcome
    shown = [round(t * 1000) for t in latencies]
    # the other client is answered within 100 ms (the median: a probe may meet a
    # scheduling hiccup of a loaded shared machine), and none waits a second (before:
    # the first probe waited 1-123 s)
    assert statistics.median(latencies) < ANSWERED_WITHIN, (kind, shown)
    assert max(latencies) < 1.0, (kind, shown)
    async with aiohttp.ClientSession(base_url=served.url) as http:
        assert await _probe(http) < 1.0


async def test_an_ordinary_yaml_body_never_queues_behind_hostile_ones(
    served: ServerProcess,
) -> None:
    """Two 3 MiB YAML flow sequences hold both decoder threads for seconds each; a
    100 kB YAML ConfigMap sent after them waited in the same pool's queue past its
    request's deadline (504 in the fuzz suite). Bodies over ``HUGE_BODY`` now have a
    pool of their own: the ordinary one is answered at once."""
    hostile = HOSTILE["yaml"].body
    ordinary = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ordinary}\n"
                b"data: {k: " + b"x" * 100_000 + b"}\n")  # fmt: skip
    yaml_type = {"Content-Type": "application/yaml"}
    async with aiohttp.ClientSession(base_url=served.url) as http:

        async def post(body: bytes) -> tuple[int, float]:
            start = time.perf_counter()
            async with http.post(CM, data=io.BytesIO(body), headers=yaml_type) as resp:
                await resp.read()
                return resp.status, time.perf_counter() - start

        attacks = [asyncio.create_task(post(hostile)) for _ in range(2)]
        await asyncio.sleep(0.5)  # both are being decoded
        status, took = await post(ordinary)
        for task in attacks:
            task.cancel()
        await asyncio.gather(*attacks, return_exceptions=True)
    assert status == 201 and took < 2.0, (status, took)


async def test_an_ordinary_yaml_body_never_queues_behind_hostile_small_ones(
    served: ServerProcess,
) -> None:
    """A 200 KiB YAML body of tiny mappings is under ``HUGE_BODY`` yet ~84,000 nodes
    (~1 s of a decoder thread): five of them filled the ordinary pool's two threads and
    its queue, and a 2 kB YAML ConfigMap sent after them was decoded only once the
    first four were done. Bodies whose separators say they may be that heavy now go to
    the heavy bodies' pool (one thread): the ordinary one is answered while at least
    three of them are still in flight (no clock is asserted)."""
    hostile = b"metadata: {name: h}\nspec: {x: [" + b"{a: 1}," * 28_000 + b"{}]}\n"
    assert len(hostile) < 256 * 1024
    ordinary = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ordinary-small}\n"
                b"data:\n" + b"".join(b"  k%d: v\n" % i for i in range(200)))  # fmt: skip
    assert 512 < len(ordinary) < 4096  # decoded in a pool, not on the loop
    yaml_type = {"Content-Type": "application/yaml"}
    async with aiohttp.ClientSession(base_url=served.url) as http:

        async def post(body: bytes) -> int:
            async with http.post(CM, data=body, headers=yaml_type) as resp:
                await resp.read()
                return resp.status

        attacks = [asyncio.create_task(post(hostile)) for _ in range(5)]
        await asyncio.sleep(0.5)  # sent: the server is decoding or queueing them
        status = await post(ordinary)
        in_flight = sum(not task.done() for task in attacks)
        answers = await asyncio.gather(*attacks)  # each answered (201, then 409s)
        assert (await _probe(http)) < 1.0
    assert status == 201
    assert in_flight >= 3, (in_flight, answers)
