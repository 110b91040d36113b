"""The OpenAPI v3 documents of ``metrics.k8s.io/v1beta1`` (what ``kubectl explain
podmetrics`` reads through the aggregator): an index naming the group-version's
document with its hash, and the document (schemas with their GroupVersionKind, paths of
list and get). Built once; pure."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from lab.extension.metrics import GROUP, NODE_KIND, POD_KIND, RESOURCES, VERSION

__all__ = ["DOCUMENT", "DOCUMENT_HASH", "INDEX", "PATH"]

JSON = dict[str, Any]
PATH = f"apis/{GROUP}/{VERSION}"
_PREFIX = "io.k8s.metrics.pkg.apis.metrics.v1beta1"  # metrics-server's schema names
_META = "io.k8s.apimachinery.pkg.apis.meta.v1"


def _quantities(description: str) -> JSON:
    return {"type": "object", "description": description,
            "additionalProperties": {"type": "string"}}  # fmt: skip


def _schema(kind: str, properties: JSON, description: str) -> JSON:
    base: JSON = {
        "apiVersion": {"type": "string", "description": "APIVersion of this representation."},
        "kind": {"type": "string", "description": "Kind of this representation."},
        "metadata": {"allOf": [{"$ref": f"#/components/schemas/{_META}.ObjectMeta"}]},
        "timestamp": {"type": "string", "format": "date-time",
                      "description": "When the usage was computed."},
        "window": {"type": "string", "description": "The window the usage covers."},
    }  # fmt: skip
    return {"type": "object", "description": description, "properties": {**base, **properties},
            "x-kubernetes-group-version-kind": [{"group": GROUP, "version": VERSION,
                                                 "kind": kind}]}  # fmt: skip


def _document() -> JSON:
    container = {"type": "object", "properties": {
        "name": {"type": "string", "description": "The container's name."},
        "usage": _quantities("CPU (millicores) and memory (KiB) the container uses.")}}  # fmt: skip
    schemas: JSON = {
        f"{_PREFIX}.{POD_KIND}": _schema(POD_KIND, {"containers": {
            "type": "array", "items": container,
            "description": "Usage of each container of the pod."}},
            "The resource usage of a pod, computed from the cached pods."),
        f"{_PREFIX}.{NODE_KIND}": _schema(NODE_KIND, {"usage": _quantities(
            "CPU and memory the node's running pods use.")},
            "The resource usage of a node: its running pods' usage summed."),
        f"{_META}.ObjectMeta": {"type": "object", "properties": {
            "name": {"type": "string"}, "namespace": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "creationTimestamp": {"type": "string", "format": "date-time"}}},
    }  # fmt: skip
    paths: JSON = {}
    for plural, (kind, namespaced, _) in RESOURCES.items():
        ref = {"$ref": f"#/components/schemas/{_PREFIX}.{kind}"}
        ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
        gvk = {"group": GROUP, "version": VERSION, "kind": kind}
        base = f"/{PATH}/namespaces/{{namespace}}/{plural}" if namespaced else f"/{PATH}/{plural}"
        for path, action in ((base, "list"), (base + "/{name}", "get")):
            paths[path] = {"get": {"operationId": f"{action}{kind}", "responses": ok,
                                   "x-kubernetes-action": action,
                                   "x-kubernetes-group-version-kind": gvk}}  # fmt: skip
    return {"openapi": "3.0.0", "info": {"title": "watchcache lab metrics", "version": VERSION},
            "paths": paths, "components": {"schemas": schemas}}  # fmt: skip


DOCUMENT = json.dumps(_document()).encode()
DOCUMENT_HASH = hashlib.sha512(DOCUMENT).hexdigest().upper()
INDEX = json.dumps(
    {"paths": {PATH: {"serverRelativeURL": f"/openapi/v3/{PATH}?hash={DOCUMENT_HASH}"}}}
).encode()
