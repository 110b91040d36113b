"""The NodePort rules of a Service write, after ``alloc.go``'s ``initNodePorts``,
``updateNodePorts``, the health-check node port cases and ``patchAllocatedValues``:
which ports get a ``nodePort`` (NodePort Services, LoadBalancers unless
``allocateLoadBalancerNodePorts: false``; a requested one is always honoured), ports of
one number share theirs, and an update keeps what the old object held."""

from __future__ import annotations

from typing import Any

from proxy import apierrors
from proxy.apimachinery.validation import field as fielderr
from proxy.kube.service.ipallocator import AllocationError
from proxy.kube.service.portallocator import PortOperation
from storage.interfaces import JSONObject

__all__ = ["allocate", "held_node_ports", "patch_node_ports"]

JSON = dict[str, Any]


def _spec(svc: JSONObject) -> JSON:
    spec = svc.get("spec")
    return spec if isinstance(spec, dict) else {}


def _ports(spec: JSON) -> list[JSON]:
    return [p for p in spec.get("ports") or [] if isinstance(p, dict)]


def _node_port(port: JSON) -> int:
    value = port.get("nodePort")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def held_node_ports(svc: JSONObject) -> set[int]:
    """The node ports a stored Service holds (its ports' and its health check's)."""
    spec = _spec(svc)
    held = {_node_port(p) for p in _ports(spec)}
    if needs_health_check(spec):
        held.add(_node_port({"nodePort": spec.get("healthCheckNodePort")}))
    return held - {0}


def needs_node_port(spec: JSON) -> bool:
    """``needsNodePort``."""
    kind = spec.get("type")
    return kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False
    )


def needs_health_check(spec: JSON) -> bool:
    """``service.NeedsHealthCheck``: a LoadBalancer with ``externalTrafficPolicy: Local``."""
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def patch_node_ports(new: JSONObject, old: JSONObject) -> None:
    """``patchAllocatedValues`` (NodePorts): a port left without one takes the old
    port's of the same name, unless another new port uses it."""
    spec, old_spec = _spec(new), _spec(old)
    if needs_node_port(old_spec) and needs_node_port(spec):
        used = {_node_port(p) for p in _ports(old_spec)} & {_node_port(p) for p in _ports(spec)}
        by_name = {str(p.get("name") or ""): _node_port(p) for p in _ports(old_spec)}
        for port in _ports(spec):
            known = by_name.get(str(port.get("name") or ""), 0)
            if not _node_port(port) and known and known not in used:
                port["nodePort"] = known
    both = needs_health_check(old_spec) and needs_health_check(spec)
    if both and not spec.get("healthCheckNodePort") and old_spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


async def allocate(op: PortOperation, svc: JSONObject, old: JSONObject | None) -> None:
    """Every nodePort (and the health-check one) ``svc`` needs, reserved in ``op``."""
    spec, old_spec = _spec(svc), _spec(old) if old is not None else {}
    if spec.get("type") in ("NodePort", "LoadBalancer"):
        if old is None:
            await _init(op, svc, spec)
        else:
            await _update(op, svc, spec, {_node_port(p) for p in _ports(old_spec)})
    if needs_health_check(spec) and not (old is not None and needs_health_check(old_spec)):
        await _health_check(op, spec)


async def _take(op: PortOperation, svc: JSONObject, i: int, port: int) -> None:
    try:
        await op.allocate(port)
    except AllocationError as e:
        path = fielderr.child(fielderr.index("spec.ports", i), "nodePort")
        name = str((svc.get("metadata") or {}).get("name") or "")
        raise fielderr.to_status("Service", name, [fielderr.invalid(path, port, str(e))]) from None


async def _next(op: PortOperation) -> int:
    try:
        return await op.allocate_next()
    except AllocationError as e:
        raise apierrors.internal_error(f"failed to allocate a nodePort: {e}") from None


async def _init(op: PortOperation, svc: JSONObject, spec: JSON) -> None:
    """``initNodePorts``: ports of one number share a nodePort."""
    ports = _ports(spec)
    by_number: dict[object, int] = {}
    for i, port in enumerate(ports):
        if not _node_port(port) and not needs_node_port(spec):
            continue  # no new ports, but a requested one is honoured
        known = by_number.get(port.get("port"), 0)
        if not known:
            same = [_node_port(p) for p in ports if p.get("port") == port.get("port")]
            requested = next((n for n in same if n), 0)
            if requested:
                await _take(op, svc, i, requested)
            port["nodePort"] = requested or await _next(op)
            by_number[port.get("port")] = port["nodePort"]
        elif _node_port(port) != known:
            if not _node_port(port):
                port["nodePort"] = known
            else:
                await _take(op, svc, i, _node_port(port))


async def _update(op: PortOperation, svc: JSONObject, spec: JSON, held: set[int]) -> None:
    """``updateNodePorts``: what the old object held stays held; new ones are taken."""
    for i, port in enumerate(_ports(spec)):
        number = _node_port(port)
        if not number and not needs_node_port(spec):
            continue
        if number:
            if number not in held:
                await _take(op, svc, i, number)
        else:
            port["nodePort"] = await _next(op)


async def _health_check(op: PortOperation, spec: JSON) -> None:
    """``allocHealthCheckNodePort`` (its failures are 500s upstream)."""
    requested = spec.get("healthCheckNodePort")
    if isinstance(requested, int) and requested:
        try:
            await op.allocate(requested)
        except AllocationError as e:
            raise apierrors.internal_error(
                f"failed to allocate requested HealthCheck NodePort {requested}: {e}"
            ) from None
        return
    spec["healthCheckNodePort"] = await _next(op)
