"""``dryRun``: the option every write takes (``?dryRun=All`` or ``dryRun: ["All"]`` in a
DeleteOptions body); the store that honours it is ``proxy.registry.dry_run``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from proxy import apierrors
from proxy.apierrors import FieldError

__all__ = ["dry_run_values", "is_dry_run"]


def is_dry_run(query: Mapping[str, str], options_kind: str) -> bool:
    """Whether the request is a dry run; 422 for a value other than ``All``."""
    values = query.getall("dryRun", []) if hasattr(query, "getall") else []
    if not values and "dryRun" in query:
        values = [query["dryRun"]]
    return dry_run_values(values, options_kind)


def dry_run_values(values: Sequence[str], options_kind: str) -> bool:
    """Whether ``dryRun`` values (query or options body) ask for a dry run; 422 Invalid
    on ``<options_kind>.meta.k8s.io`` for a value other than ``All``."""
    if not values:
        return False
    bad = [v for v in values if v != "All"]
    if bad:
        shown = "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
        err = FieldError("FieldValueNotSupported", "dryRun",
                         f'Unsupported value: {shown}: supported values: "All"')  # fmt: skip
        raise apierrors.invalid(f"{options_kind}.meta.k8s.io", "", [err])
    return True
