"""Core (``v1``) kinds other than Pod, as ``pkg/apis/core/validation`` validates them:

- Service: a DNS-1035 name; ports required (not for headless or ExternalName
  services), each port 1..65535 with a supported protocol and a valid targetPort,
  names required and unique when there are several, no duplicate (protocol, port);
  type and sessionAffinity supported values; clusterIP(s) valid IPs, agreeing, and
  immutable on update (``spec.clusterIPs[0]: ... may not change once set``);
- ConfigMap / Secret: data keys (``[-._a-zA-Z0-9]+``), 1 MiB in total, the keys a
  Secret's type requires; ``immutable: true`` freezes data (and itself);
- Namespace: a DNS-1123 label name, finalizer names; Node: a DNS subdomain name, taints.

Fields that kube's defaulting fills in (type, protocol, targetPort, sessionAffinity,
secret type; ``proxy.kube.defaulting`` sets them before validation) are taken at
their default when absent (objects stored before defaulting existed).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from proxy.apimachinery.validation import field, go_values
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.names import (
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_ip,
    is_valid_label_value,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns1035_label,
    name_is_dns_label,
    name_is_dns_subdomain,
)
from proxy.apimachinery.validation.object_meta import (
    FIELD_IMMUTABLE,
    validate_finalizer_name,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
    validate_qualified_name,
)
from proxy.kube.validation.container import PORT_PROTOCOLS
from proxy.kube.validation.pod import TAINT_EFFECTS

__all__ = [
    "MAX_SECRET_SIZE",
    "validate_config_map",
    "validate_config_map_update",
    "validate_namespace",
    "validate_namespace_update",
    "validate_node",
    "validate_node_update",
    "validate_persistent_volume_claim",
    "validate_persistent_volume_claim_update",
    "validate_secret",
    "validate_secret_update",
    "validate_service",
    "validate_service_update",
]

JSON = dict[str, Any]

MAX_SECRET_SIZE = 1 * 1024 * 1024
KUBELET_PORT = 10250
_SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_SESSION_AFFINITIES = ("ClientIP", "None")
_IMMUTABLE_SET = "field is immutable when `immutable` is set"


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def _dicts(value: object) -> list[JSON]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def _meta(obj: JSON) -> JSON:
    return _dict(obj.get("metadata"))


# ---------------------------------------------------------------------- Service


def _port_number(port: JSON) -> int:
    number = port.get("port")
    return number if isinstance(number, int) and not isinstance(number, bool) else 0


def cluster_ips(spec: JSON) -> list[str]:
    """``spec.clusterIPs`` as the strategy normalises it (from ``clusterIP`` if unset)."""
    ips = spec.get("clusterIPs")
    if isinstance(ips, list) and ips:
        return [str(ip) for ip in ips]
    return [str(spec["clusterIP"])] if spec.get("clusterIP") else []


def _service_port(port: JSON, require_name: bool, names: set[str], path: str) -> ErrorList:
    errs: ErrorList = []
    name = str(port.get("name") or "")
    if require_name and not name:
        errs.append(field.required(field.child(path, "name")))
    elif name:
        errs += [field.invalid(field.child(path, "name"), name, m) for m in is_dns1123_label(name)]
        if name in names:
            errs.append(field.duplicate(field.child(path, "name"), name))
        else:
            names.add(name)
    number = _port_number(port)
    errs += [field.invalid(field.child(path, "port"), number, m) for m in is_valid_port_num(number)]
    protocol = port.get("protocol")
    if protocol not in (None, "") and protocol not in PORT_PROTOCOLS:
        errs.append(field.not_supported(field.child(path, "protocol"), protocol, PORT_PROTOCOLS))
    target = port.get("targetPort")
    if target in (None, 0, ""):
        target = number  # defaulting: targetPort = port
    target_path = field.child(path, "targetPort")
    if isinstance(target, str):
        errs += [field.invalid(target_path, target, m) for m in is_valid_port_name(target)]
    elif isinstance(target, int):
        errs += [field.invalid(target_path, target, m) for m in is_valid_port_num(target)]
    if port.get("appProtocol") is not None:
        errs += validate_qualified_name(str(port["appProtocol"]), field.child(path, "appProtocol"))
    return errs


def _cluster_ip_fields(spec: JSON, service_type: str) -> ErrorList:
    if service_type == "ExternalName":
        return []
    errs: ErrorList = []
    ips = (
        [str(ip) for ip in spec.get("clusterIPs") or []]
        if isinstance(spec.get("clusterIPs"), list)
        else []
    )
    ips = ips or cluster_ips(spec)
    path = "spec.clusterIPs"
    shown = go_values.string_slice(ips)
    if spec.get("clusterIP") and ips[0] != spec["clusterIP"]:
        errs.append(field.invalid(path, shown, "first value must match `clusterIP`"))
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                errs.append(field.invalid(path, shown, "'None' must be the first and only value"))
            continue
        errs += [field.invalid(field.index(path, i), ip, m) for m in is_valid_ip(ip)]
    if len(ips) > 2:
        errs.append(field.invalid(path, shown, "may only hold up to 2 values"))
    return errs


def _type_rules(spec: JSON, service_type: str, headless: bool, ips: list[str]) -> ErrorList:
    errs: ErrorList = []
    first_ip = "spec.clusterIPs[0]"
    if service_type == "LoadBalancer":
        for i, port in enumerate(_dicts(spec.get("ports"))):
            if port.get("port") == KUBELET_PORT:
                errs.append(
                    field.invalid(
                        field.index("spec.ports", i),
                        KUBELET_PORT,
                        f"may not expose port {KUBELET_PORT} externally since "
                        "it is used by kubelet",
                    )
                )
        if headless:
            errs.append(
                field.invalid(
                    first_ip, ips[0], "may not be set to 'None' for LoadBalancer services"
                )
            )
    elif service_type == "NodePort" and headless:
        errs.append(
            field.invalid(first_ip, ips[0], "may not be set to 'None' for NodePort services")
        )
    elif service_type == "ExternalName":
        for name in ("clusterIPs", "ipFamilies"):
            if spec.get(name) or (name == "clusterIPs" and ips):
                errs.append(
                    field.forbidden(
                        field.child("spec", name), "may not be set for ExternalName services"
                    )
                )
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(
                field.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services")
            )
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            errs += [
                field.invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname)
            ]
        else:
            errs.append(field.required("spec.externalName"))
    return errs


def validate_service(service: JSON) -> ErrorList:
    """``ValidateService`` (see the module docstring for what is covered)."""
    errs = validate_object_meta(_meta(service), True, name_is_dns1035_label)
    spec = _dict(service.get("spec"))
    service_type = str(spec.get("type") or "ClusterIP")
    ips = cluster_ips(spec)
    headless = ips == ["None"]
    ports = _dicts(spec.get("ports"))
    if not ports and not headless and service_type != "ExternalName":
        errs.append(field.required("spec.ports"))
    errs += _type_rules(spec, service_type, headless, ips)
    names: set[str] = set()
    for i, port in enumerate(ports):
        errs += _service_port(port, len(ports) > 1, names, field.index("spec.ports", i))
    if spec.get("selector") is not None:
        errs += validate_labels(spec.get("selector"), "spec.selector")
    affinity = spec.get("sessionAffinity")
    if affinity not in (None, "") and affinity not in _SESSION_AFFINITIES:
        errs.append(field.not_supported("spec.sessionAffinity", affinity, _SESSION_AFFINITIES))
    elif affinity in (None, "", "None") and spec.get("sessionAffinityConfig") is not None:
        errs.append(
            field.forbidden(
                "spec.sessionAffinityConfig", "must not be set when session affinity is None"
            )
        )
    errs += _cluster_ip_fields(spec, service_type)
    for i, ip in enumerate(spec.get("externalIPs") or []):
        errs += [
            field.invalid(field.index("spec.externalIPs", i), ip, m) for m in is_valid_ip(str(ip))
        ]
    if spec.get("type") not in (None, "") and spec["type"] not in _SERVICE_TYPES:
        errs.append(field.not_supported("spec.type", spec["type"], _SERVICE_TYPES))
    return errs + _port_uniqueness(ports, service_type)


def _port_uniqueness(ports: list[JSON], service_type: str) -> ErrorList:
    errs: ErrorList = []
    if service_type == "ClusterIP":
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                errs.append(
                    field.forbidden(
                        field.child(field.index("spec.ports", i), "nodePort"),
                        "may not be used when `type` is 'ClusterIP'",
                    )
                )
    node_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        node_port = port.get("nodePort")
        if not isinstance(node_port, int) or not node_port:
            continue
        node_key = (str(port.get("protocol") or "TCP"), node_port)
        if node_key in node_ports:
            errs.append(
                field.duplicate(field.child(field.index("spec.ports", i), "nodePort"), node_port)
            )
        node_ports.add(node_key)
    seen: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        number = _port_number(port)
        key = (str(port.get("protocol") or "TCP"), number)
        if key in seen:
            errs.append(
                field.duplicate(field.index("spec.ports", i), go_values.service_port_key(*key))
            )
        seen.add(key)
    return errs


def prepare_service_update(new: JSON, old: JSON) -> None:
    """What the service REST keeps on update: a clusterIP the client left out is the
    allocated one (``patchAllocatedValues``); ``clusterIPs`` follow ``clusterIP``."""
    new_spec, old_spec = new.get("spec"), _dict(old.get("spec"))
    if not isinstance(new_spec, dict) or "ExternalName" in (
        new_spec.get("type"),
        old_spec.get("type"),
    ):
        return
    if not new_spec.get("clusterIP") and old_spec.get("clusterIP"):
        new_spec["clusterIP"] = old_spec["clusterIP"]
        if not new_spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            new_spec["clusterIPs"] = list(old_spec["clusterIPs"])
    elif (
        new_spec.get("clusterIP") != old_spec.get("clusterIP")
        and new_spec.get("clusterIPs") == old_spec.get("clusterIPs")
        and new_spec.get("clusterIP")
    ):
        new_spec["clusterIPs"] = [new_spec["clusterIP"]]


def validate_service_update(new: JSON, old: JSON) -> ErrorList:
    """``ValidateServiceUpdate``: metadata update, clusterIPs unchanged, then the new
    service valid."""
    errs = validate_object_meta_update(_meta(new), _meta(old))
    new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    if "ExternalName" not in (new_spec.get("type"), old_spec.get("type")):
        errs += _cluster_ips_update(cluster_ips(new_spec), cluster_ips(old_spec), new_spec)
    return errs + validate_service(new)


def _cluster_ips_update(new: list[str], old: list[str], spec: JSON) -> ErrorList:
    if new == ["None"] and old == ["None"]:
        return []
    path = "spec.clusterIPs"
    shown = go_values.string_slice(new)
    errs: ErrorList = []
    if len(old) == len(new):
        errs += [
            field.invalid(field.index(path, i), shown, "may not change once set")
            for i, ip in enumerate(old)
            if ip != new[i]
        ]
    elif len(old) > len(new):
        if not new:
            errs.append(
                field.invalid(field.index(path, 0), shown, "primary clusterIP can not be unset")
            )
        elif old and new[0] != old[0]:
            errs.append(field.invalid(field.index(path, 0), shown, "may not change once set"))
        if len(new) == 1 and spec.get("ipFamilyPolicy") != "SingleStack":
            errs.append(
                field.invalid(
                    "spec.ipFamilyPolicy",
                    spec.get("ipFamilyPolicy"),
                    "must be set to 'SingleStack' when releasing the secondary clusterIP",
                )
            )
    elif old and new[0] != old[0]:
        errs.append(field.invalid(field.index(path, 0), shown, "may not change once set"))
    return errs


# ------------------------------------------------------------ ConfigMap, Secret


def _data_size(value: object, encoded: bool) -> int:
    text = str(value)
    if not encoded:
        return len(text.encode())
    try:
        return len(base64.b64decode(text, validate=False))
    except (binascii.Error, ValueError):
        return len(text)


def validate_config_map(cm: JSON) -> ErrorList:
    """``ValidateConfigMap``: keys of data and binaryData, no key in both, 1 MiB total."""
    errs = validate_object_meta(_meta(cm), True, name_is_dns_subdomain)
    data, binary = _dict(cm.get("data")), _dict(cm.get("binaryData"))
    total = 0
    for k in sorted(data):
        errs += [field.invalid(field.key("data", k), k, m) for m in is_config_map_key(k)]
        if k in binary:
            errs.append(
                field.invalid(field.key("data", k), k, "duplicate of key present in binaryData")
            )
        total += _data_size(data[k], encoded=False)
    for k in sorted(binary):
        errs += [field.invalid(field.key("binaryData", k), k, m) for m in is_config_map_key(k)]
        total += _data_size(binary[k], encoded=True)
    if total > MAX_SECRET_SIZE:
        errs.append(field.too_long("", MAX_SECRET_SIZE))
    return errs


def _immutable_update(new: JSON, old: JSON, fields: tuple[str, ...]) -> ErrorList:
    if old.get("immutable") is not True:
        return []
    errs: ErrorList = []
    if new.get("immutable") is not True:
        errs.append(field.forbidden("immutable", _IMMUTABLE_SET))
    for name in fields:
        if (new.get(name) or None) != (old.get(name) or None):
            errs.append(field.forbidden(name, _IMMUTABLE_SET))
    return errs


def validate_config_map_update(new: JSON, old: JSON) -> ErrorList:
    errs = validate_object_meta_update(_meta(new), _meta(old))
    errs += _immutable_update(new, old, ("data", "binaryData"))
    return errs + validate_config_map(new)


_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
}


def validate_secret(secret: JSON) -> ErrorList:
    """``ValidateSecret``: data keys, 1 MiB total, the keys the type requires."""
    meta = _meta(secret)
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    data = _dict(secret.get("data"))
    total = 0
    for k in sorted(data):
        errs += [field.invalid(field.key("data", k), k, m) for m in is_config_map_key(k)]
        total += _data_size(data[k], encoded=True)
    if total > MAX_SECRET_SIZE:
        errs.append(field.too_long("data", MAX_SECRET_SIZE))
    secret_type = str(secret.get("type") or "Opaque")
    if secret_type == "kubernetes.io/service-account-token":
        key = "kubernetes.io/service-account.name"
        if not _dict(meta.get("annotations")).get(key):
            errs.append(field.required(field.key("metadata.annotations", key)))
    elif secret_type in _SECRET_REQUIRED_KEYS:
        for k in _SECRET_REQUIRED_KEYS[secret_type]:
            if not data.get(k) and (k not in data or secret_type == "kubernetes.io/ssh-auth"):
                errs.append(field.required(field.key("data", k)))
    elif secret_type == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs += [field.required("data[username]"), field.required("data[password]")]
    elif secret_type == "kubernetes.io/tls":
        errs += [
            field.required(field.key("data", k)) for k in ("tls.crt", "tls.key") if k not in data
        ]
    return errs


def validate_secret_update(new: JSON, old: JSON) -> ErrorList:
    errs = validate_object_meta_update(_meta(new), _meta(old))
    new_type, old_type = new.get("type") or "Opaque", old.get("type") or "Opaque"
    if new_type != old_type:
        errs.append(field.invalid("type", new_type, FIELD_IMMUTABLE))
    errs += _immutable_update(new, old, ("data",))
    return errs + validate_secret(new)


# ------------------------------------------------------------ PersistentVolumeClaim

_PVC_SPEC_IMMUTABLE = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)


def validate_persistent_volume_claim(pvc: JSON) -> ErrorList:
    """The claim's metadata (its spec's own rules are not checked here yet)."""
    return validate_object_meta(_meta(pvc), True, name_is_dns_subdomain)


def validate_persistent_volume_claim_update(new: JSON, old: JSON) -> ErrorList:
    """``ValidatePersistentVolumeClaimUpdate``: the spec is immutable but for
    ``resources.requests`` and ``volumeAttributesClassName`` (upstream appends a
    ``cmp.Diff`` of the two specs to the message; not reproduced)."""
    errs = validate_object_meta_update(_meta(new), _meta(old))
    errs += validate_persistent_volume_claim(new)
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    if _claim_spec_fixed(spec) != _claim_spec_fixed(old_spec):
        errs.append(field.forbidden("spec", _PVC_SPEC_IMMUTABLE))
    return errs


def _claim_spec_fixed(spec: JSON) -> JSON:
    """The part of a claim's spec no update may change (zero values as absent)."""
    fixed = {k: v for k, v in spec.items() if k != "volumeAttributesClassName"}
    resources = {k: v for k, v in _dict(fixed.pop("resources", None)).items() if k != "requests"}
    if resources:
        fixed["resources"] = resources
    return {k: v for k, v in fixed.items() if v not in (None, "", {}, [])}


