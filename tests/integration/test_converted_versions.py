"""Built-in kinds served in a second version over one storage, as kube-apiserver 1.37:
``autoscaling/v1`` HorizontalPodAutoscalers over ``v2`` (v2 preferred; the CPU target
is v1's ``targetCPUUtilizationPercentage``, other metrics travel in annotations) and
``events.k8s.io/v1`` Events over the core Events (``note``/``message``,
``regarding``/``involvedObject``...). The same objects, whichever version wrote them."""

from __future__ import annotations

import json

import aiohttp

from tests.integration.conftest import create


async def test_autoscaling_v2_is_preferred_and_v1_served(http: aiohttp.ClientSession) -> None:
    async with http.get("/apis/autoscaling") as resp:
        group = await resp.json()
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    async with http.get("/apis/events.k8s.io") as resp:
        assert (await resp.json())["preferredVersion"]["version"] == "v1"


async def test_an_hpa_in_both_versions(http: aiohttp.ClientSession, namespace: str) -> None:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    v1 = f"/apis/autoscaling/v1/namespaces/{namespace}/horizontalpodautoscalers"
    v2 = f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers"
    created = await create(http, v1, {"metadata": {"name": "h"}, "spec": {
        "scaleTargetRef": target, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}})
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["spec"] == {"scaleTargetRef": target, "minReplicas": 1, "maxReplicas": 5,
                               "targetCPUUtilizationPercentage": 70}  # fmt: skip
    async with http.get(f"{v2}/h") as resp:
        stored = await resp.json()
    assert stored["apiVersion"] == "autoscaling/v2"
    assert stored["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]
    memory = {"type": "Resource", "resource": {
        "name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}
    stored["spec"]["metrics"].append(memory)
    async with http.put(f"{v2}/h", json=stored) as resp:
        assert resp.status == 200, await resp.text()
    async with http.get(f"{v1}/h") as resp:
        seen = await resp.json()
    assert seen["spec"]["targetCPUUtilizationPercentage"] == 70
    assert json.loads(seen["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]) \
        == [{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}]
    async with http.get(v1) as resp:
        listed = await resp.json()
    assert [i["apiVersion"] for i in listed["items"]] == ["autoscaling/v1"]
    # a v1 update keeps the metric v1 cannot show (it travels in the annotation)
    seen["spec"]["maxReplicas"] = 7
    async with http.put(f"{v1}/h", json=seen) as resp:
        assert resp.status == 200, await resp.text()
    async with http.get(f"{v2}/h") as resp:
        again = await resp.json()
    assert again["spec"]["maxReplicas"] == 7 and again["spec"]["metrics"][1] == memory
    assert "annotations" not in again["metadata"]


async def test_an_event_in_both_groups(http: aiohttp.ClientSession, namespace: str) -> None:
    core = f"/api/v1/namespaces/{namespace}/events"
    events = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    regarding = {"kind": "Pod", "namespace": namespace, "name": "p", "apiVersion": "v1"}
    await create(http, core, {"metadata": {"name": "e1"}, "involvedObject": regarding,
                              "reason": "Started", "message": "started", "type": "Normal",
                              "source": {"component": "kubelet"}, "count": 2})  # fmt: skip
    async with http.get(f"{events}/e1") as resp:
        seen = await resp.json()
    assert seen["apiVersion"] == "events.k8s.io/v1"
    assert (seen["regarding"], seen["note"], seen["deprecatedCount"]) == (regarding, "started", 2)
    assert seen["deprecatedSource"] == {"component": "kubelet"} and seen["eventTime"] is None
    assert "message" not in seen and "involvedObject" not in seen
    body = {"metadata": {"name": "e2"}, "regarding": regarding, "reason": "Pulled",
            "note": "pulled", "type": "Normal", "action": "Pull",
            "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "kubelet",
            "reportingInstance": "node-1"}  # fmt: skip
    created = await create(http, events, body)
    assert created["note"] == "pulled" and created["reportingController"] == "kubelet"
    async with http.get(f"{core}/e2") as resp:
        stored = await resp.json()
    assert (stored["message"], stored["reportingComponent"]) == ("pulled", "kubelet")
    assert stored["involvedObject"] == regarding
    async with http.get(events) as resp:
        names = sorted(i["metadata"]["name"] for i in (await resp.json())["items"])
    assert names == ["e1", "e2"]


async def test_openapi_and_aggregated_discovery_have_them(http: aiohttp.ClientSession) -> None:
    async with http.get("/openapi/v3") as resp:
        paths = (await resp.json())["paths"]
    assert "apis/autoscaling/v1" in paths and "apis/events.k8s.io/v1" in paths
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    async with http.get("/apis", headers={"Accept": accept}) as resp:
        groups = {g["metadata"]["name"]: g for g in (await resp.json())["items"]}
    assert [v["version"] for v in groups["autoscaling"]["versions"]] == ["v2", "v1"]
    assert [v["version"] for v in groups["events.k8s.io"]["versions"]] == ["v1"]
