"""Validation of a CustomResourceDefinition object (``ValidateCustomResourceDefinition``
and ``ValidateCustomResourceDefinitionUpdate`` of
``pkg/apis/apiextensions/validation``): the name, group, names, scope, versions,
conversion, subresources, printer columns, selectable fields, the schemas
(:mod:`.structural_validation`) and ``status.storedVersions``.

The CRD is taken as the v1 JSON after defaulting (``singular``, ``listKind`` and
``conversion.strategy`` set when absent). Like upstream's v1-to-internal conversion,
a schema, subresources or printer columns that every version has identically are
reported under ``spec.validation`` / ``spec.subresources`` /
``spec.additionalPrinterColumns``, else under ``spec.versions[i]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy.apiextensions.schema import names_validation
from proxy.apiextensions.schema.structural import JSON, mapping
from proxy.apiextensions.schema.structural_validation import validate_schema
from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList

__all__ = ["validate_crd"]


def validate_crd(crd: JSON, old_crd: JSON | None) -> ErrorList:
    """Every error of ``crd`` (``old_crd`` on update), with upstream's paths."""
    errs: ErrorList = []
    if not isinstance(crd, Mapping):
        return [field.required("spec")]
    spec = mapping(crd.get("spec"))
    meta = mapping(crd.get("metadata"))
    names = mapping(spec.get("names"))
    group = str(spec.get("group") or "")
    expected = f"{names.get('plural') or ''}.{group}"
    name = str(meta.get("name") or "")
    name_errs = names_validation.dns_subdomain(name)
    if name_errs:
        errs.append(field.invalid("metadata.name", name, name_errs))
    if old_crd is None and name != expected:
        # on update the immutable group and plural say it instead
        errs.append(
            field.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    errs.extend(_validate_spec(spec, crd))
    errs.extend(_validate_status(crd, old_crd))
    if isinstance(old_crd, Mapping):
        errs.extend(names_validation.validate_update(crd, old_crd))
    return errs


def _validate_spec(spec: Mapping[str, Any], crd: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    group = spec.get("group")
    if not group:
        errs.append(field.required("spec.group"))
    else:
        detail = names_validation.dns_subdomain(str(group))
        if detail:
            errs.append(field.invalid("spec.group", group, detail))
        elif len(str(group).split(".")) < 2:
            errs.append(
                field.invalid("spec.group", group, "should be a domain with at least one dot")
            )
    scope = spec.get("scope")
    if not scope:
        errs.append(field.required("spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errs.append(field.not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    errs.extend(names_validation.validate_names(spec.get("names"), "spec.names"))
    errs.extend(_validate_versions(spec))
    errs.extend(names_validation.validate_conversion(spec.get("conversion"), "spec.conversion"))
    if spec.get("preserveUnknownFields") is True:
        errs.append(
            field.invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set "
                "x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema instead",
            )
        )
    return errs


def _versions(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    versions = spec.get("versions")
    return [v for v in versions if isinstance(v, Mapping)] if isinstance(versions, list) else []


def _shared(versions: list[Mapping[str, Any]], key: str) -> bool:
    """Whether every version has the same ``key`` (then upstream lifts it to spec)."""
    values = [v.get(key) for v in versions]
    return bool(values) and all(v == values[0] for v in values) and values[0] is not None


def _validate_versions(spec: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    versions = _versions(spec)
    seen: set[str] = set()
    storage = 0
    shared_schema = _shared(versions, "schema")
    for i, version in enumerate(versions):
        at = f"spec.versions[{i}]"
        name = str(version.get("name") or "")
        detail = names_validation.dns1035(name)
        if detail:
            errs.append(field.invalid(f"{at}.name", name, detail))
        if version.get("storage"):
            storage += 1
        if version.get("deprecationWarning") is not None and not version.get("deprecated"):
            errs.append(
                field.invalid(
                    f"{at}.deprecationWarning",
                    version["deprecationWarning"],
                    "can only be set for deprecated versions",
                )
            )
        elif (
            isinstance(version.get("deprecationWarning"), str)
            and len(version["deprecationWarning"]) > 256
        ):
            errs.append(field.too_long(f"{at}.deprecationWarning", 256))
        if not _has_schema(version):
            errs.append(field.required(f"{at}.schema.openAPIV3Schema", "schemas are required"))
        elif not shared_schema:
            errs.extend(_validate_version_schema(version, f"{at}.schema.openAPIV3Schema"))
        errs.extend(names_validation.validate_version_extras(version, at, versions))
        seen.add(name)
    if shared_schema and _has_schema(versions[0]):  # else: required, reported above
        errs.extend(_validate_version_schema(versions[0], "spec.validation.openAPIV3Schema"))
    if len(seen) != len(versions) or storage != 1:
        shown = names_validation.versions_literal(versions)
        if len(seen) != len(versions):
            errs.append(field.invalid("spec.versions", shown, "must contain unique version names"))
        if storage != 1:
            errs.append(
                field.invalid(
                    "spec.versions",
                    shown,
                    "must have exactly one version marked as storage version",
                )
            )
    return errs


def _has_schema(version: Mapping[str, Any]) -> bool:
    schema = version.get("schema")
    return isinstance(schema, Mapping) and isinstance(schema.get("openAPIV3Schema"), Mapping)


def _validate_version_schema(version: Mapping[str, Any], path: str) -> ErrorList:
    subresources = version.get("subresources")
    status = isinstance(subresources, Mapping) and subresources.get("status") is not None
    return validate_schema(version["schema"]["openAPIV3Schema"], path, status)


def _validate_status(crd: Mapping[str, Any], old_crd: JSON | None) -> ErrorList:
    """``status.storedVersions`` as the strategy leaves it before validation: on create
    the (first) storage version; on update the stored versions plus the storage
    version. Then every storage version must be stored and every stored version stay
    in spec (``ValidateCustomResourceDefinitionStoredVersions``)."""
    versions = _versions(mapping(crd.get("spec")))
    storage = [str(v.get("name")) for v in versions if v.get("storage")]
    stored = mapping(crd.get("status")).get("storedVersions")
    if old_crd is None or not isinstance(stored, list):
        stored = storage[:1]
    elif storage and storage[0] not in stored:
        stored = [*stored, storage[0]]
    shown = names_validation.string_slice(stored or None)
    if not stored:
        return [
            field.invalid("status.storedVersions", shown, "must have at least one stored version")
        ]
    errs = [
        field.invalid("status.storedVersions", shown, f"must have the storage version {name}")
        for name in storage
        if name not in stored
    ]
    names = {str(v.get("name")) for v in versions}
    errs.extend(
        field.invalid(f"status.storedVersions[{i}]", name, "must appear in spec.versions")
        for i, name in enumerate(stored)
        if name not in names
    )
    return errs
