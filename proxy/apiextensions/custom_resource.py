"""What one CRD version serves, read from the CRD object (apiextensions-apiserver's
``crdHandler.getOrCreateServingInfo``):

- :func:`served_versions`: a ``ResourceInfo`` (discovery, routes, storage keys) and a
  :class:`CustomResourceVersion` (schema, subresources, printer columns, selectable
  fields, deprecation) for each served version, from the CRD's *accepted* names;
- :func:`table_printer`: the server-side Table of ``additionalPrinterColumns`` (NAME
  first; ``Age`` when the version lists none), each cell read by its JSONPath;
- :func:`attrs_func`: labels and the selectable fields (``metadata.name``,
  ``metadata.namespace`` and the version's ``selectableFields``) for field selectors;
- :func:`strategy`: the CR's validation (ObjectMeta, then ``schema_hooks``: defaulting,
  pruning, the schema and its CEL rules), as ``customResourceStrategy`` runs it.

Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from proxy.apiextensions import schema_hooks
from proxy.apimachinery.api_resource import SubresourceInfo
from proxy.apimachinery.validation import names
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.object_meta import (
    validate_object_meta,
    validate_object_meta_update,
)
from proxy.openapi import schemas
from proxy.printers.columns import NAME, Column, TablePrinter
from proxy.printers.duration import since
from proxy.registry.resources import ResourceInfo
from proxy.registry.scale import SCALE
from proxy.registry.validation.strategy import KindStrategy
from storage.interfaces import AttrsFunc

__all__ = [
    "CR_VERBS",
    "CustomResourceVersion",
    "attrs_func",
    "jsonpath_get",
    "served_versions",
    "storage_version",
    "strategy",
    "table_printer",
    "terminating",
    "version_priority",
]

JSON = Any

CR_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

# a CR's scale subresource answers autoscaling/v1 Scale (status: the CR's own kind)
_SCALE_FACTS = (("scale", SubresourceInfo((SCALE.group, SCALE.version, SCALE.kind))),)


@dataclass(frozen=True)
class CustomResourceVersion:
    """One served version of a CRD, as the handlers need it."""

    crd_name: str
    crd_uid: str
    group: str
    version: str
    kind: str
    plural: str
    storage_version: str
    schema: JSON | None = None
    deprecated: bool = False
    deprecation_warning: str | None = None
    printer_columns: tuple[JSON, ...] = ()
    status: bool = False
    scale: JSON | None = None
    selectable_fields: tuple[str, ...] = ()
    terminating: bool = False
    # every served version's name, so a write's apiVersion may be any of them
    served: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def warning(self) -> str | None:
        """The ``Warning`` header text of a deprecated version (upstream's default text)."""
        if not self.deprecated:
            return None
        if self.deprecation_warning is not None:
            return self.deprecation_warning
        text = f"{self.group}/{self.version} {self.kind} is deprecated"
        if self.storage_version != self.version:
            # upstream names the storage version as the one to use when it is served
            text += f"; use {self.group}/{self.storage_version} {self.kind}"
        return text


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key of Kubernetes version names (``version.CompareKubeAwareVersionStrings``):
    GA before beta before alpha, higher numbers first, other names last by name."""
    m = _VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, "")


def storage_version(crd: JSON) -> str:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("storage"):
            return str(v.get("name"))
    return ""


def _names(crd: JSON) -> JSON:
    """The names served: the accepted ones (status), as upstream serves."""
    accepted = (crd.get("status") or {}).get("acceptedNames") or {}
    return accepted if accepted.get("plural") else (crd.get("spec") or {}).get("names") or {}


def terminating(crd: JSON) -> bool:
    """Whether ``crd``'s Terminating condition is True (it is being deleted)."""
    return any(
        c.get("type") == "Terminating" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or []
    )


def served_versions(crd: JSON) -> list[tuple[ResourceInfo, CustomResourceVersion]]:
    """Each served version of ``crd``, most preferred first (kube-aware version order)."""
    spec = crd.get("spec") or {}
    meta = crd.get("metadata") or {}
    names_ = _names(crd)
    group, plural, kind = str(spec.get("group")), str(names_.get("plural")), str(names_["kind"])
    storage = storage_version(crd)
    versions = [v for v in spec.get("versions") or [] if v.get("served")]
    versions.sort(key=lambda v: version_priority(str(v.get("name"))))
    served = tuple(str(v.get("name")) for v in versions)
    out = []
    for v in versions:
        subs = v.get("subresources") or {}
        subresources = tuple(s for s in ("scale", "status") if s in subs)
        info = ResourceInfo(
            group=group,
            version=str(v["name"]),
            kind=kind,
            plural=plural,
            namespaced=spec.get("scope") == "Namespaced",
            verbs=CR_VERBS,
            subresources=subresources,
            subresource_facts=_SCALE_FACTS if "scale" in subresources else (),
            short_names=tuple(names_.get("shortNames") or ()),
            categories=tuple(names_.get("categories") or ()),
            singular_name=str(names_.get("singular") or ""),
        )
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        cr = CustomResourceVersion(
            crd_name=str(meta.get("name")),
            crd_uid=str(meta.get("uid") or ""),
            group=group,
            version=str(v["name"]),
            kind=kind,
            plural=plural,
            storage_version=storage,
            schema=schema,
            deprecated=bool(v.get("deprecated")),
            deprecation_warning=v.get("deprecationWarning"),
            printer_columns=tuple(v.get("additionalPrinterColumns") or ()),
            status="status" in subs,
            scale=subs.get("scale"),
            selectable_fields=tuple(
                str(f.get("jsonPath", "")).lstrip(".") for f in v.get("selectableFields") or ()
            ),
            terminating=terminating(crd),
            served=served,
        )
        out.append((info, cr))
    return out


# -------------------------------------------------------------- request validation


def _with_object_fields(schema: JSON) -> JSON:
    """``schema`` (an object's) with apiVersion, kind and metadata declared, as every
    custom resource and embedded resource implicitly has them."""
    props = dict(schema.get("properties") or {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = {"$ref": schemas.object_meta_ref()}
    return {**schema, "properties": props}


def _embedded(schema: JSON) -> JSON:
    out = dict(schema)
    if out.get("x-kubernetes-embedded-resource") and "properties" in out:
        out = _with_object_fields(out)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _embedded(v) for k, v in out["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(out.get(key), dict):
            out[key] = _embedded(out[key])
    return out


def request_schema(cr: CustomResourceVersion) -> JSON | None:
    """The schema the request-body checks use (unknown fields, JSON types): the
    version's ``openAPIV3Schema`` with the object fields of the resource and of its
    embedded resources declared. None without a schema."""
    if not isinstance(cr.schema, dict):
        return None
    return _with_object_fields(_embedded(cr.schema))


def _has_default(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "default" in schema or any(_has_default(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_has_default(v) for v in schema)
    return False


def read_defaults(cr: CustomResourceVersion) -> Callable[[JSON], None] | None:
    """What reads from storage apply (the version's schema defaults), None without any
    default in the schema (reads then serve the stored bytes as they are)."""
    schema = cr.schema
    if not _has_default(schema):
        return None
    return lambda obj: schema_hooks.apply_defaults(obj, schema)


# ----------------------------------------------------------------------- JSONPath

_PATH_PART = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]")


def jsonpath_get(obj: JSON, path: str) -> tuple[JSON, bool]:
    """(value, found) of a simple JSONPath (``.spec.a[0].b``, ``.metadata.labels['x']``),
    the subset printer columns, scale paths and selectable fields use."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    cur = obj
    pos = 0
    while pos < len(path):
        m = _PATH_PART.match(path, pos)
        if m is None:
            return None, False
        pos = m.end()
        key = m.group(1) if m.group(1) is not None else m.group(3)
        if key is not None:
            if not isinstance(cur, Mapping) or key not in cur:
                return None, False
            cur = cur[key]
        else:
            i = int(m.group(2))
            if not isinstance(cur, list) or i >= len(cur):
                return None, False
            cur = cur[i]
    return cur, True


def jsonpath_set(obj: JSON, path: str, value: JSON) -> None:
    """Set a dotted path (``.spec.replicas``), creating the objects on the way."""
    parts = [p for p in path.strip().lstrip(".").split(".") if p]
    cur = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = cur[part] = {}
        cur = nxt
    cur[parts[-1]] = value


# ----------------------------------------------------------------------- printing

_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def table_printer(cr: CustomResourceVersion) -> TablePrinter:
    """NAME, then the version's printer columns (``Age`` when it lists none)."""
    specs = cr.printer_columns or (_AGE,)
    columns = [NAME]
    for c in specs:
        description = c.get("description") or (
            f"Custom resource definition column (in JSONPath format): {c.get('jsonPath', '')}"
        )
        columns.append(
            Column(
                str(c.get("name", "")),
                type=str(c.get("type", "string")),
                format=str(c.get("format", "")),
                priority=int(c.get("priority") or 0),
                description=description,
            )
        )

    def print_row(obj: dict[str, JSON], now: dt.datetime) -> tuple[list[JSON], list[JSON]]:
        meta = obj.get("metadata") or {}
        cells: list[JSON] = [meta.get("name", "")]
        for c in specs:
            value, found = jsonpath_get(obj, str(c.get("jsonPath", "")))
            if not found or value is None:
                cells.append(None)
            elif c.get("type") == "date":
                cells.append(since(value, now) if isinstance(value, str) else None)
            elif isinstance(value, (dict, list)):
                cells.append(value)
            else:
                cells.append(value)
        return cells, []

    return TablePrinter(tuple(columns), print_row)


# ------------------------------------------------------------------ field selectors


def _render(value: JSON) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def attrs_func(cr: CustomResourceVersion) -> AttrsFunc:
    """(labels, fields) of a CR: metadata.name, metadata.namespace and the version's
    selectableFields, every value a string (a missing field reads as empty)."""
    paths = ("metadata.name", "metadata.namespace", *cr.selectable_fields)

    def get_attrs(obj: JSON) -> tuple[Mapping[str, str], Mapping[str, str]]:
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        fields = {p: _render(jsonpath_get(obj, "." + p)[0]) for p in paths}
        return (labels if isinstance(labels, dict) else {}), fields

    return get_attrs


# ----------------------------------------------------------------------- strategy


def _meta(obj: JSON) -> JSON:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _version(
    obj: JSON, versions: Mapping[str, CustomResourceVersion]
) -> CustomResourceVersion | None:
    return versions.get(str(obj.get("apiVersion") or "").rpartition("/")[2])


def _schema_work(
    obj: JSON, old: JSON | None, versions: Mapping[str, CustomResourceVersion]
) -> ErrorList:
    """Prune, default and validate against the schema of the version the object is in."""
    cr = _version(obj, versions)
    if cr is None:
        return []
    schema_hooks.prune(obj, cr.schema)
    schema_hooks.apply_defaults(obj, cr.schema)
    return schema_hooks.validate_custom_resource(obj, old, cr.schema)


def strategy(versions: Mapping[str, CustomResourceVersion], namespaced: bool) -> KindStrategy:
    """The CR's validation: ObjectMeta (names are DNS subdomains), then the schema of
    the object's version (``versions`` by name)."""

    def validate(obj: JSON) -> ErrorList:
        errs = validate_object_meta(_meta(obj), namespaced, names.name_is_dns_subdomain)
        return errs + _schema_work(obj, None, versions)

    def validate_update(new: JSON, old: JSON) -> ErrorList:
        errs = validate_object_meta_update(_meta(new), _meta(old))
        return errs + _schema_work(new, old, versions)

    def prepare_create(obj: JSON) -> None:
        cr = _version(obj, versions)
        if cr is not None and cr.status:  # status is written through /status only
            obj.pop("status", None)

    # types are the schema validation's, so a type error comes with the rules' "not
    # checked" cause (hasBlockingErr), as upstream's CR strategy reports them
    return KindStrategy(
        validate, validate_update, prepare_create=prepare_create, validates_types=True
    )
