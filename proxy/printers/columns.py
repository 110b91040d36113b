"""What every column handler is made of: the column definition, the handler (columns +
row function), the columns most kinds share, and tolerant readers of object fields.

A handler's row function gets the object as decoded JSON and the request's ``now`` and
returns ``(cells, conditions)``. Objects come from storage and may be malformed, so the
readers here never raise: a missing or mistyped field reads as empty.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from proxy.openapi.schemas import definitions
from proxy.printers.duration import since

__all__ = [
    "AGE",
    "CREATED_AT",
    "JSON",
    "NAME",
    "TEMPLATE_COLUMNS",
    "Column",
    "Printer",
    "Row",
    "TablePrinter",
    "as_int",
    "as_list",
    "condition_true",
    "format_label_selector",
    "format_labels",
    "lookup",
    "name_age",
    "object_meta",
    "since",
    "template_columns",
    "template_wide",
]

JSON = Any


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "string"
    format: str = ""
    priority: int = 0
    doc: str = ""  # "Definition.field" whose schema description describes the column
    description: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description or _doc(self.doc),
            "priority": self.priority,
        }


def _doc(ref: str) -> str:
    """The description (Go SwaggerDoc) of ``Definition.field`` in the API schemas."""
    if not ref:
        return ""
    definition, _, fld = ref.rpartition(".")
    prefix = "io.k8s.apimachinery.pkg.apis.meta.v1." if definition == "ObjectMeta" else ""
    schema = definitions().get(prefix + definition, {})
    prop = schema.get("properties", {}).get(fld, {})
    return str(prop.get("description", ""))


NAME = Column("Name", format="name", doc="ObjectMeta.name")
AGE = Column("Age", doc="ObjectMeta.creationTimestamp")
TEMPLATE_COLUMNS = (
    Column("Containers", priority=1, description="Names of each container in the template."),
    Column(
        "Images", priority=1, description="Images referenced by each container in the template."
    ),
)


def template_columns(selector_doc: str) -> tuple[Column, ...]:
    """The wide columns of a kind with a pod template: Containers, Images, Selector
    (``selector_doc`` names the selector field whose description the column carries)."""
    return (*TEMPLATE_COLUMNS, Column("Selector", priority=1, doc=selector_doc))


Row = tuple[list[JSON], list[dict[str, JSON]]]  # cells, conditions
Printer = Callable[[dict[str, JSON], dt.datetime], Row]

CREATED_AT = Column("Created At", type="date", doc="ObjectMeta.creationTimestamp")


@dataclass(frozen=True)
class TablePrinter:
    """One kind's handler: its column definitions and the function printing a row."""

    columns: tuple[Column, ...]
    print_row: Printer


def object_meta(obj: Mapping[str, JSON]) -> Mapping[str, JSON]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def lookup(obj: Mapping[str, JSON] | None, *path: str) -> JSON:
    cur: JSON = obj
    for part in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def as_list(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []


def as_int(value: JSON) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def name_age(obj: dict[str, JSON], now: dt.datetime) -> tuple[str, str]:
    meta = object_meta(obj)
    return str(meta.get("name", "")), since(meta.get("creationTimestamp"), now)


def condition_true(conditions: JSON, ctype: str) -> bool:
    return any(
        lookup(c, "type") == ctype and lookup(c, "status") == "True" for c in as_list(conditions)
    )


def format_label_selector(selector: JSON) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()``: ``a=b,c in (d,e)``; ``""`` if empty."""
    if not isinstance(selector, Mapping):
        return ""
    parts: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        parts.append((key, f"{key}={value}"))
    for expr in as_list(selector.get("matchExpressions")):
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in as_list(expr.get("values"))))
        text = {
            "In": f"{key} in ({values})",
            "NotIn": f"{key} notin ({values})",
            "Exists": key,
            "DoesNotExist": f"!{key}",
        }.get(str(op), key)
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts, key=lambda p: p[0]))


def template_wide(obj: dict[str, JSON], selector: str) -> list[JSON]:
    containers = as_list(lookup(obj, "spec", "template", "spec", "containers"))
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return [names, images, selector]


def format_labels(labels: JSON) -> str:
    """``labels.FormatLabels``: sorted ``k=v`` joined by commas, ``<none>`` if empty."""
    if not isinstance(labels, Mapping) or not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))
