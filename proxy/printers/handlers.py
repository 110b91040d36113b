"""The column handlers by (group, resource), as kubectl's ``AddHandlers`` registers them
(``pkg/printers/internalversion/printers.go``), and the default for everything else.

Each API group's module exports ``HANDLERS`` (resource -> handler); this module joins
them. A resource without a handler (custom resources, kinds kubectl has no printer
for) gets NAME and AGE, as a custom resource without printer columns does.
"""

from __future__ import annotations

import datetime as dt

from proxy.printers import apiregistration, apps, batch, coordination, core, rbac
from proxy.printers.columns import AGE, JSON, NAME, Row, TablePrinter, name_age
from proxy.registry.served_resource import NamedResource

__all__ = ["DEFAULT", "HANDLERS", "printer_for"]

_BY_GROUP: dict[str, dict[str, TablePrinter]] = {
    "": core.HANDLERS,
    "apps": apps.HANDLERS,
    "batch": batch.HANDLERS,
    "coordination.k8s.io": coordination.HANDLERS,
    "rbac.authorization.k8s.io": rbac.HANDLERS,
    "apiregistration.k8s.io": apiregistration.HANDLERS,
}

HANDLERS: dict[tuple[str, str], TablePrinter] = {
    (group, resource): handler
    for group, handlers in _BY_GROUP.items()
    for resource, handler in handlers.items()
}


def print_default(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(obj, now)
    return [name, age], []


DEFAULT = TablePrinter((NAME, AGE), print_default)


def printer_for(resource: NamedResource) -> TablePrinter:
    """The handler of ``resource`` (by group and plural); NAME/AGE for the others."""
    return HANDLERS.get((resource.group, resource.plural), DEFAULT)
