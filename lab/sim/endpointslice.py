"""The EndpointSlice controller (kube-controller-manager's ``pkg/controller/endpointslice``):
every Service with a selector gets EndpointSlices listing the pods it selects, which
``kubectl describe service`` shows and ``services/proxy`` routes to.

For each Service it takes the pods of its namespace that its selector matches and that
have an IP and a node and are not terminal, and writes one IPv4 slice per distinct set
of resolved ports (most Services: one), ``generateName: <service>-``, labelled
``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io``, owned by the Service:

- a port: the service port's name, protocol, appProtocol and its ``targetPort``
  resolved in the pod (a number; a name looked up among the pod's container ports,
  the port left out for a pod that has no such name; unset: the service port);
- an endpoint: the pod IP, ``nodeName``, ``targetRef`` and the conditions as upstream
  sets them: ``serving`` = the pod is Ready, ``terminating`` = it is being deleted,
  ``ready`` = serving and not terminating (or ``publishNotReadyAddresses``).

A Service that selects nothing keeps one empty placeholder slice; a slice no longer
needed is deleted, as are a Service's slices once it is gone or has no selector (the
garbage collector would, through the owner reference; the lab's collects fewer kinds).
"""

from __future__ import annotations

import logging
from typing import Any

from lab.sim.client import JSON, APIError, Client
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers
from lab.sim.replicaset import ready

__all__ = ["MANAGED_BY", "SERVICE_NAME", "EndpointSliceController", "desired_slices"]

log = logging.getLogger("watchcache.sim")

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
Ports = tuple[tuple[tuple[str, Any], ...], ...]  # a slice's ports, hashable


