"""The EndpointSlice controller's desired slices (``lab.sim.endpointslice``): the
selected pods with an IP and a node, the target port resolved per pod, the conditions
as upstream's, one slice per port set, a placeholder when none is selected."""

from __future__ import annotations

from lab.sim.client import JSON
from lab.sim.endpointslice import desired_slices

SERVICE: JSON = {"metadata": {"name": "web", "namespace": "default"}, "spec": {
    "selector": {"app": "web"},
    "ports": [{"name": "http", "port": 8080, "targetPort": "http"}]}}  # fmt: skip


def _pod(name: str, port: int | None, *, ready: bool = True, deleting: bool = False,
         phase: str = "Running", ip: str = "10.0.0.9") -> JSON:  # fmt: skip
    meta: JSON = {"name": name, "namespace": "default", "uid": f"u-{name}",
                  "labels": {"app": "web"}}  # fmt: skip
    if deleting:
        meta["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    ports = [{"name": "http", "containerPort": port}] if port else []
    return {"metadata": meta,
            "spec": {"nodeName": "node-000", "containers": [{"name": "c", "ports": ports}]},
            "status": {"phase": phase, "podIP": ip, "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}}  # fmt: skip


def test_ports_resolved_per_pod_and_conditions_as_upstream() -> None:
    pods = [_pod("a", 80, ip="10.0.0.1"), _pod("b", 80, ready=False, ip="10.0.0.2"),
            _pod("c", 80, deleting=True, ip="10.0.0.3"), _pod("d", 81, ip="10.0.0.4"),
            _pod("done", 80, phase="Succeeded"), _pod("no-ip", 80, ip=""),
            {**_pod("other", 80), "metadata": {"name": "other", "labels": {"app": "db"}}}]
    slices = desired_slices(SERVICE, pods)
    by_port = {dict(ports[0])["port"]: endpoints for ports, endpoints in slices.items()}
    assert sorted(by_port) == [80, 81]
    conditions = {e["targetRef"]["name"]: e["conditions"] for e in by_port[80]}
    assert conditions == {
        "a": {"ready": True, "serving": True, "terminating": False},
        "b": {"ready": False, "serving": False, "terminating": False},
        "c": {"ready": False, "serving": True, "terminating": True},
    }
    (d,) = by_port[81]
    assert (d["addresses"], d["nodeName"]) == (["10.0.0.4"], "node-000")


def test_a_pod_without_the_named_port_has_none_and_nothing_selected_is_a_placeholder() -> None:
    slices = desired_slices(SERVICE, [_pod("bare", None)])
    assert list(slices) == [()]  # its endpoint, with no ports
    assert desired_slices(SERVICE, []) == {(): []}
