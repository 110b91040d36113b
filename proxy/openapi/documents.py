"""OpenAPI v3 documents: ``/openapi/v3`` and ``/openapi/v3/<api|apis/group>/<version>``.

kubectl 1.37 reads them for ``explain`` (the schema of a GVK, found in
``components.schemas`` by its ``x-kubernetes-group-version-kind``) and, before
``apply``/``create``, to learn whether the server validates fields itself: it looks
for the PATCH operation of the kind (by the operation's
``x-kubernetes-group-version-kind``) and for a ``fieldValidation`` query parameter on
it. Finding it, kubectl sends ``fieldValidation=Strict`` and skips its own checks.

The schemas come from ``kubernetes-validate`` (JSON Schema 2020-12, see
:mod:`proxy.openapi.schemas`) and are rewritten to kube-apiserver's OpenAPI 3.0 style:
``#/components/schemas/<name>`` references (wrapped in ``allOf`` when they carry a
description, as upstream does), one ``type`` instead of ``["string", "null"]``,
IntOrString and Quantity as ``oneOf`` their two types (kubectl explain then names
them), and
the ``x-kubernetes-*`` extensions (group-version-kind, patch strategy and merge key,
list type and map keys) kept.

Documents are built lazily, once per group-version, and kept as bytes with their
hash. :meth:`OpenAPIV3.respond` mirrors kube-openapi's handler: ``?hash=`` that
matches gets immutable caching headers, a stale hash a 301 to the current URL, an
unknown group-version 404, ``If-None-Match`` a 304. Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from email.utils import format_datetime
from typing import Protocol

from proxy.apimachinery.api_resource import ServedResource
from proxy.openapi.cached_document import CachedDocument
from proxy.openapi.schemas import definition_name, definitions, ref_name, schema_version
from proxy.openapi.swagger import swagger_document
from storage.interfaces import JSONValue

__all__ = [
    "CachedDocument",
    "CustomKind",
    "CustomKinds",
    "OpenAPIResource",
    "OpenAPIV3",
    "convert_schema",
    "gv_path",
]

COMPONENT_REF = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
SHARED_SCHEMAS = (META + "Status", META + "DeleteOptions", META + "WatchEvent", META + "Patch")
PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
RESPONSE_TYPES = ("application/json", "application/yaml")


OpenAPIResource = ServedResource  # what the documents need (proxy.apimachinery.api_resource)


def gv_path(group: str, version: str) -> str:
    """The document path of a group-version: ``api/v1``, ``apis/apps/v1``."""
    return f"api/{version}" if not group else f"apis/{group}/{version}"


# ----------------------------------------------------------------- schema rewriting


def _component_ref(ref: str) -> str:
    return COMPONENT_REF + ref_name(ref)


def _single_type(value: JSONValue) -> JSONValue:
    if isinstance(value, list):
        kinds = [t for t in value if t != "null"]
        return kinds[0] if len(kinds) == 1 else kinds
    return value


def convert_schema(schema: Mapping[str, JSONValue]) -> dict[str, JSONValue]:
    """One JSON-Schema node of kubernetes-validate rewritten in kube's OpenAPI v3 style."""
    ref = schema.get("$ref")
    siblings = {k: v for k, v in schema.items() if k != "$ref"}
    if isinstance(ref, str):
        target = {"$ref": _component_ref(ref)}
        if not siblings:
            return target
        out = _convert_keywords(siblings)
        out["allOf"] = [target]
        return out
    return _convert_keywords(schema)


def _convert_keywords(schema: Mapping[str, JSONValue]) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {}
    for key, value in schema.items():
        if key == "type":
            out[key] = _single_type(value)
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = convert_schema(value)
        elif key == "properties" and isinstance(value, Mapping):
            out[key] = {name: convert_schema(prop) for name, prop in value.items()}
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            out[key] = [convert_schema(v) for v in value]
        else:
            out[key] = value
    return out


def _convert_definition(name: str, schema: Mapping[str, JSONValue]) -> dict[str, JSONValue]:
    if name == INT_OR_STRING:
        # kube's v3 form: no single type (so kubectl explain prints <IntOrString>).
        return {
            "description": "IntOrString is a type that can hold an int32 or a string.",
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        }
    if name == QUANTITY:
        return {
            "description": schema.get("description", "Quantity is a fixed-point number."),
            "oneOf": [{"type": "string"}, {"type": "number"}],
        }
    out = convert_schema(schema)
    props = out.get("properties")
    if isinstance(props, dict) and "x-kubernetes-group-version-kind" in out:
        # kubernetes-validate pins apiVersion/kind with enums; kube's schemas do not.
        for key in ("apiVersion", "kind"):
            if isinstance(props.get(key), dict):
                props[key] = {k: v for k, v in props[key].items() if k != "enum"}
    return out


