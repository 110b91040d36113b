"""What a kind defined at run time (a custom resource's version) brings to the generic
server: the schema request bodies and patches are checked against, the type server-side
apply merges by, and kubectl's columns. Carried by the version's ``ResourceInfo``, as
upstream's CRD handler keeps them in each version's ``crdInfo`` (its validator,
``typeConverter`` and ``tableConvertor``), never in a process-wide table: a CRD whose
schema changes serves the new one at once, and two servers in one process (tests, the
lab's demos) never see each other's kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proxy.fieldmanager.typed import Atom, custom_type
from proxy.openapi.schemas import SchemaNode
from proxy.printers.columns import TablePrinter

__all__ = ["KindSchema", "kind_schema"]


@dataclass(frozen=True, eq=False)
class KindSchema:
    """``request``: the body checks' schema (None: the version has none, every field is
    kept); ``apply_type``: server-side apply's root type; ``printer``: the Table columns."""

    request: SchemaNode | None
    apply_type: Atom
    printer: TablePrinter


def kind_schema(
    request: Mapping[str, Any] | None,
    structural: Mapping[str, Any] | None,
    printer: TablePrinter,
) -> KindSchema:
    """A version's facts from its request schema, its structural ``openAPIV3Schema``
    (None: apply deduces the type from the object) and its printer."""
    return KindSchema(
        None if request is None else SchemaNode(dict(request)),
        custom_type(structural),
        printer,
    )
