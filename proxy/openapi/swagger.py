"""``/openapi/v2``: the Swagger 2.0 document, made from the OpenAPI v3 documents
(``proxy.openapi.documents``) as one ``definitions`` map.

kube-apiserver still serves it (kube-openapi's v2 handler) and clients still read its
``definitions``: upstream's conformance specs on CustomResourceDefinitions wait for
``definitions["<reversed group>.<version>.<Kind>"]`` to carry the CRD's schema and for
it to go when the CRD does. Each v3 component becomes the definition of the same name,
its ``#/components/schemas/`` references ``#/definitions/``; v3-only keywords have no
v2 form and are left out (``nullable``; ``oneOf`` and ``anyOf``, whose IntOrString
and Quantity are ``type: string, format: int-or-string|quantity`` in v2).

Not built: ``paths`` (empty: v2's operations differ in shape from v3's, and kubectl
1.37 reads v3 for explain, validation and patches) and the protobuf form
(``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``): a client that
accepts only it gets 404, as before this document existed (client-go then falls back).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from proxy.endpoints.cached_document import CachedDocument, header
from storage.interfaces import JSONValue

__all__ = ["accepts_json", "swagger_document"]

_V3_ONLY = ("nullable", "oneOf", "anyOf")
_FORMATS = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int-or-string",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
}


def _v2(value: JSONValue) -> JSONValue:
    if isinstance(value, list):
        return [_v2(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "$ref" and isinstance(item, str):
            out[key] = item.replace("#/components/schemas/", "#/definitions/")
        elif key not in _V3_ONLY:
            out[key] = _v2(item)
    return out


def _definition(name: str, schema: JSONValue) -> JSONValue:
    if name in _FORMATS and isinstance(schema, dict):
        kept = {k: v for k, v in schema.items() if k not in _V3_ONLY}
        return {**kept, "type": "string", "format": _FORMATS[name]}
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
