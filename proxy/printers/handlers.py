"""The column handlers by (group, resource), as kubectl's ``AddHandlers`` registers them
(``pkg/printers/internalversion/printers.go``), and the default for everything else.

The table starts empty: the composition root registers kube's built-in kinds'
(``proxy.kube.printers``) and APIService's (``proxy.aggregator.printers``), the
apiextensions server each CRD's. A resource without a handler (custom resources, kinds
kubectl has no printer for) gets NAME and AGE, as a custom resource without printer
columns does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from proxy.apimachinery.api_resource import NamedResource
from proxy.printers.columns import AGE, JSON, NAME, Row, TablePrinter, name_age

__all__ = ["DEFAULT", "HANDLERS", "printer_for", "register_printers"]

# (group, plural) -> handler; changed by register_printers (when the server is built)
# and by the apiextensions server (a CRD's columns come and go with it)
HANDLERS: dict[tuple[str, str], TablePrinter] = {}


def register_printers(group: str, handlers: Mapping[str, TablePrinter]) -> None:
    """Add (or replace) the handlers of ``group``'s resources (plural -> handler)."""
    for resource, handler in handlers.items():
        HANDLERS[(group, resource)] = handler


def print_default(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(obj, now)
    return [name, age], []


DEFAULT = TablePrinter((NAME, AGE), print_default)


def printer_for(resource: NamedResource) -> TablePrinter:
    """The handler of ``resource`` (by group and plural); NAME/AGE for the others."""
    return HANDLERS.get((resource.group, resource.plural), DEFAULT)
