"""The one door to the CRD schema work of ``proxy.apiextensions.schema`` (structural
schema validation of CRDs, validation, pruning and defaulting of custom resources).

While that package is absent this module answers as a server without structural schemas
would: no schema errors, nothing pruned, no defaults. Callers never import the schema
package themselves, so its arrival changes only this file's behaviour.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from proxy.apimachinery.validation.field import ErrorList

__all__ = ["apply_defaults", "available", "prune", "validate_crd", "validate_custom_resource"]

JSON = dict[str, Any]


def _schema_module() -> ModuleType | None:
    try:
        return importlib.import_module("proxy.apiextensions.schema")
    except ModuleNotFoundError as e:
        if e.name not in ("proxy.apiextensions.schema", "proxy.cel"):
            raise
        return None


_SCHEMA = _schema_module()


def available() -> bool:
    """Whether the schema package is installed (else the hooks do nothing)."""
    return _SCHEMA is not None


def validate_crd(crd: JSON, old: JSON | None) -> ErrorList:
    """The CRD's schema-related field errors (structural schema rules)."""
    if _SCHEMA is None:
        return []
    return list(_SCHEMA.validate_crd(crd, old))


def validate_custom_resource(obj: JSON, old: JSON | None, schema: JSON | None) -> ErrorList:
    """``obj``'s errors against its version's ``openAPIV3Schema`` (CEL rules included)."""
    if _SCHEMA is None or schema is None:
        return []
    return list(_SCHEMA.validate_custom_resource(obj, old, schema))


def prune(obj: JSON, schema: JSON | None) -> list[str]:
    """Drop fields the schema does not know (mutates ``obj``); the paths removed."""
    if _SCHEMA is None or schema is None:
        return []
    return list(_SCHEMA.prune(obj, schema))


def apply_defaults(obj: JSON, schema: JSON | None) -> None:
    """Fill the schema's ``default`` values (mutates ``obj``)."""
    if _SCHEMA is not None and schema is not None:
        _SCHEMA.apply_defaults(obj, schema)