# ------------------------------------------------------------- Namespace, Node


def validate_namespace(ns: JSON) -> ErrorList:
    errs = validate_object_meta(_meta(ns), False, name_is_dns_label)
    for name in _dict(ns.get("spec")).get("finalizers") or []:
        errs += validate_finalizer_name(str(name), "spec.finalizers")
    return errs


def validate_namespace_update(new: JSON, old: JSON) -> ErrorList:
    """The namespace strategy's: ``ValidateNamespace`` then ``ValidateNamespaceUpdate``."""
    return validate_namespace(new) + validate_object_meta_update(_meta(new), _meta(old))


def _taints(taints: list[JSON], path: str) -> ErrorList:
    """``validateNodeTaints`` (its path really is ``metadata.taints``, as upstream's)."""
    errs: ErrorList = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        p = field.index(path, i)
        key, value = str(taint.get("key") or ""), str(taint.get("value") or "")
        errs += validate_qualified_name(key, field.child(p, "key"))
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(field.invalid(field.child(p, "value"), value, ";".join(msgs)))
        effect = str(taint.get("effect") or "")
        if not effect:
            errs.append(field.required(field.child(p, "effect")))
        elif effect not in TAINT_EFFECTS:
            errs.append(field.not_supported(field.child(p, "effect"), effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            shown = go_values.GoLiteral(
                f"core.Taint{{Key:{field.go_quote(key)}, Value:{field.go_quote(value)}, "
                f"Effect:{field.go_quote(effect)}, TimeAdded:<nil>}}"
            )
            dup = field.duplicate(p, shown)
            errs.append(
                field.FieldError(
                    dup.type, dup.field, dup.body + ": taints must be unique by key and effect pair"
                )
            )
            continue
        seen.add((key, effect))
    return errs


def validate_node(node: JSON) -> ErrorList:
    errs = validate_object_meta(_meta(node), False, name_is_dns_subdomain)
    taints = _dicts(_dict(node.get("spec")).get("taints"))
    if taints:
        errs += _taints(taints, "metadata.taints")
    return errs


def validate_node_update(new: JSON, old: JSON) -> ErrorList:
    """The node strategy's: ``ValidateNode`` then ``ValidateNodeUpdate`` (podCIDRs and
    providerID set once, taints again)."""
    errs = validate_node(new) + validate_object_meta_update(_meta(new), _meta(old))
    spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    old_cidrs, cidrs = old_spec.get("podCIDRs") or [], spec.get("podCIDRs") or []
    if old_cidrs and (len(old_cidrs) != len(cidrs) or old_cidrs != cidrs):
        detail = 'node updates may not change podCIDR except from "" to valid'
        changed = (
            1
            if len(old_cidrs) != len(cidrs)
            else sum(a != b for a, b in zip(old_cidrs, cidrs, strict=True))
        )
        errs += [field.forbidden("spec.podCIDRs", detail)] * changed
    provider = old_spec.get("providerID")
    if provider and provider != spec.get("providerID"):
        errs.append(
            field.forbidden(
                "spec.providerID", 'node updates may not change providerID except from "" to valid'
            )
        )
    taints = _dicts(spec.get("taints"))
    return errs + (_taints(taints, "metadata.taints") if taints else [])