@functools.cache
def converted_definition(name: str) -> dict[str, JSONValue]:
    """The kube-style component schema of a definition (cached; do not mutate)."""
    return _convert_definition(name, definitions()[name])


def _refs(value: JSONValue) -> Iterable[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str) and item.startswith(COMPONENT_REF):
                yield item[len(COMPONENT_REF) :]
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def schema_closure(roots: Iterable[str]) -> dict[str, dict[str, JSONValue]]:
    """The named schemas reachable from ``roots``, by name, sorted."""
    found: dict[str, dict[str, JSONValue]] = {}
    todo = [r for r in roots if r in definitions()]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found[name] = converted_definition(name)
        todo.extend(r for r in _refs(found[name]) if r not in found and r in definitions())
    return dict(sorted(found.items()))


# ------------------------------------------------------------------------- paths


def _camel_group(group: str) -> str:
    if not group:
        return "Core"
    base = group.removesuffix(".k8s.io")
    return "".join(part[:1].upper() + part[1:] for part in base.split("."))


def _query_param(name: str, description: str, type_: str = "string") -> dict[str, JSONValue]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": type_, "uniqueItems": True},
    }


DRY_RUN = _query_param(
    "dryRun",
    "When present, indicates that modifications should not be persisted. Valid values "
    "are: - All: all dry run stages will be processed",
)
FIELD_MANAGER = _query_param(
    "fieldManager",
    "fieldManager is a name associated with the actor or entity that is making these changes.",
)
FIELD_VALIDATION = _query_param(
    "fieldValidation",
    "fieldValidation instructs the server on how to handle objects in the request "
    "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: "
    "This will ignore any unknown fields that are silently dropped from the object, and "
    "will ignore all but the last duplicate field that the decoder encounters. - Warn: "
    "This will send a warning via the standard warning response header for each unknown "
    "field that is dropped from the object, and for each duplicate field that is "
    "encountered. - Strict: This will fail the request with a BadRequest error if any "
    "unknown fields would be dropped from the object, or if there are any duplicate "
    "fields present.",
)
FORCE = _query_param(
    "force",
    'Force is going to "force" Apply requests. It means user will re-acquire conflicting '
    "fields owned by other people.",
    "boolean",
)
LIST_PARAMS = [
    _query_param(name, f"{name} option of list and watch calls.", type_)
    for name, type_ in (
        ("allowWatchBookmarks", "boolean"),
        ("continue", "string"),
        ("fieldSelector", "string"),
        ("labelSelector", "string"),
        ("limit", "integer"),
        ("resourceVersion", "string"),
        ("resourceVersionMatch", "string"),
        ("sendInitialEvents", "boolean"),
        ("timeoutSeconds", "integer"),
        ("watch", "boolean"),
    )
]
PRETTY = _query_param("pretty", "If 'true', then the output is pretty printed.")


def _path_param(name: str, description: str) -> dict[str, JSONValue]:
    return {
        "name": name,
        "in": "path",
        "description": description,
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }


NAMESPACE = _path_param("namespace", "object name and auth scope, such as for teams and projects")


def _content(schema_name: str, types: Sequence[str] = RESPONSE_TYPES) -> dict[str, JSONValue]:
    return {t: {"schema": {"$ref": COMPONENT_REF + schema_name}} for t in types}


class CustomKind(Protocol):
    """A kind whose schemas are not built in (a custom resource version's, made by
    ``proxy.apiextensions.openapi``): its component names, the components, the built-in
    schemas they refer to, and the patch types its PATCH takes."""

    @property
    def name(self) -> str: ...
    @property
    def list_name(self) -> str: ...
    @property
    def components(self) -> Mapping[str, JSONValue]: ...
    @property
    def roots(self) -> Sequence[str]: ...
    @property
    def patch_types(self) -> Sequence[str]: ...


CustomKinds = Callable[[OpenAPIResource], CustomKind | None]


