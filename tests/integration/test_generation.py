"""``metadata.generation`` only where kube-apiserver 1.37's strategies track it
(kube-apiserver v1.32 answers differed: watchcache set it on every kind): workloads and
pods (since 1.33) get 1 on create and a bump per spec change; ConfigMaps, Namespaces,
Services never carry one, whatever the client sends."""

from __future__ import annotations

import aiohttp

from tests.integration.conftest import create, pod_body


async def test_generation_only_on_kinds_that_track_it(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    base = f"/api/v1/namespaces/{namespace}"
    cm = await create(http, f"{base}/configmaps",
                      {"metadata": {"name": "c", "generation": 7}, "data": {"a": "1"}})  # fmt: skip
    assert "generation" not in cm["metadata"]
    cm["data"] = {"a": "2"}
    async with http.put(f"{base}/configmaps/c", json=cm) as resp:
        assert resp.status == 200, await resp.text()
        assert "generation" not in (await resp.json())["metadata"]
    async with http.get(f"/api/v1/namespaces/{namespace}") as resp:
        assert "generation" not in (await resp.json())["metadata"]
    svc = await create(http, f"{base}/services",
                       {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})  # fmt: skip
    assert "generation" not in svc["metadata"]
    pod = await create(http, f"{base}/pods", pod_body("p"))
    assert pod["metadata"]["generation"] == 1  # KEP-5067: pods track it since 1.33
    dep = {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}  # fmt: skip
    created = await create(http, f"/apis/apps/v1/namespaces/{namespace}/deployments", dep)
    assert created["metadata"]["generation"] == 1
