"""The options every write takes besides ``dryRun`` (upstream's ``metav1.CreateOptions``,
``UpdateOptions`` and ``PatchOptions`` and their validation): ``fieldValidation``
(Strict | Warn | Ignore, default Warn; an unsupported value is 422 Invalid on
``<Kind>Options.meta.k8s.io``), ``fieldManager`` (``ValidateFieldManager``), and a
patch's ``force`` (``ValidatePatchOptions``: only for apply, where ``fieldManager`` is
required)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from proxy import apierrors
from proxy.apimachinery.validation import field

__all__ = [
    "APPLY_PATCH",
    "FIELD_VALIDATION_MODES",
    "FieldValidationOptionError",
    "Mode",
    "check_field_manager",
    "check_patch_options",
    "field_mode",
    "force_of",
    "parse_field_validation",
]

APPLY_PATCH = "application/apply-patch+yaml"

Mode = Literal["Strict", "Warn", "Ignore"]
FIELD_VALIDATION_MODES: tuple[Mode, ...] = ("Strict", "Warn", "Ignore")


class FieldValidationOptionError(ValueError):
    """An unsupported ``fieldValidation`` value: 422 Invalid, as kube-apiserver answers."""

    status_code = 422
    reason = "Invalid"

    def __init__(self, value: str, options_kind: str) -> None:
        self.field = "fieldValidation"
        self.detail = (
            f'Unsupported value: "{value}": supported values: "", "Ignore", "Strict", "Warn"'
        )
        self.options_kind = options_kind
        super().__init__(f'{options_kind}.meta.k8s.io "" is invalid: {self.field}: {self.detail}')

    @property
    def causes(self) -> list[dict[str, str]]:
        return [{"reason": "FieldValueNotSupported", "message": self.detail, "field": self.field}]


def parse_field_validation(value: str | None, options_kind: str = "CreateOptions") -> Mode:
    """The ``fieldValidation`` query parameter; absent or empty means ``Warn``.

    ``options_kind`` names the options in the error (CreateOptions, UpdateOptions,
    PatchOptions).
    """
    if not value:
        return "Warn"
    if value in FIELD_VALIDATION_MODES:
        return value
    raise FieldValidationOptionError(value, options_kind)


def field_mode(query: Mapping[str, str], options_kind: str) -> Mode:
    """The request's fieldValidation mode (422 for an unsupported value); also checks
    ``fieldManager``, which every verb with a fieldValidation mode accepts."""
    check_field_manager(query, options_kind)
    try:
        return parse_field_validation(query.get("fieldValidation"), options_kind)
    except FieldValidationOptionError as e:
        details = {"group": "meta.k8s.io", "kind": e.options_kind, "causes": e.causes}
        raise apierrors.StatusError(
            apierrors.status_body(422, "Invalid", str(e), details)
        ) from None


FIELD_MANAGER_MAX_LENGTH = 128


def check_field_manager(query: Mapping[str, str], options_kind: str) -> None:
    """``fieldManager`` is accepted as sent (there are no managedFields here) but checked
    as upstream's ValidateFieldManager: at most 128 bytes, printable characters only;
    422 Invalid on ``<options_kind>.meta.k8s.io`` otherwise."""
    manager = query.get("fieldManager", "")
    errs: field.ErrorList = []
    if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        errs.append(field.too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    position = 0
    for char in manager:
        if not char.isprintable():
            detail = f"invalid character U+{ord(char):04X} (at position {position})"
            errs.append(field.invalid("fieldManager", manager, detail))
        position += len(char.encode())
    if errs:
        raise field.to_status(f"{options_kind}.meta.k8s.io", "", errs)


def check_patch_options(query: Mapping[str, str], patch_type: str) -> None:
    """Upstream's ``ValidatePatchOptions``: ``force`` only for apply, ``fieldManager``
    required for apply (422 Invalid on ``PatchOptions.meta.k8s.io``)."""
    errs: field.ErrorList = []
    if patch_type != APPLY_PATCH:
        if "force" in query:
            errs.append(field.forbidden("force", "may not be specified for non-apply patch"))
    elif not query.get("fieldManager"):
        errs.append(field.required("fieldManager", "is required for apply patch"))
    if errs:
        raise field.to_status("PatchOptions.meta.k8s.io", "", errs)


def force_of(query: Mapping[str, str]) -> bool:
    """``force`` as Go's strconv.ParseBool reads it (400 otherwise)."""
    raw = query.get("force", "false")
    if raw in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if raw in ("0", "f", "F", "false", "FALSE", "False", ""):
        return False
    raise apierrors.bad_request(f'strconv.ParseBool: parsing "{raw}": invalid syntax')
