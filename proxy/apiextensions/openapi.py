"""The OpenAPI v3 components of a custom resource version (apiextensions-apiserver's
``controller/openapi/builder``): ``<reversed group>.<version>.<Kind>`` from the
version's ``openAPIV3Schema`` with ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta)
added, and ``<Kind>List``; both carry ``x-kubernetes-group-version-kind``. Their PATCH
operations take JSON, merge and apply patches only (no strategic merge), which tells
kubectl to send a merge patch. Pure."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from proxy.apiextensions.custom_resource import CustomResourceVersion

__all__ = ["CR_PATCH_TYPES", "CustomKind", "custom_kind"]

JSON = dict[str, Any]
_REF = "#/components/schemas/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
CR_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
)
_API_VERSION = {
    "description": "APIVersion defines the versioned schema of this representation of an "
    "object. Servers should convert recognized schemas to the latest internal value, and may "
    "reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/"
    "sig-architecture/api-conventions.md#resources",
    "type": "string",
}
_KIND = {
    "description": "Kind is a string value representing the REST resource this object "
    "represents. Servers may infer this from the endpoint the client submits requests to. "
    "Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/"
    "devel/sig-architecture/api-conventions.md#types-kinds",
    "type": "string",
}
_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"


@dataclass(frozen=True)
class CustomKind:
    """A CR version's component names and schemas, and the built-in roots they use."""

    name: str
    list_name: str
    components: dict[str, JSON]
    roots: tuple[str, ...] = (_META + "ObjectMeta", _META + "ListMeta")
    patch_types: tuple[str, ...] = CR_PATCH_TYPES


def _component_prefix(group: str, version: str) -> str:
    return ".".join(reversed(group.split("."))) + "." + version


def custom_kind(cr: CustomResourceVersion) -> CustomKind:
    prefix = _component_prefix(cr.group, cr.version)
    name, list_name = f"{prefix}.{cr.kind}", f"{prefix}.{cr.kind}List"
    schema: JSON = copy.deepcopy(cr.schema) if isinstance(cr.schema, dict) else {"type": "object"}
    props = schema.setdefault("properties", {})
    props["apiVersion"] = _API_VERSION
    props["kind"] = _KIND
    props["metadata"] = {
        "description": f"Standard object's metadata. More info: {_CONVENTIONS}#metadata",
        "allOf": [{"$ref": _REF + _META + "ObjectMeta"}],
    }
    schema["properties"] = dict(sorted(props.items()))
    schema["x-kubernetes-group-version-kind"] = [
        {"group": cr.group, "kind": cr.kind, "version": cr.version}
    ]
    listing: JSON = {
        "description": f"{cr.kind}List is a list of {cr.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": _API_VERSION,
            "items": {
                "description": f"List of {cr.plural}. More info: {_CONVENTIONS}",
                "type": "array",
                "items": {"$ref": _REF + name},
            },
            "kind": _KIND,
            "metadata": {
                "description": f"Standard list metadata. More info: {_CONVENTIONS}#types-kinds",
                "allOf": [{"$ref": _REF + _META + "ListMeta"}],
            },
        },
        "x-kubernetes-group-version-kind": [
            {"group": cr.group, "kind": cr.kind + "List", "version": cr.version}
        ],
    }
    return CustomKind(name, list_name, {name: schema, list_name: listing})
