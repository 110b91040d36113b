"""Column handlers of the ``apiregistration.k8s.io`` group: APIServices (kube-aggregator's
table convertor: Name, Service, Available, Age)."""

from __future__ import annotations

import datetime as dt

from proxy.printers.columns import AGE, JSON, NAME, Column, Row, TablePrinter, lookup, name_age

__all__ = ["HANDLERS"]

APISERVICE_COLUMNS = (
    NAME,
    Column("Service", description="The reference to the service that hosts this API endpoint."),
    Column("Available", description="Whether this service is available."),
    AGE,
)


def _available(obj: dict[str, JSON]) -> str:
    for cond in lookup(obj, "status", "conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Available":
            status = str(cond.get("status") or "")
            return status if status == "True" else f"{status} ({cond.get('reason') or ''})"
    return "Unknown"


def print_apiservice(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(obj, now)
    service = lookup(obj, "spec", "service")
    where = "Local"
    if isinstance(service, dict):
        where = f"{service.get('namespace') or ''}/{service.get('name') or ''}"
    return [name, where, _available(obj), age], []


HANDLERS: dict[str, TablePrinter] = {
    "apiservices": TablePrinter(APISERVICE_COLUMNS, print_apiservice)
}