def selects(service: JSON, pod: JSON) -> bool:
    selector = (service.get("spec") or {}).get("selector") or {}
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _target_port(pod: JSON, port: JSON) -> int | None:
    """``podutil.FindPort``: the service port's targetPort in ``pod``."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = port.get("protocol") or "TCP"
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("name") == target and (p.get("protocol") or "TCP") == protocol:
                return int(p["containerPort"])
    return None


def _ports(service: JSON, pod: JSON) -> Ports:
    out = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = _target_port(pod, port)
        if number is None:
            continue
        entry: dict[str, Any] = {"name": port.get("name") or "",
                                 "protocol": port.get("protocol") or "TCP", "port": number}
        if port.get("appProtocol"):
            entry["appProtocol"] = port["appProtocol"]
        out.append(tuple(sorted(entry.items())))
    return tuple(out)


def _endpoint(service: JSON, pod: JSON) -> JSON:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    serving = ready(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    return {
        "addresses": [str((pod.get("status") or {}).get("podIP"))],
        "conditions": {"ready": publish or (serving and not terminating), "serving": serving,
                       "terminating": terminating},
        "nodeName": spec.get("nodeName"),
        "targetRef": {"kind": "Pod", "namespace": meta.get("namespace"),
                      "name": meta.get("name"), "uid": meta.get("uid")},
    }  # fmt: skip


def desired_slices(service: JSON, pods: list[JSON]) -> dict[Ports, list[JSON]]:
    """The endpoints of ``service`` by port set (a placeholder: no ports, none)."""
    out: dict[Ports, list[JSON]] = {}
    for pod in sorted(pods, key=lambda p: str(p["metadata"].get("name"))):
        status = pod.get("status") or {}
        if (not selects(service, pod) or not status.get("podIP")
                or not (pod.get("spec") or {}).get("nodeName")
                or status.get("phase") in ("Succeeded", "Failed")):  # fmt: skip
            continue
        out.setdefault(_ports(service, pod), []).append(_endpoint(service, pod))
    return out or {(): []}


def _ports_of(slice_: JSON) -> Ports:
    return tuple(tuple(sorted(p.items())) for p in slice_.get("ports") or [])


class EndpointSliceController:
    """Reconciles the slices of every Service ``services`` reports against ``pods``."""

    def __init__(self, server: str, services: Informer, slices: Informer, pods: Informer) -> None:
        self.client = Client(server, "endpointslice-controller")
        self.services, self.slices, self.pods = services, slices, pods
        self.queue: WorkQueue[str] = WorkQueue()
        # slices this controller created that its informer may not hold yet (key ->
        # name -> slice): a sync in between must not create them again
        self.created: dict[str, dict[str, JSON]] = {}
        self.writes = 0

    async def run(self) -> None:
        self.services.add_handler(lambda kind, svc, old: self.queue.add(key_of(svc)))
        self.slices.add_handler(self._on_slice)
        self.pods.add_handler(self._on_pod)
        try:
            await run_workers("endpointslice-controller", self.queue, self.sync, 2)
        finally:
            await self.client.close()

    def _on_slice(self, kind: str, slice_: JSON, old: JSON | None) -> None:
        labels = (slice_.get("metadata") or {}).get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(SERVICE_NAME):
            self.queue.add(f"{slice_['metadata'].get('namespace')}/{labels[SERVICE_NAME]}")

    def _on_pod(self, kind: str, pod: JSON, old: JSON | None) -> None:
        """Queue the Services that select the pod now or selected it before."""
        namespace = (pod.get("metadata") or {}).get("namespace")
        for svc in self.services.items():
            if (svc.get("metadata") or {}).get("namespace") == namespace and any(
                    selects(svc, p) for p in (pod, old) if p):  # fmt: skip
                self.queue.add(key_of(svc))

    def _slices_of(self, namespace: str, name: str) -> list[JSON]:
        mine = {SERVICE_NAME: name, MANAGED_BY_LABEL: MANAGED_BY}
        held = [s for s in self.slices.items() if s["metadata"].get("namespace") == namespace
                and mine.items() <= ((s["metadata"].get("labels") or {}).items())]  # fmt: skip
        created = self.created.get(f"{namespace}/{name}", {})
        for s in held:
            created.pop(s["metadata"]["name"], None)
        return held + list(created.values())

    async def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        service = self.services.get(key)
        existing = self._slices_of(namespace, name)
        if service is None or not (service.get("spec") or {}).get("selector"):
            for s in existing:
                await self._delete(s)
            return
        pods = [p for p in self.pods.items() if p["metadata"].get("namespace") == namespace]
        unused = list(existing)
        for ports, endpoints in desired_slices(service, pods).items():
            match = next((s for s in unused if _ports_of(s) == ports), None)
            if match is not None:
                unused.remove(match)
            await self._write(service, match, ports, endpoints)
        for s in unused:
            await self._delete(s)

    async def _write(self, service: JSON, current: JSON | None, ports: Ports,
                     endpoints: list[JSON]) -> None:  # fmt: skip
        meta = service["metadata"]
        port_list = [dict(p) for p in ports]
        if current is not None and (current.get("endpoints") or []) == endpoints and (
                current.get("ports") or []) == port_list:  # fmt: skip
            return
        body: JSON = {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {
                "generateName": f"{meta['name']}-", "namespace": meta["namespace"],
                "labels": {**(meta.get("labels") or {}), SERVICE_NAME: meta["name"],
                           MANAGED_BY_LABEL: MANAGED_BY},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service",
                                     "name": meta["name"], "uid": meta.get("uid"),
                                     "controller": True, "blockOwnerDeletion": True}],
            },
            "addressType": "IPv4", "endpoints": endpoints, "ports": port_list,
        }  # fmt: skip
        discovery = self.client.discovery
        try:
            if current is None:
                made = await self.client.call(discovery.create_namespaced_endpoint_slice,
                                              meta["namespace"], body)  # fmt: skip
                self.created.setdefault(key_of(service), {})[made["metadata"]["name"]] = made
            else:
                body["metadata"].update(name=current["metadata"]["name"],
                                        resourceVersion=current["metadata"].get("resourceVersion"))
                await self.client.call(discovery.replace_namespaced_endpoint_slice,
                                       current["metadata"]["name"], meta["namespace"], body)
        except APIError as e:
            if e.status == 404 and current is None:  # the namespace is going
                return
            raise
        self.writes += 1

    async def _delete(self, slice_: JSON) -> None:
        meta = slice_["metadata"]
        service = (meta.get("labels") or {}).get(SERVICE_NAME)
        self.created.get(f"{meta['namespace']}/{service}", {}).pop(meta["name"], None)
        try:
            await self.client.call(self.client.discovery.delete_namespaced_endpoint_slice,
                                   meta["name"], meta["namespace"])  # fmt: skip
        except APIError as e:
            if e.status != 404:
                raise
