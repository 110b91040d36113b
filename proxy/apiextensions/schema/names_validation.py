"""The parts of a CRD besides its schemas: names, conversion, per-version
subresources, printer columns and selectable fields, and what an update may not
change (``pkg/apis/apiextensions/validation``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy.admission.webhook.validation import validate_client_config
from proxy.apiextensions.schema.rules import parse_field_path
from proxy.apiextensions.schema.structural import mapping
from proxy.apimachinery.validation import field, names
from proxy.apimachinery.validation.field import ErrorList, GoLiteral

__all__ = [
    "dns1035",
    "dns_subdomain",
    "string_slice",
    "validate_conversion",
    "validate_names",
    "validate_update",
    "validate_version_extras",
    "versions_literal",
]

_COLUMN_TYPES = "boolean,date,integer,number,string"
_COLUMN_FORMATS = "byte,date,date-time,double,float,int32,int64,password"
_MAX_SELECTABLE_FIELDS = 8


def dns_subdomain(value: str) -> str:
    return ",".join(names.is_dns1123_subdomain(value))


def dns1035(value: str) -> str:
    return ",".join(names.is_dns1035_label(value))


def string_slice(values: Any) -> GoLiteral:
    if values is None:
        return GoLiteral("[]string(nil)")
    return GoLiteral("[]string{" + ", ".join(field.go_quote(str(v)) for v in values) + "}")


def validate_names(value: Any, path: str) -> ErrorList:
    """``ValidateCustomResourceDefinitionNames``."""
    errs: ErrorList = []
    crd_names = value if isinstance(value, Mapping) else {}
    for key in ("plural", "singular"):
        name = str(crd_names.get(key) or "")
        if not name:
            errs.append(field.required(field.child(path, key)))
        elif detail := dns1035(name):
            errs.append(field.invalid(field.child(path, key), name, detail))
    for key in ("kind", "listKind"):
        name = str(crd_names.get(key) or "")
        if not name:
            errs.append(field.required(field.child(path, key)))
        elif detail := dns1035(name.lower()):
            errs.append(
                field.invalid(
                    field.child(path, key),
                    name,
                    "may have mixed case, but should otherwise match: " + detail,
                )
            )
    for i, short in enumerate(crd_names.get("shortNames") or ()):
        if detail := dns1035(str(short)):
            errs.append(field.invalid(f"{path}.shortNames[{i}]", short, detail))
    kind = crd_names.get("kind")
    if kind and kind == crd_names.get("listKind"):
        errs.append(
            field.invalid(
                field.child(path, "listKind"), kind, "kind and listKind may not be the same"
            )
        )
    for i, category in enumerate(crd_names.get("categories") or ()):
        if detail := dns1035(str(category)):
            errs.append(field.invalid(f"{path}.categories[{i}]", category, detail))
    return errs


def validate_conversion(value: Any, path: str) -> ErrorList:
    """``validateCustomResourceConversion`` (paths use the internal field names:
    ``webhookClientConfig``, ``conversionReviewVersions``)."""
    errs: ErrorList = []
    if not isinstance(value, Mapping):
        return errs
    strategy = value.get("strategy")
    webhook = mapping(value.get("webhook"))
    client = webhook.get("clientConfig")
    review = webhook.get("conversionReviewVersions")
    if strategy not in ("None", "Webhook"):
        errs.append(
            field.not_supported(field.child(path, "strategy"), strategy, ["None", "Webhook"])
        )
    if strategy == "Webhook":
        if not isinstance(client, Mapping):
            errs.append(
                field.required(
                    field.child(path, "webhookClientConfig"),
                    "required when strategy is set to Webhook",
                )
            )
        else:
            errs.extend(_client_config(client, field.child(path, "webhookClientConfig")))
        if not review:
            errs.append(field.required(field.child(path, "conversionReviewVersions")))
        elif not any(v in ("v1", "v1beta1") for v in review):
            errs.append(
                field.invalid(
                    field.child(path, "conversionReviewVersions"),
                    string_slice(review),
                    "must include at least one of v1, v1beta1",
                )
            )
    else:
        if client is not None:
            errs.append(
                field.forbidden(
                    field.child(path, "webhookClientConfig"),
                    "should not be set when strategy is not set to Webhook",
                )
            )
        if review is not None:
            errs.append(
                field.forbidden(
                    field.child(path, "conversionReviewVersions"),
                    "should not be set when strategy is not set to Webhook",
                )
            )
    return errs


def _client_config(client: Mapping[str, Any], path: str) -> ErrorList:
    """Upstream checks a conversion webhook's client config as an admission webhook's."""
    return validate_client_config(dict(client), path)


def _shared(versions: list[Mapping[str, Any]], key: str) -> bool:
    values = [v.get(key) for v in versions]
    return bool(values) and all(v == values[0] for v in values) and values[0] is not None


def validate_version_extras(
    version: Mapping[str, Any], at: str, versions: list[Mapping[str, Any]]
) -> ErrorList:
    """Subresources, printer columns and selectable fields of one version, reported at
    spec level (once, for the first version) when every version has the same."""
    errs: ErrorList = []
    first = version is versions[0]
    for key, check in (
        ("subresources", _subresources),
        ("additionalPrinterColumns", _printer_columns),
    ):
        value = version.get(key)
        if value is None:
            continue
        if _shared(versions, key):
            if first:
                errs.extend(check(value, f"spec.{key}"))
        else:
            errs.extend(check(value, f"{at}.{key}"))
    selectable = version.get("selectableFields")
    if selectable is not None:
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        if _shared(versions, "selectableFields"):
            if first:
                errs.extend(_selectable_fields(selectable, schema, "spec.selectableFields"))
        else:
            errs.extend(_selectable_fields(selectable, schema, f"{at}.selectableFields"))
    return errs


def _simple_json_path(value: str, path: str) -> ErrorList:
    if not value:
        return [field.invalid(path, value, "must not be empty")]
    if not value.startswith("."):
        return [field.invalid(path, value, "must be a simple json path starting with .")]
    return []


def _subresources(value: Any, path: str) -> ErrorList:
    errs: ErrorList = []
    scale = value.get("scale") if isinstance(value, Mapping) else None
    if not isinstance(scale, Mapping):
        return errs
    for key, prefixes, detail in (
        ("specReplicasPath", (".spec.",), "should be a json path under .spec"),
        ("statusReplicasPath", (".status.",), "should be a json path under .status"),
        (
            "labelSelectorPath",
            (".spec.", ".status."),
            "should be a json path under either .spec or .status",
        ),
    ):
        at = f"{path}.scale.{key}"
        text = scale.get(key)
        if not text:
            if key != "labelSelectorPath":
                errs.append(field.required(at))
            continue
        found = _simple_json_path(str(text), at)
        if found:
            errs.extend(found)
        elif not str(text).startswith(prefixes):
            errs.append(field.invalid(at, text, detail))
    return errs


def _printer_columns(value: Any, path: str) -> ErrorList:
    errs: ErrorList = []
    for i, col in enumerate(value if isinstance(value, list) else ()):
        if not isinstance(col, Mapping):
            continue
        at = f"{path}[{i}]"
        if not col.get("name"):
            errs.append(field.required(f"{at}.name"))
        kind = col.get("type")
        if not kind:
            errs.append(field.required(f"{at}.type", f"must be one of {_COLUMN_TYPES}"))
        elif kind not in _COLUMN_TYPES.split(","):
            errs.append(field.invalid(f"{at}.type", kind, f"must be one of {_COLUMN_TYPES}"))
        fmt = col.get("format")
        if fmt and fmt not in _COLUMN_FORMATS.split(","):
            errs.append(field.invalid(f"{at}.format", fmt, f"must be one of {_COLUMN_FORMATS}"))
        json_path = col.get("jsonPath")
        if not json_path:
            errs.append(field.required(f"{at}.JSONPath"))
        else:
            errs.extend(_simple_json_path(str(json_path), f"{at}.JSONPath"))
    return errs


def _selectable_fields(value: Any, schema: Mapping[str, Any], path: str) -> ErrorList:
    errs: ErrorList = []
    unique: set[str] = set()
    for i, item in enumerate(value if isinstance(value, list) else ()):
        at = f"{path}[{i}].jsonPath"
        json_path = item.get("jsonPath") if isinstance(item, Mapping) else None
        if not json_path:
            errs.append(field.required(at))
            continue
        resolved = (
            f"expected [ or . but got: {json_path}"
            if "[" in json_path
            else parse_field_path(json_path, schema)
        )
        if isinstance(resolved, str):
            errs.append(field.invalid(at, json_path, f"is an invalid path: {resolved}"))
            continue
        normalized, found = resolved
        if normalized.split(".")[0] == "metadata":
            errs.append(field.invalid(at, json_path, "must not point to fields in metadata"))
        if found.get("type") not in ("string", "boolean", "integer"):
            errs.append(
                field.invalid(
                    at,
                    json_path,
                    "must point to a field of type string, "
                    "boolean or integer. Enum string fields and strings with "
                    "formats are allowed.",
                )
            )
        if normalized in unique:
            errs.append(field.duplicate(at, json_path))
        unique.add(normalized)
    if len(unique) > _MAX_SELECTABLE_FIELDS:
        errs.append(field.too_many(path, len(unique), _MAX_SELECTABLE_FIELDS))
    return errs


def versions_literal(versions: list[Mapping[str, Any]]) -> GoLiteral:
    """``%#v`` of the internal ``[]apiextensions.CustomResourceDefinitionVersion`` (a
    schema, subresources or columns every version shares are nil there: upstream lifts
    them to the spec)."""
    items = []
    lifted = {
        k: _shared(versions, k) for k in ("schema", "subresources", "additionalPrinterColumns")
    }
    for v in versions:
        warning = v.get("deprecationWarning")
        schema = "nil" if lifted["schema"] or v.get("schema") is None else "0xc000a1b2c0"
        subs = "nil" if lifted["subresources"] or v.get("subresources") is None else "0xc000a1b2d0"
        columns = (
            "[]apiextensions.CustomResourceColumnDefinition(nil)"
            if lifted["additionalPrinterColumns"] or not v.get("additionalPrinterColumns")
            else "[]apiextensions.CustomResourceColumnDefinition{...}"
        )
        fields = (
            "[]apiextensions.SelectableField(nil)"
            if not v.get("selectableFields")
            else "[]apiextensions.SelectableField{...}"
        )
        items.append(
            "apiextensions.CustomResourceDefinitionVersion{"
            f"Name:{field.go_quote(str(v.get('name') or ''))}, "
            f"Served:{_go_bool(v.get('served'))}, Storage:{_go_bool(v.get('storage'))}, "
            f"Deprecated:{_go_bool(v.get('deprecated'))}, "
            f"DeprecationWarning:{_string_pointer(warning)}, "
            f"Schema:(*apiextensions.CustomResourceValidation)({schema}), "
            f"Subresources:(*apiextensions.CustomResourceSubresources)({subs}), "
            f"AdditionalPrinterColumns:{columns}, SelectableFields:{fields}}}"
        )
    return GoLiteral("[]apiextensions.CustomResourceDefinitionVersion{" + ", ".join(items) + "}")


def _string_pointer(value: Any) -> str:
    return "(*string)(nil)" if value is None else "(*string)(0xc000a1b2e0)"


def _go_bool(value: Any) -> str:
    return "true" if value is True else "false"


def validate_update(crd: Mapping[str, Any], old_crd: Mapping[str, Any]) -> ErrorList:
    """What ``ValidateCustomResourceDefinitionUpdate`` adds: group and plural never
    change (they name the storage); scope and kind not once the CRD is Established."""
    spec, old_spec = mapping(crd.get("spec")), mapping(old_crd.get("spec"))
    pairs = [
        ("spec.group", spec.get("group"), old_spec.get("group")),
        (
            "spec.names.plural",
            mapping(spec.get("names")).get("plural"),
            mapping(old_spec.get("names")).get("plural"),
        ),
    ]
    if _established(old_crd):
        pairs[1:1] = [
            ("spec.scope", spec.get("scope"), old_spec.get("scope")),
            (
                "spec.names.kind",
                mapping(spec.get("names")).get("kind"),
                mapping(old_spec.get("names")).get("kind"),
            ),
        ]
    return [
        field.invalid(path, new, "field is immutable") for path, new, old in pairs if new != old
    ]


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = mapping(crd.get("status")).get("conditions")
    return any(
        isinstance(c, Mapping) and c.get("type") == "Established" and c.get("status") == "True"
        for c in (conditions if isinstance(conditions, list) else ())
    )
