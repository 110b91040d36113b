"""The CustomResourceDefinition's REST strategy (apiextensions-apiserver's
``registry/customresourcedefinition/strategy.go`` and the v1 defaults):

- defaults: ``spec.conversion.strategy: None``, ``names.singular`` (the kind in lower
  case) and ``names.listKind`` (``<Kind>List``), a webhook service's port 443;
- create: status reset to empty accepted names and ``storedVersions`` = the storage
  version; update: the storage version is added to ``storedVersions`` when new;
- validation of what serving depends on, with upstream's messages (name is
  ``<plural>.<group>``, group a domain, scope, names, exactly one storage version,
  storedVersions); the schema's structural rules come from ``schema_hooks``.
"""

from __future__ import annotations

from typing import Any

from proxy.apiextensions import schema_hooks
from proxy.registry.deletion import CRD_CLEANUP_FINALIZER
from proxy.registry.validation import field, names
from proxy.registry.validation.field import ErrorList, GoLiteral
from proxy.registry.validation.object_meta import validate_object_meta
from proxy.registry.validation.strategy import KindStrategy

__all__ = ["CLEANUP_FINALIZER", "STRATEGY", "set_defaults"]

JSON = dict[str, Any]

CLEANUP_FINALIZER = CRD_CLEANUP_FINALIZER


def set_defaults(crd: JSON) -> None:
    """The v1 defaults (``SetDefaults_CustomResourceDefinition`` and friends)."""
    spec = crd.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    conversion = spec.setdefault("conversion", {})
    if isinstance(conversion, dict):
        conversion.setdefault("strategy", "None")
        webhook = conversion.get("webhook")
        service = ((webhook or {}).get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)
    names_ = spec.get("names")
    if isinstance(names_, dict) and isinstance(names_.get("kind"), str):
        names_.setdefault("singular", names_["kind"].lower())
        names_.setdefault("listKind", names_["kind"] + "List")


def _storage(crd: JSON) -> str | None:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("storage"):
            return str(v.get("name"))
    return None


def prepare_create(crd: JSON) -> None:
    set_defaults(crd)
    storage = _storage(crd)
    crd["status"] = {
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": [storage] if storage else [],
    }


def prepare_update(new: JSON, old: JSON) -> None:
    set_defaults(new)
    storage = _storage(new)
    status = new.setdefault("status", {})
    stored = status.setdefault("storedVersions", [])
    if storage and storage not in stored:
        stored.append(storage)


# ----------------------------------------------------------------------- validation


def _version_literal(v: JSON) -> str:
    deprecation = v.get("deprecationWarning")
    return (
        "apiextensions.CustomResourceDefinitionVersion{"
        f"Name:{field.go_quote(str(v.get('name', '')))}, Served:{_b(v.get('served'))}, "
        f"Storage:{_b(v.get('storage'))}, Deprecated:{_b(v.get('deprecated'))}, "
        "DeprecationWarning:"
        + ("(*string)(nil)" if deprecation is None else "(*string)(0x0)")
        + ", Schema:(*apiextensions.CustomResourceValidation)(nil), "
        "Subresources:(*apiextensions.CustomResourceSubresources)(nil), "
        "AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), "
        "SelectableFields:[]apiextensions.SelectableField(nil)}"
    )


def _b(value: object) -> str:
    return "true" if value else "false"


def _validate_names(names_: JSON, path: str) -> ErrorList:
    errs: ErrorList = []
    for key in ("plural", "singular", "kind", "listKind"):
        value = names_.get(key)
        p = field.child(path, key)
        if not value:
            if key in ("plural", "kind"):
                errs.append(field.required(p))
            continue
        if key in ("plural", "singular"):
            for msg in names.is_dns1035_label(str(value)):
                errs.append(field.invalid(p, value, msg))
    for i, short in enumerate(names_.get("shortNames") or []):
        for msg in names.is_dns1035_label(str(short)):
            errs.append(field.invalid(field.index(field.child(path, "shortNames"), i), short, msg))
    return errs


def validate_crd(crd: JSON, old: JSON | None = None) -> ErrorList:
    """``ValidateCustomResourceDefinition`` (the parts serving needs), then the schema's."""
    meta = crd.get("metadata") or {}
    spec = crd.get("spec") or {}
    names_ = spec.get("names") or {}
    group = str(spec.get("group") or "")
    errs = validate_object_meta(meta, False, names.name_is_dns_subdomain)
    name = str(meta.get("name") or "")
    if name != f"{names_.get('plural', '')}.{group}":
        errs.append(
            field.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    if not group:
        errs.append(field.required("spec.group"))
    elif "." not in group:
        errs.append(field.invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(field.required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(field.not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    errs += _validate_names(names_, "spec.names")
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    literal = GoLiteral(
        "[]apiextensions.CustomResourceDefinitionVersion{"
        + ", ".join(_version_literal(v) for v in versions)
        + "}"
    )
    if not versions:
        errs.append(field.invalid("spec.versions", literal, "must have exactly one version"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        errs.append(
            field.invalid(
                "spec.versions", literal, "must have exactly one version marked as storage version"
            )
        )
    seen: set[str] = set()
    for i, v in enumerate(versions):
        vname = str(v.get("name") or "")
        p = field.child(field.index("spec.versions", i), "name")
        for msg in names.is_dns1035_label(vname):
            errs.append(field.invalid(p, vname, msg))
        if vname in seen:
            errs.append(field.duplicate(p, vname))
        seen.add(vname)
    stored = (crd.get("status") or {}).get("storedVersions")
    if not stored:
        errs.append(
            field.invalid(
                "status.storedVersions",
                GoLiteral("[]string(nil)"),
                "must have at least one stored version",
            )
        )
    if old is not None:
        old_spec = old.get("spec") or {}
        if old_spec.get("scope") and spec.get("scope") != old_spec.get("scope"):
            errs.append(field.invalid("spec.scope", spec.get("scope"), "field is immutable"))
    return errs + schema_hooks.validate_crd(crd, old)


STRATEGY = KindStrategy(
    validate=lambda crd: validate_crd(crd),
    validate_update=validate_crd,
    prepare_create=prepare_create,
    prepare_update=prepare_update,
)
