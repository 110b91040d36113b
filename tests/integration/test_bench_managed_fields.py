"""The benchmark's managedFields figures (``lab.bench_managed_fields``) against a real
server: what they count, never how fast (targets go to ``watchcache bench``)."""

from __future__ import annotations

import aiohttp
import pytest

from lab import bench_managed_fields
from tests.integration.conftest import ServerProcess

pytestmark = pytest.mark.etcd


async def test_the_figures_compare_tracked_and_untracked_pods(server: ServerProcess) -> None:
    m = await bench_managed_fields.measure(server.url, pods=3, rounds=1, concurrency=2)
    assert m["pods"] == 3
    assert m["updates_per_s_tracked"] > 0 and m["updates_per_s_untracked"] > 0
    assert m["list_bytes"] > m["list_bytes_without_managed_fields"] > 0
    line = bench_managed_fields.describe(m)
    assert line.startswith("managedFields: ") and "% of the cached pod LIST's bytes" in line
    async with (
        aiohttp.ClientSession(base_url=server.url) as http,
        http.get("/api/v1/pods") as resp,
    ):
        pods = (await resp.json())["items"]
    left = [p for p in pods if p["metadata"]["namespace"].startswith("bench-mf-")]
    assert not left  # its pods went with its namespace
