"""``/openapi/v2``: the Swagger 2.0 document, made from the OpenAPI v3 documents
(``proxy.openapi.documents``) as one ``definitions`` map.

kube-apiserver still serves it (kube-openapi's v2 handler) and clients still read its
``definitions``: upstream's conformance specs on CustomResourceDefinitions wait for
``definitions["<reversed group>.<version>.<Kind>"]`` to carry the CRD's schema and for
it to go when the CRD does. Each v3 component becomes the definition of the same name,
its ``#/components/schemas/`` references ``#/definitions/``; what v2 cannot say is
left out as upstream's CRD builder leaves it out (``_v2``); IntOrString and Quantity
are ``type: string, format: int-or-string|quantity``; a custom kind that preserves
unknown fields at its root is ``type: object`` alone.

Not built: ``paths`` (empty: v2's operations differ in shape from v3's, and kubectl
1.37 reads v3 for explain, validation and patches) and the protobuf form
(``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``): a client that
accepts only it gets 404, as before this document existed (client-go then falls back).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from proxy.openapi.cached_document import CachedDocument, header
from storage.interfaces import JSONValue

__all__ = ["accepts_json", "swagger_document"]

_V3_ONLY = ("nullable", "oneOf", "anyOf", "not")
_FORMATS = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
}


def _v2(value: JSONValue) -> JSONValue:
    """One schema in v2 form, after apiextensions' ``ToStructuralOpenAPIV2``: no
    oneOf/anyOf/not; ``nullable`` drops the type, items and properties; a node that
    preserves unknown fields keeps neither items nor properties (nor ``type: object``);
    an array without items loses its type. A described reference (v3's
    ``allOf: [{$ref}]``) is the reference with its description, as v2 writes it."""
    if isinstance(value, list):
        return [_v2(v) for v in value]
    if not isinstance(value, dict):
        return value
    node = dict(value)
    all_of = node.pop("allOf", None)
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        node = {**all_of[0], **node}
    if node.pop("nullable", False) is True:
        for key in ("type", "items", "properties"):
            node.pop(key, None)
    if node.get("x-kubernetes-preserve-unknown-fields") is True:
        node.pop("items", None)
        node.pop("properties", None)
        if node.get("type") == "object":
            node.pop("type")
    if node.get("type") == "array" and "items" not in node:
        node.pop("type")
    out: dict[str, Any] = {}
    for key, item in node.items():
        if key == "$ref" and isinstance(item, str):
            out[key] = item.replace("#/components/schemas/", "#/definitions/")
        elif key not in _V3_ONLY:
            out[key] = _v2(item)
    return out


def _definition(name: str, schema: JSONValue) -> JSONValue:
    if name in _FORMATS and isinstance(schema, dict):
        kept = {k: v for k, v in schema.items() if k not in _V3_ONLY}
        return {**kept, "type": "string", "format": _FORMATS[name]}
    if isinstance(schema, dict) and schema.get("x-kubernetes-preserve-unknown-fields") is True:
        # a custom kind that keeps unknown fields at its root: only the type, or kubectl
        # (which reads v2's properties as closed) would refuse every other field
        gvk = schema.get("x-kubernetes-group-version-kind")
        return {"type": "object", **({"x-kubernetes-group-version-kind": gvk} if gvk else {})}
    return _v2(schema)


def swagger_document(documents: Iterable[Mapping[str, Any]], version: str) -> CachedDocument:
    """The v2 document of every v3 ``documents``' components."""
    definitions: dict[str, JSONValue] = {}
    for doc in documents:
        for name, schema in ((doc.get("components") or {}).get("schemas") or {}).items():
            definitions.setdefault(name, _definition(name, schema))
    return CachedDocument.of({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": {},
        "definitions": dict(sorted(definitions.items())),
        "securityDefinitions": {"BearerToken": {
            "description": "Bearer Token authentication", "type": "apiKey",
            "name": "authorization", "in": "header",
        }},
        "security": [{"BearerToken": []}],
    })  # fmt: skip


def accepts_json(request_headers: Mapping[str, str]) -> bool:
    """Whether the request takes the JSON document (no Accept, */*, or JSON)."""
    accept = header(request_headers, "Accept")
    if not accept:
        return True
    types = [part.split(";", 1)[0].strip().lower() for part in accept.split(",")]
    return any(t in ("*/*", "application/*", "application/json") for t in types)
