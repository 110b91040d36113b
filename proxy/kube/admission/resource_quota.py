"""The ResourceQuota admission plugin (kube's ``plugin/pkg/admission/resourcequota``
and its evaluators), with usage recalculated here since no quota controller runs.

On a create (or an update that changes usage) in a namespace with ResourceQuotas, each
quota (by name) that tracks something the object uses is checked: its usage now
(counted from the namespace's objects, read from etcd) plus the request must stay
within ``spec.hard``, else 403 ``exceeded quota: q, requested: pods=1, used: pods=1,
limited: pods=1`` (only the exceeded resources). A quota on pod compute resources
requires every container to state them: 403 ``failed quota: q: must specify
limits.memory for: c``. Admitted writes (not dry runs) write ``status.hard`` and
``status.used`` of the quotas they touched, as upstream's plugin updates them.

Tracked: ``count/<resource>[.<group>]`` of any served resource; ``pods``, ``services``,
``configmaps``, ``secrets``, ``persistentvolumeclaims``, ``replicationcontrollers``,
``resourcequotas``, ``services.loadbalancers``, ``services.nodeports``; pods'
``requests.*``/``limits.*``/``cpu``/``memory``/``ephemeral-storage`` (terminated pods
do not count); PVCs' ``requests.storage``. A quota with scopes counts and limits only
the pods its scopes select (``quota_scopes``), as the quota controller counts them.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from proxy import apierrors
from proxy.admission.attributes import CREATE, UPDATE, Attributes
from proxy.admission.interfaces import Plugin
from proxy.apimachinery import quantity as kq
from proxy.kube.admission.quota_scopes import matches_scopes

__all__ = ["ResourceQuota", "usage"]

JSON = dict[str, Any]
Usage = dict[str, kq.Quantity]

_LEGACY_COUNTS = {"pods": ("", "pods"), "services": ("", "services"),
                  "configmaps": ("", "configmaps"), "secrets": ("", "secrets"),
                  "persistentvolumeclaims": ("", "persistentvolumeclaims"),
                  "replicationcontrollers": ("", "replicationcontrollers"),
                  "resourcequotas": ("", "resourcequotas")}
_POD_COMPUTE = ("cpu", "memory", "ephemeral-storage")
ONE = kq.Quantity(Decimal(1), "DecimalSI")
ZERO = kq.Quantity(Decimal(0), "DecimalSI")


def _add(a: kq.Quantity | None, b: kq.Quantity) -> kq.Quantity:
    """a + b, in the format of the first that is not zero (0 + 512Mi is 512Mi)."""
    if a is None:
        return b
    return kq.Quantity(a.value + b.value, a.fmt if a.value else b.fmt)


def _counted_resource(name: str) -> tuple[str, str] | None:
    """(group, plural) a count quota ``name`` counts."""
    if name in _LEGACY_COUNTS:
        return _LEGACY_COUNTS[name]
    if name.startswith("count/"):
        plural, _, group = name[len("count/"):].partition(".")
        return group, plural
    return None


def _effective(spec: JSON, kind: str) -> dict[str, kq.Quantity]:
    """The pod's ``requests`` or ``limits`` per resource: the containers' sum, at least
    each init container's (kube's effective pod requests)."""
    totals: dict[str, kq.Quantity] = {}
    for key, combine in (("containers", "sum"), ("initContainers", "max")):
        for c in spec.get(key) or ():
            for res, raw in (((c.get("resources") or {}).get(kind) or {}).items()):
                q = kq.parse(raw)
                if q is None:
                    continue
                known = totals.get(res)
                if combine == "sum":
                    totals[res] = _add(known, q)
                elif known is None or q.value > known.value:
                    totals[res] = q
    return totals


def _is_extended(name: str) -> bool:
    """``helper.IsExtendedResourceName``: a domain-prefixed name outside kubernetes.io."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _pod_compute(spec: JSON) -> Usage:
    """requests.X / limits.X (and the bare cpu/memory/ephemeral-storage) of a pod, as
    kube's ``podComputeUsageHelper``: hugepages-* and extended resources are quota'd
    by their requests only (``requests.example.com/dongle``)."""
    out: Usage = {}
    requests, limits = _effective(spec, "requests"), _effective(spec, "limits")
    for res in _POD_COMPUTE:
        if res in requests:
            out[res] = out[f"requests.{res}"] = requests[res]
        if res in limits:
            out[f"limits.{res}"] = limits[res]
    for res, amount in requests.items():
        if res.startswith("hugepages-"):
            out[res] = out[f"requests.{res}"] = amount
        elif _is_extended(res):
            out[f"requests.{res}"] = amount
    return out


def usage(group: str, plural: str, obj: JSON | None) -> Usage:
    """What one object uses, by quota resource name (count/* included)."""
    if obj is None:
        return {}
    out: Usage = {f"count/{plural}" + (f".{group}" if group else ""): ONE}
    for name, target in _LEGACY_COUNTS.items():
        if target == (group, plural):
            out[name] = ONE
    if (group, plural) == ("", "pods"):
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return {}
        out.update(_pod_compute(obj.get("spec") or {}))
    elif (group, plural) == ("", "services"):
        kind = (obj.get("spec") or {}).get("type")
        if kind == "LoadBalancer":
            out["services.loadbalancers"] = ONE
        if kind in ("LoadBalancer", "NodePort"):
            ports = (obj.get("spec") or {}).get("ports") or ()
            out["services.nodeports"] = kq.Quantity(Decimal(len(ports)), "DecimalSI")
    elif (group, plural) == ("", "persistentvolumeclaims"):
        storage = kq.parse((((obj.get("spec") or {}).get("resources") or {})
                            .get("requests") or {}).get("storage"))
        if storage is not None:
            out["requests.storage"] = storage
    return out