@dataclass(frozen=True)
class _Kind:
    res: OpenAPIResource
    schema: str  # component name of the kind
    list_schema: str
    patch_types: Sequence[str] = PATCH_TYPES

    @property
    def gvk(self) -> dict[str, str]:
        return {"group": self.res.group, "version": self.res.version, "kind": self.res.kind}

    def op_id(self, verb: str, namespaced: bool, suffix: str = "") -> str:
        res = self.res
        scope = "Namespaced" if namespaced else ""
        version = res.version[:1].upper() + res.version[1:]
        return f"{verb}{_camel_group(res.group)}{version}{scope}{res.kind}{suffix}"

    def operation(
        self,
        action: str,
        verb: str,
        namespaced: bool,
        *,
        params: Sequence[dict[str, JSONValue]] = (),
        body: str | None = None,
        body_types: Sequence[str] = RESPONSE_TYPES,
        returns: str | None = None,
        suffix: str = "",
        description: str = "",
    ) -> dict[str, JSONValue]:
        op: dict[str, JSONValue] = {
            "tags": [_camel_group(self.res.group).lower() + "_" + self.res.version],
            "description": description or f"{action} {self.res.kind}",
            "operationId": self.op_id(verb, namespaced, suffix),
            "parameters": list(params),
        }
        if body is not None:
            op["requestBody"] = {"content": _content(body, body_types), "required": True}
        op["responses"] = {
            "200": {"description": "OK", "content": _content(returns or self.schema)},
            "401": {"description": "Unauthorized"},
        }
        op["x-kubernetes-action"] = action
        op["x-kubernetes-group-version-kind"] = self.gvk
        return op


def _collection_path(kind: _Kind, namespaced: bool, prefix: str) -> dict[str, JSONValue]:
    verbs = set(kind.res.verbs)
    item: dict[str, JSONValue] = {}
    if "list" in verbs:
        item["get"] = kind.operation(
            "list", "list", namespaced, params=LIST_PARAMS, returns=kind.list_schema
        )
    if "create" in verbs:
        item["post"] = kind.operation(
            "post", "create", namespaced,
            params=[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION], body=kind.schema,
        )  # fmt: skip
    if "deletecollection" in verbs:
        item["delete"] = kind.operation(
            "deletecollection", "deleteCollection", namespaced,
            params=[*LIST_PARAMS, DRY_RUN], body=META + "DeleteOptions", returns=META + "Status",
        )  # fmt: skip
    item["parameters"] = [NAMESPACE, PRETTY] if namespaced else [PRETTY]
    return item


def _item_path(kind: _Kind, namespaced: bool, suffix: str = "") -> dict[str, JSONValue]:
    verbs = set(kind.res.verbs)
    what = "status of " if suffix else ""
    item: dict[str, JSONValue] = {}
    if "get" in verbs:
        item["get"] = kind.operation(
            "get", "read", namespaced, suffix=suffix, description=f"read {what}the specified"
        )
    if "update" in verbs:
        item["put"] = kind.operation(
            "put", "replace", namespaced, suffix=suffix,
            params=[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION], body=kind.schema,
        )  # fmt: skip
    if "patch" in verbs:
        item["patch"] = kind.operation(
            "patch", "patch", namespaced, suffix=suffix,
            params=[DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION, FORCE],
            body=META + "Patch", body_types=kind.patch_types,
        )  # fmt: skip
    if "delete" in verbs and not suffix:
        item["delete"] = kind.operation(
            "delete", "delete", namespaced, params=[DRY_RUN], body=META + "DeleteOptions"
        )
    name = _path_param("name", f"name of the {kind.res.kind}")
    item["parameters"] = [name, NAMESPACE, PRETTY] if namespaced else [name, PRETTY]
    return item


def _paths(kinds: Sequence[_Kind], base: str) -> dict[str, JSONValue]:
    paths: dict[str, JSONValue] = {}
    for kind in kinds:
        res = kind.res
        if res.namespaced:
            collection = f"{base}/namespaces/{{namespace}}/{res.plural}"
            if "list" in res.verbs:
                cluster_wide = _collection_path(kind, False, base)
                cluster_wide = {"get": cluster_wide["get"], "parameters": [PRETTY]}
                cluster_wide["get"]["operationId"] = kind.op_id("list", False, "ForAllNamespaces")
                paths[f"{base}/{res.plural}"] = cluster_wide
        else:
            collection = f"{base}/{res.plural}"
        paths[collection] = _collection_path(kind, res.namespaced, base)
        item = _item_path(kind, res.namespaced)
        if len(item) > 1:  # some operation besides the path parameters
            paths[f"{collection}/{{name}}"] = item
        if "status" in res.subresources and len(item) > 1:
            paths[f"{collection}/{{name}}/status"] = _item_path(kind, res.namespaced, "Status")
    return dict(sorted(paths.items()))


