"""Request-body validation of writes: the ``fieldValidation`` mode (Strict | Warn |
Ignore, default Warn) with the checks of ``field_validation``, and the schema's checks
of ``schema``, with the kind's schema from ``proxy.openapi.schemas``.

- create/update: Strict with unknown or duplicate fields → 400 BadRequest
  (``Pod in version "v1" cannot be handled as a Pod: strict decoding error: ...``);
- patch: Strict with unknown fields in the result → 422 Invalid on ``patch``;
- Warn: unknown fields dropped, each reported in a ``Warning: 299 - "..."`` header;
- Ignore: unknown fields dropped silently;
- wrong JSON types (and, for kinds without validation of their own, missing required
  fields) → 422 Invalid with one cause per field;
- an unsupported ``fieldValidation`` value → 422 Invalid on ``<Kind>Options``.
"""

from __future__ import annotations

from typing import Any

from proxy import apierrors
from proxy.registry.resources import ResourceInfo
from proxy.registry.validation import field_validation as fv
from proxy.registry.validation.schema import check_bytes, check_schema
from proxy.request.warning import warning_header
from proxy.request.write_options import Mode

__all__ = ["validate_patched", "validate_written"]

JSON = dict[str, Any]


def _warning_headers(warnings: list[str]) -> list[str]:
    return [warning_header(w) for w in warnings]


def validate_written(
    obj: JSON,
    raw: bytes | None,
    resource: ResourceInfo,
    mode: Mode,
    *,
    required: bool,
    types: bool = True,
) -> tuple[JSON, list[str]]:
    """A create/update body after field validation: (cleaned object, Warning headers).
    ``raw`` is the JSON body (duplicates are only visible there); None for YAML.
    ``required``: check the schema's required fields (for kinds whose validation does
    not word those errors itself); ``types``: check the schema's types (unless the kind's
    validation reports them with its other errors: a custom resource's)."""
    node = resource.request_schema()
    try:
        cleaned, warnings = fv.validate_fields(obj, node, mode, raw=raw)
    except fv.StrictDecodingError as e:
        raise apierrors.bad_request(e.for_create(resource.kind, resource.version)) from None
    check_bytes(cleaned, resource)
    if types:
        check_schema(cleaned, resource, required=required)
    return cleaned, _warning_headers(warnings)


def validate_patched(
    patched: JSON,
    patch: Any,
    resource: ResourceInfo,
    mode: Mode,
    *,
    required: bool,
    types: bool = True,
) -> tuple[JSON, list[str]]:
    """A patch result after field validation: (cleaned object, Warning headers);
    ``required`` and ``types`` as for :func:`validate_written`."""
    node = resource.request_schema()
    try:
        cleaned, warnings = fv.validate_fields(patched, node, mode)
    except fv.StrictDecodingError as e:
        # upstream: errors.NewInvalid(schema.GroupKind{}, "", ...): no kind, no name,
        # so the message starts ` "" is invalid` and kubectl says "The request is invalid"
        message, causes = e.for_patch(patch)
        details: JSON = {"causes": causes}
        raise apierrors.StatusError(
            apierrors.status_body(422, "Invalid", message, details)
        ) from None
    check_bytes(cleaned, resource)
    if types:
        check_schema(cleaned, resource, required=required)
    return cleaned, _warning_headers(warnings)
