"""The LimitRanger admission plugin (kube's ``plugin/pkg/admission/limitranger``), from
the namespace's LimitRanges:

- mutating, on pod creation: a container without a request or limit gets the
  ``Container`` item's ``defaultRequest`` / ``default`` (a request falls back to the
  default limit, as upstream), recorded in the annotation ``kubernetes.io/limit-ranger:
  LimitRanger plugin set: cpu, memory request for container c; ...``;
- validating, pods (create) and PVCs (create, update): ``min``, ``max`` and
  ``maxLimitRequestRatio`` of the ``Container``, ``Pod`` and ``PersistentVolumeClaim``
  items; violations are 403 with upstream's words (``maximum cpu usage per Container
  is 1, but limit is 2``), several as ``[a, b]``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from proxy import apierrors
from proxy.admission.attributes import CREATE, UPDATE, Attributes
from proxy.admission.interfaces import Plugin
from proxy.apimachinery import quantity as kq
from proxy.kube.admission.pods import is_pod

__all__ = ["LimitRanger"]

JSON = dict[str, Any]
ANNOTATION = "kubernetes.io/limit-ranger"


def _items(ranges: list[JSON], kind: str) -> list[JSON]:
    return [item for r in ranges for item in (r.get("spec") or {}).get("limits") or ()
            if item.get("type") == kind]


def _apply_defaults(pod: JSON, items: list[JSON]) -> str:
    """Set missing requests/limits; the annotation text ("" when nothing was set)."""
    notes: list[str] = []
    spec = pod.get("spec") or {}
    for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        resources = c.setdefault("resources", {})
        for item in items:
            limits_default: JSON = item.get("default") or {}
            requests_default = {**limits_default, **(item.get("defaultRequest") or {})}
            set_requests = _fill(resources, "requests", requests_default, resources.get("limits"))
            set_limits = _fill(resources, "limits", limits_default, None)
            if set_requests:
                notes.append(f"{', '.join(set_requests)} request for container {c.get('name')}")
            if set_limits:
                notes.append(f"{', '.join(set_limits)} limit for container {c.get('name')}")
        if not resources:
            c["resources"] = {}
    return f"LimitRanger plugin set: {'; '.join(notes)}" if notes else ""


def _fill(resources: JSON, kind: str, defaults: JSON, limits: JSON | None) -> list[str]:
    present: JSON = resources.get(kind) or {}
    added = []
    for name in sorted(defaults):
        if name in present:
            continue
        # a request defaults to the container's own limit before the range's default
        present[name] = (limits or {}).get(name, defaults[name])
        added.append(name)
    if added:
        resources[kind] = present
    return added


def _q(value: Any) -> kq.Quantity | None:
    return kq.parse(value) if value is not None else None


def _check(kind: str, item: JSON, requests: JSON, limits: JSON) -> list[str]:
    """Upstream's minConstraint / maxConstraint / limitRequestRatioConstraint words."""
    errors = []
    for name, bound in sorted((item.get("min") or {}).items()):
        request, low = _q(requests.get(name)), _q(bound)
        if low is None:
            continue
        if request is None:
            errors.append(f"minimum {name} usage per {kind} is {bound}.  No request is specified")
        elif request.value < low.value:
            errors.append(f"minimum {name} usage per {kind} is {bound}, but request is "
                          f"{request}")
    for name, bound in sorted((item.get("max") or {}).items()):
        limit, high = _q(limits.get(name)), _q(bound)
        if high is None:
            continue
        if limit is None:
            errors.append(f"maximum {name} usage per {kind} is {bound}.  No limit is specified")
        elif limit.value > high.value:
            errors.append(f"maximum {name} usage per {kind} is {bound}, but limit is {limit}")
    for name, bound in sorted((item.get("maxLimitRequestRatio") or {}).items()):
        request, limit, ratio = _q(requests.get(name)), _q(limits.get(name)), _q(bound)
        if ratio is None:
            continue
        prefix = f"{name} max limit to request ratio per {kind} is {bound}"
        if request is None or request.value == 0:
            errors.append(f"{prefix}, but no request is specified or request is 0")
        elif limit is None:
            errors.append(f"{prefix}, but no limit is specified")
        elif limit.value / request.value > ratio.value:
            errors.append(f"{prefix}, but provided ratio is {limit.value / request.value:.6f}")
    return errors


def _sum(containers: list[JSON], kind: str) -> JSON:
    totals: dict[str, Decimal] = {}
    formats: dict[str, str] = {}
    for c in containers:
        for name, value in (((c.get("resources") or {}).get(kind)) or {}).items():
            q = kq.parse(value)
            if q is not None:
                totals[name] = totals.get(name, Decimal(0)) + q.value
                formats.setdefault(name, q.fmt)
    return {name: str(kq.Quantity(v, formats[name])) for name, v in totals.items()}


class LimitRanger(Plugin):
    name = "LimitRanger"
    operations = frozenset({CREATE, UPDATE})
    mutating = True
    validating = True

    async def _ranges(self, attrs: Attributes) -> list[JSON]:
        if not attrs.namespace or attrs.subresource or attrs.object is None:
            return []
        if (attrs.resource.group, attrs.resource.plural) not in (
                ("", "pods"), ("", "persistentvolumeclaims")):  # fmt: skip
            return []
        return await self.lookup.list("", "limitranges", attrs.namespace)

    async def admit(self, attrs: Attributes) -> None:
        if attrs.operation != CREATE or not is_pod(attrs):
            return
        ranges = await self._ranges(attrs)
        note = _apply_defaults(attrs.object or {}, _items(ranges, "Container"))
        if note:
            meta = (attrs.object or {}).setdefault("metadata", {})
            meta.setdefault("annotations", {})[ANNOTATION] = note

    async def validate(self, attrs: Attributes) -> None:
        if is_pod(attrs) and attrs.operation != CREATE:
            return
        ranges = await self._ranges(attrs)
        if not ranges:
            return
        obj = attrs.object or {}
        errors: list[str] = []
        if is_pod(attrs):
            spec = obj.get("spec") or {}
            containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
            for item in _items(ranges, "Container"):
                for c in containers:
                    res = c.get("resources") or {}
                    errors += _check("Container", item, res.get("requests") or {},
                                     res.get("limits") or {})
            for item in _items(ranges, "Pod"):
                plain = list(spec.get("containers") or ())
                errors += _check("Pod", item, _sum(plain, "requests"), _sum(plain, "limits"))
        else:
            res = (obj.get("spec") or {}).get("resources") or {}
            for item in _items(ranges, "PersistentVolumeClaim"):
                errors += _check("PersistentVolumeClaim", item, res.get("requests") or {},
                                 res.get("limits") or {})
        if errors:
            text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
            raise apierrors.forbidden(attrs.resource.qualified, attrs.name, text)