# ---------------------------------------------------------------------- service


class OpenAPIV3:
    """The OpenAPI v3 documents of a resource set; built lazily, cached as bytes."""

    def __init__(
        self, resources: Iterable[OpenAPIResource], custom: CustomKinds | None = None
    ) -> None:
        self._custom = custom
        self._by_gv: dict[str, list[OpenAPIResource]] = {}
        for res in resources:
            self._by_gv.setdefault(gv_path(res.group, res.version), []).append(res)
        self._docs: dict[str, CachedDocument] = {}
        self._index: CachedDocument | None = None
        self._swagger: CachedDocument | None = None

    @property
    def group_versions(self) -> list[str]:
        """The document paths served (``api/v1``, ``apis/apps/v1``, ...), sorted."""
        return sorted(self._by_gv)

    def document(self, path: str) -> CachedDocument | None:
        """The document of ``api/v1`` / ``apis/<group>/<version>``, or None if unknown."""
        path = path.strip("/")
        if path not in self._by_gv:
            return None
        if path not in self._docs:
            self._docs[path] = CachedDocument.of(self._build(path))
        return self._docs[path]

    def index(self) -> CachedDocument:
        """``/openapi/v3``: every group-version with its hash-pinned URL."""
        if self._index is None:
            paths = {}
            for gv in self.group_versions:
                doc = self.document(gv)
                assert doc is not None
                paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={doc.hash}"}
            self._index = CachedDocument.of({"paths": paths})
        return self._index

    def swagger(self) -> CachedDocument:
        """``/openapi/v2`` (``proxy.openapi.swagger``): every group-version's
        components as definitions. Builds every document: run it beside the loop."""
        if self._swagger is None:
            docs = [self._build(gv) for gv in self.group_versions]
            self._swagger = swagger_document(docs, f"v{schema_version()}")
        return self._swagger

    def _build(self, path: str) -> dict[str, JSONValue]:
        kinds = []
        roots: list[str] = []
        extra: dict[str, JSONValue] = {}
        for res in sorted(self._by_gv[path], key=lambda r: r.plural):
            schema = definition_name(res.group, res.version, res.kind)
            custom = self._custom(res) if schema is None and self._custom else None
            if custom is not None:
                kinds.append(_Kind(res, custom.name, custom.list_name, custom.patch_types))
                extra.update(custom.components)
                roots += custom.roots
                continue
            if schema is None:
                continue  # a kind without schema: no path, no component
            list_schema = definition_name(res.group, res.version, res.kind + "List") or schema
            kinds.append(_Kind(res, schema, list_schema))
        roots += [k.schema for k in kinds] + [k.list_schema for k in kinds]
        roots += list(SHARED_SCHEMAS) if kinds else []
        return {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": f"v{schema_version()}"},
            "paths": _paths(kinds, "/" + path),
            "components": {
                "schemas": dict(sorted({**schema_closure(roots), **extra}.items())),
                "securitySchemes": {
                    "BearerToken": {
                        "type": "apiKey",
                        "description": "Bearer Token authentication",
                        "name": "authorization",
                        "in": "header",
                    }
                },
            },
        }

    def respond(
        self,
        path: str,
        *,
        query_hash: str | None,
        request_headers: Mapping[str, str],
        now: dt.datetime,
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) for ``GET /openapi/v3`` (``path`` ``""``) or a document.

        ``query_hash`` is the ``hash`` query parameter. Unknown path: 404 plain text.
        Stale hash: 301 with ``Location`` of the current URL. Matching hash: 200 (or
        304) with ``Cache-Control: public, immutable`` and an ``Expires`` a year away.
        """
        path = path.strip("/")
        doc = self.index() if not path else self.document(path)
        if doc is None:
            return 404, {"Content-Type": "text/plain; charset=utf-8"}, b"404 page not found\n"
        headers = {"Content-Type": "application/json", "ETag": doc.etag}
        if path and query_hash:
            if query_hash != doc.hash:
                location = f"/openapi/v3/{path}?hash={doc.hash}"
                return 301, {"Location": location}, b""
            headers["Vary"] = "Accept"
            headers["Cache-Control"] = "public, immutable"
            headers["Expires"] = format_datetime(now + dt.timedelta(days=365), usegmt=True)
        if doc.not_modified(request_headers):
            return 304, {k: v for k, v in headers.items() if k != "Content-Type"}, b""
        return 200, headers, doc.body
