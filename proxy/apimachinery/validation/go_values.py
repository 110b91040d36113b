"""Bad values that upstream prints with Go's ``%#v`` (or ``String()``, or ``%v``:
:func:`go_format`), rendered from
decoded JSON so messages read as kube-apiserver's: ``[]string{"a", "b"}``,
``map[string]string{"app":"web"}``, ``v1.LabelSelector{MatchLabels:...}``,
``core.ServicePort{...}``, a ``metav1.Time`` as ``2024-01-02 03:04:05 +0000 UTC``.

Exact for the flat types above. Whole structs of many fields (a pod template, whose
``%#v`` prints every zero-valued field of the internal type) are approximated by
:func:`struct`: the fields that are set, with Go's field names.
"""

from __future__ import annotations

import datetime
from typing import Any

from proxy.apimachinery.validation.field import GoLiteral, go_quote, go_value

__all__ = [
    "GoLiteral",
    "go_format",
    "label_selector",
    "meta_value",
    "owner_reference",
    "owner_references",
    "service_port_key",
    "string_map",
    "string_slice",
    "struct",
    "value_text",
]

# JSON names whose Go field name is not the JSON name with its first letter capitalised
_GO_NAMES = {
    "apiVersion": "APIVersion",
    "uid": "UID",
    "dnsPolicy": "DNSPolicy",
    "dnsConfig": "DNSConfig",
    "hostPID": "HostPID",
    "hostIPC": "HostIPC",
    "os": "OS",
    "podIP": "PodIP",
    "podIPs": "PodIPs",
    "hostIP": "HostIP",
    "clusterIP": "ClusterIP",
    "clusterIPs": "ClusterIPs",
    "externalIPs": "ExternalIPs",
    "tty": "TTY",
    "podCIDR": "PodCIDR",
    "podCIDRs": "PodCIDRs",
    "providerID": "ProviderID",
    "ttlSecondsAfterFinished": "TTLSecondsAfterFinished",
}


def go_format(value: Any) -> str:
    """``value`` as Go's ``%v`` prints decoded JSON (for upstream-identical messages)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, dict):
        inner = " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value))
        return f"map[{inner}]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    return str(value)


def go_name(json_name: str) -> str:
    return _GO_NAMES.get(json_name, json_name[:1].upper() + json_name[1:])


def string_slice(values: list[str] | None) -> GoLiteral:
    if values is None:
        return GoLiteral("[]string(nil)")
    return GoLiteral("[]string{" + ", ".join(go_quote(v) for v in values) + "}")


def _map_text(values: Any) -> str:
    if not isinstance(values, dict):
        return "map[string]string(nil)"
    inner = ", ".join(f"{go_quote(str(k))}:{go_quote(str(values[k]))}" for k in sorted(values))
    return "map[string]string{" + inner + "}"


def string_map(values: Any) -> GoLiteral:
    return GoLiteral(_map_text(values))


def _requirement(expr: Any) -> str:
    expr = expr if isinstance(expr, dict) else {}
    values = expr.get("values")
    vals = string_slice([str(v) for v in values] if isinstance(values, list) else None)
    return (
        f"v1.LabelSelectorRequirement{{Key:{go_quote(str(expr.get('key') or ''))}, "
        f"Operator:{go_quote(str(expr.get('operator') or ''))}, Values:{vals.text}}}"
    )


def label_selector(selector: Any) -> GoLiteral | None:
    """A ``*metav1.LabelSelector`` as ErrorBody prints it (nil → None, printed "null")."""
    if not isinstance(selector, dict):
        return None
    exprs = selector.get("matchExpressions")
    if isinstance(exprs, list):
        expr_text = (
            "[]v1.LabelSelectorRequirement{" + ", ".join(_requirement(e) for e in exprs) + "}"
        )
    else:
        expr_text = "[]v1.LabelSelectorRequirement(nil)"
    return GoLiteral(
        f"v1.LabelSelector{{MatchLabels:{_map_text(selector.get('matchLabels'))}, "
        f"MatchExpressions:{expr_text}}}"
    )


def _bool_pointer(value: Any) -> str:
    return "(*bool)(nil)" if value is None else "(*bool)(0xc000000000)"


def _owner_text(ref: dict[str, Any]) -> str:
    return (
        f"v1.OwnerReference{{APIVersion:{go_quote(str(ref.get('apiVersion') or ''))}, "
        f"Kind:{go_quote(str(ref.get('kind') or ''))}, "
        f"Name:{go_quote(str(ref.get('name') or ''))}, "
        f"UID:{go_quote(str(ref.get('uid') or ''))}, "
        f"Controller:{_bool_pointer(ref.get('controller'))}, "
        f"BlockOwnerDeletion:{_bool_pointer(ref.get('blockOwnerDeletion'))}}}"
    )


def owner_reference(ref: dict[str, Any]) -> GoLiteral:
    return GoLiteral(_owner_text(ref))


def owner_references(refs: list[dict[str, Any]]) -> GoLiteral:
    return GoLiteral("[]v1.OwnerReference{" + ", ".join(_owner_text(r) for r in refs) + "}")


def meta_value(value: Any) -> object:
    """A metadata timestamp (``metav1.Time.String()``) or number as ErrorBody prints it."""
    if isinstance(value, str):
        try:
            moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
        return GoLiteral(moment.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S +0000 UTC"))
    return value


def service_port_key(protocol: str, port: int) -> GoLiteral:
    """The ``core.ServicePort{Protocol, Port}`` key of a duplicate Service port."""
    return GoLiteral(
        f'core.ServicePort{{Name:"", Protocol:{go_quote(protocol)}, '
        f"AppProtocol:(*string)(nil), Port:{port}, "
        'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}'
    )


def value_text(value: Any) -> str:
    """A JSON value in the style of :func:`struct` (objects as ``{Field:value}``)."""
    if isinstance(value, dict):
        return struct("", value).text
    if isinstance(value, list):
        return "{" + ", ".join(value_text(v) for v in value) + "}"
    return go_value(value)


def struct(type_name: str, obj: Any) -> GoLiteral:
    """An approximation of a struct's ``%#v``: its set fields, Go-named, in order."""
    fields = obj.items() if isinstance(obj, dict) else []
    inner = ", ".join(f"{go_name(str(k))}:{value_text(v)}" for k, v in fields)
    return GoLiteral(f"{type_name}{{{inner}}}")