def _missing_compute(hard: JSON, spec: JSON) -> str:
    """``must specify ...`` for compute resources a pod quota requires, or ""."""
    missing: dict[str, list[str]] = {}
    for name in hard:
        kind, _, res = name.rpartition(".")
        if name in _POD_COMPUTE:
            kind, res = "requests", name
        if kind not in ("requests", "limits") or res not in _POD_COMPUTE:
            continue
        for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
            if res not in ((c.get("resources") or {}).get(kind) or {}):
                missing.setdefault(name, []).append(str(c.get("name")))
    if not missing:
        return ""
    return "must specify " + "; ".join(
        f"{name} for: {','.join(sorted(set(containers)))}"
        for name, containers in sorted(missing.items()))


def _pretty(values: Usage, names: list[str]) -> str:
    return ",".join(f"{n}={values.get(n, ZERO)}" for n in sorted(names))


class ResourceQuota(Plugin):
    name = "ResourceQuota"
    operations = frozenset({CREATE, UPDATE})
    mutating = True
    validating = True

    async def admit(self, attrs: Attributes) -> None:
        """A new ResourceQuota starts with its status filled (upstream's quota controller
        does it a moment later): ``hard`` from the spec, ``used`` counted now."""
        if (attrs.operation != CREATE or attrs.subresource or attrs.object is None or
                (attrs.resource.group, attrs.resource.plural) != ("", "resourcequotas")):
            return
        hard: JSON = (attrs.object.get("spec") or {}).get("hard") or {}
        used = await self._used(attrs.namespace, attrs.object)
        attrs.object["status"] = {"hard": dict(hard),
                                  "used": {n: str(used.get(n, ZERO)) for n in hard}}


    async def validate(self, attrs: Attributes) -> None:
        if not attrs.namespace or attrs.subresource or attrs.object is None:
            return
        group, plural = attrs.resource.group, attrs.resource.plural
        new = usage(group, plural, attrs.object)
        old = usage(group, plural, attrs.old_object) if attrs.operation == UPDATE else {}
        delta = {k: kq.Quantity(v.value - (old[k].value if k in old else 0), v.fmt)
                 for k, v in new.items()}
        delta = {k: v for k, v in delta.items() if v.value > 0}
        quotas = await self.lookup.list("", "resourcequotas", attrs.namespace)
        touched: list[tuple[JSON, Usage]] = []
        for quota in sorted(quotas, key=lambda q: str(q["metadata"]["name"])):
            hard: JSON = (quota.get("spec") or {}).get("hard") or {}
            if (group, plural) == ("", "pods") and not matches_scopes(quota, attrs.object):
                continue  # a scoped quota that does not select this pod
            if (group, plural) == ("", "pods") and attrs.operation == CREATE:
                missing = _missing_compute(hard, (attrs.object.get("spec") or {}))
                if missing:
                    raise apierrors.forbidden(attrs.resource.qualified, attrs.name,
                                              f"failed quota: {quota['metadata']['name']}: "
                                              f"{missing}")
            relevant = [n for n in hard if n in delta]
            if not relevant:
                continue
            used = await self._used(attrs.namespace, quota)
            limits = {n: q for n in hard if (q := kq.parse(hard[n])) is not None}
            exceeded = [n for n in relevant if n in limits and
                        _add(used.get(n), delta[n]).value > limits[n].value]
            if exceeded:
                raise apierrors.forbidden(
                    attrs.resource.qualified, attrs.name,
                    f"exceeded quota: {quota['metadata']['name']}, requested: "
                    f"{_pretty(delta, exceeded)}, used: {_pretty(used, exceeded)}, "
                    f"limited: {_pretty(limits, exceeded)}")
            touched.append((quota, {n: _add(used.get(n), delta.get(n, ZERO)) for n in hard}))
        if not attrs.dry_run:
            for quota, used_after in touched:
                await self._write_status(quota, used_after)

    async def _used(self, namespace: str, quota: JSON) -> Usage:
        """The namespace's usage of every resource the quota's ``hard`` names, counted
        now (pods: those its scopes select)."""
        hard: JSON = (quota.get("spec") or {}).get("hard") or {}
        kinds: set[tuple[str, str]] = set()
        for name in hard:
            counted = _counted_resource(name)
            if counted is not None:
                kinds.add(counted)
            elif name.startswith("services."):
                kinds.add(("", "services"))
            elif name == "requests.storage":
                kinds.add(("", "persistentvolumeclaims"))
            else:
                kinds.add(("", "pods"))
        used: Usage = {name: ZERO for name in hard}
        for group, plural in kinds:
            for obj in await self.lookup.list(group, plural, namespace, fresh=True):
                if (group, plural) == ("", "pods") and not matches_scopes(quota, obj):
                    continue
                for name, amount in usage(group, plural, obj).items():
                    if name in hard:
                        used[name] = _add(used[name], amount)
        return used

    async def _write_status(self, quota: JSON, used: Usage) -> None:
        hard = (quota.get("spec") or {}).get("hard") or {}
        status = {"hard": dict(hard), "used": {n: str(used.get(n, ZERO)) for n in hard}}
        if quota.get("status") == status:
            return
        await self.lookup.write_status("", "resourcequotas", {**quota, "status": status})
