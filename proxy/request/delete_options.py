"""DeleteOptions of a DELETE or DELETECOLLECTION, as kube-apiserver reads them: from the
request body when there is one (kubectl sends ``{"kind":"DeleteOptions",...,"dryRun":
["All"]}`` there; ``proxy.endpoints.handlers.delete_options`` decodes it), else from the
query parameters; then ``ValidateDeleteOptions``.

- a body that does not decode, or fields of the wrong JSON type → 400 BadRequest;
- a query parameter that does not parse (``gracePeriodSeconds=abc``) → 400 BadRequest
  with strconv's words;
- an unsupported ``dryRun`` or ``propagationPolicy``, or ``orphanDependents`` together
  with ``propagationPolicy`` → 422 Invalid on ``DeleteOptions.meta.k8s.io``.

Only ``preconditions``, ``dryRun`` and ``ignoreStoreReadErrorWithClusterBreakingPotential``
(the unsafe delete of a value that cannot be decoded, honoured only with the
``AllowUnsafeMalformedObjectDeletion`` gate: ``ValidateIgnoreStoreReadError`` forbids it
with the four other options) change what this server does: there is no garbage
collector and no graceful deletion, so the others are validated and accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from proxy import apierrors
from proxy.apierrors import FieldError
from proxy.request.dry_run import dry_run_values
from proxy.request.list_options import query_bool, query_int
from storage.interfaces import Preconditions

__all__ = ["DeleteOptions", "from_decoded_body", "from_query", "validate_delete_options"]

_KIND = "DeleteOptions"
_POLICIES = ("Foreground", "Background", "Orphan")
_IGNORE_READ_ERROR = "ignoreStoreReadErrorWithClusterBreakingPotential"


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    preconditions: Preconditions | None = None
    dry_run: bool = False
    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    ignore_store_read_error: bool | None = None


def _typed(opts: Mapping[str, Any], name: str, kind: type) -> Any:
    """``opts[name]`` if absent/null or of JSON type ``kind`` (a bool is not an int)."""
    value = opts.get(name)
    if value is None:
        return None
    if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
        return value
    raise apierrors.bad_request(f"invalid DeleteOptions: {name} has the wrong type")


def _preconditions(opts: Mapping[str, Any]) -> Preconditions | None:
    pre = opts.get("preconditions") or {}
    if not isinstance(pre, dict):
        raise apierrors.bad_request("invalid DeleteOptions: preconditions must be an object")
    uid, rv = pre.get("uid"), pre.get("resourceVersion")
    if uid is None and rv is None:
        return None
    return Preconditions(uid=str(uid) if uid else None, resource_version=str(rv) if rv else None)


def from_decoded_body(opts: object) -> DeleteOptions:
    """The options of a DeleteOptions body the handler decoded (JSON, YAML or protobuf):
    400 BadRequest for a body that is not an object or fields of the wrong JSON type."""
    if not isinstance(opts, dict):
        raise apierrors.bad_request("invalid DeleteOptions: expected an object")
    dry_run = _typed(opts, "dryRun", list) or []
    if not all(isinstance(v, str) for v in dry_run):
        raise apierrors.bad_request("invalid DeleteOptions: dryRun has the wrong type")
    return DeleteOptions(
        preconditions=_preconditions(opts),
        dry_run=dry_run_values(dry_run, _KIND),
        grace_period_seconds=_typed(opts, "gracePeriodSeconds", int),
        propagation_policy=_typed(opts, "propagationPolicy", str),
        orphan_dependents=_typed(opts, "orphanDependents", bool),
        ignore_store_read_error=_typed(opts, _IGNORE_READ_ERROR, bool),
    )


def from_query(query: Mapping[str, str]) -> DeleteOptions:
    """The options of a DELETE without a body, from its query parameters."""
    values = query.getall("dryRun", []) if hasattr(query, "getall") else []
    return DeleteOptions(
        dry_run=dry_run_values(list(values), _KIND),
        grace_period_seconds=query_int(query, "gracePeriodSeconds"),
        propagation_policy=query.get("propagationPolicy") or None,
        orphan_dependents=query_bool(query, "orphanDependents"),
        ignore_store_read_error=query_bool(query, _IGNORE_READ_ERROR),
    )


def _validate(opts: DeleteOptions) -> None:
    errs: list[FieldError] = []
    if opts.orphan_dependents is not None and opts.propagation_policy is not None:
        errs.append(FieldError.invalid(
            "propagationPolicy", opts.propagation_policy,
            "orphanDependents and deletionPropagation cannot be both set",
        ))  # fmt: skip
    if opts.propagation_policy is not None and opts.propagation_policy not in _POLICIES:
        errs.append(FieldError.not_supported(
            "propagationPolicy", opts.propagation_policy, [*_POLICIES, "nil"]
        ))  # fmt: skip
    if opts.ignore_store_read_error:
        for name, value in (
            ("propagationPolicy", opts.propagation_policy),
            ("orphanDependents", opts.orphan_dependents),
            ("gracePeriodSeconds", opts.grace_period_seconds),
            ("preconditions", opts.preconditions),
        ):
            if value is not None:
                errs.append(FieldError.invalid(
                    _IGNORE_READ_ERROR, True, f"cannot be set together with .{name}"
                ))  # fmt: skip
    if errs:
        raise apierrors.invalid(f"{_KIND}.meta.k8s.io", "", errs)


def validate_delete_options(
    opts: DeleteOptions, *, unsafe_delete_gate: bool = True, collection: bool = False
) -> DeleteOptions:
    """``ValidateDeleteOptions``, after the AllowUnsafeMalformedObjectDeletion gate: without
    it the unsafe option is dropped unread; with it, a DELETECOLLECTION may not use it
    (422, as upstream)."""
    if not unsafe_delete_gate:
        opts = replace(opts, ignore_store_read_error=None)
    _validate(opts)
    if collection and opts.ignore_store_read_error:
        detail = "is not allowed with DELETECOLLECTION, try again after removing the option"
        err = FieldError.invalid(_IGNORE_READ_ERROR, True, detail)
        raise apierrors.invalid(f"{_KIND}.meta.k8s.io", "", [err])
    return opts
