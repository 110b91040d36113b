"""The APIService object (``apiregistration.k8s.io/v1``) as the aggregator reads it, its
``Available`` condition, and the local APIServices kube-apiserver registers for the
built-in group-versions it serves (``controlplane/apiserver/aggregator.go``). Validation
and strategy: ``proxy.aggregator.validation``."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from dataclasses import dataclass
from typing import Any

__all__ = [
    "AUTOMANAGED_LABEL",
    "CRD_PRIORITY",
    "GROUP",
    "LOCAL_PRIORITIES",
    "APIServiceRef",
    "available_condition",
    "local_apiservice",
    "parse",
    "set_condition",
]

JSON = dict[str, Any]

GROUP = "apiregistration.k8s.io"
# kube-aggregator's autoregister labels: "onstart" (created at start, never deleted by it)
# or "true" (kept in sync with the CRDs/groups that back it)
AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"

# (group, version) -> (groupPriorityMinimum, versionPriority) of kube-apiserver's
# apiVersionPriorities; the values of every group-version a v1.32 kube-apiserver serves
# were read from its APIServices. resource.k8s.io/v1 and storagemigration.k8s.io/v1 are
# GA only after 1.32 (not compared with a running kube-apiserver; see docs/aggregation.md).
LOCAL_PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("resource.k8s.io", "v1"): (16200, 21),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("storagemigration.k8s.io", "v1"): (15800, 15),
}

# what upstream's crdRegistrationController gives a CRD's group-versions
CRD_PRIORITY = (1000, 100)
LOCAL_REASON = "Local"
LOCAL_MESSAGE = "Local APIServices are always available"


@dataclass(frozen=True, slots=True)
class APIServiceRef:
    """The parts of an APIService the aggregator routes by."""

    name: str
    group: str
    version: str
    group_priority_minimum: int
    version_priority: int
    service_namespace: str = ""
    service_name: str = ""
    service_port: int = 443
    ca_bundle: bytes = b""
    insecure_skip_tls_verify: bool = False
    available: bool = False

    @property
    def local(self) -> bool:
        return not self.service_name

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def ca_bundle_bytes(spec: JSON) -> bytes:
    """``spec.caBundle`` decoded (it is base64 in JSON); undecodable counts as bytes of text."""
    raw = spec.get("caBundle")
    if not isinstance(raw, str) or not raw:
        return b""
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return raw.encode()


def parse(obj: JSON) -> APIServiceRef:
    """An APIService object as the aggregator reads it."""
    spec = _dict(obj.get("spec"))
    service = spec.get("service")
    svc = _dict(service)
    conditions = _dict(obj.get("status")).get("conditions") or []
    available = any(
        isinstance(c, dict) and c.get("type") == "Available" and c.get("status") == "True"
        for c in conditions
    )
    return APIServiceRef(
        name=str(_dict(obj.get("metadata")).get("name") or ""),
        group=str(spec.get("group") or ""),
        version=str(spec.get("version") or ""),
        group_priority_minimum=_int(spec.get("groupPriorityMinimum")),
        version_priority=_int(spec.get("versionPriority")),
        service_namespace=str(svc.get("namespace") or ""),
        service_name=str(svc.get("name") or "") if isinstance(service, dict) else "",
        service_port=_int(svc.get("port"), 443),
        ca_bundle=ca_bundle_bytes(spec),
        insecure_skip_tls_verify=spec.get("insecureSkipTLSVerify") is True,
        available=available,
    )


# ------------------------------------------------------------------------ conditions


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def available_condition(status: str, reason: str, message: str, now: str = "") -> JSON:
    """The ``Available`` condition (``lastTransitionTime`` is set by ``set_condition``)."""
    return {
        "type": "Available",
        "status": status,
        "lastTransitionTime": now or _now(),
        "reason": reason,
        "message": message,
    }


def set_condition(obj: JSON, cond: JSON) -> bool:
    """``SetAPIServiceCondition``: replace the condition of that type, keeping its
    ``lastTransitionTime`` when the status did not change. True when anything changed."""
    status = obj.setdefault("status", {})
    conditions: list[JSON] = status.setdefault("conditions", [])
    for i, old in enumerate(conditions):
        if old.get("type") != cond["type"]:
            continue
        if old.get("status") == cond["status"]:
            cond = {**cond, "lastTransitionTime": old.get("lastTransitionTime")}
        if old == cond:
            return False
        conditions[i] = cond
        return True
    conditions.append(cond)
    return True


def local_apiservice(group: str, version: str) -> JSON | None:
    """The APIService kube-apiserver registers at start for a built-in group-version it
    serves (labelled automanaged=onstart), or None when upstream has no priority for it."""
    priority = LOCAL_PRIORITIES.get((group, version))
    if priority is None:
        return None
    spec: JSON = {
        "version": version,
        "groupPriorityMinimum": priority[0],
        "versionPriority": priority[1],
    }
    if group:
        spec = {"group": group, **spec}
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "APIService",
        "metadata": {"name": f"{version}.{group}", "labels": {AUTOMANAGED_LABEL: "onstart"}},
        "spec": spec,
    }
