"""Column handlers of the ``coordination.k8s.io`` group: leases (kubectl's ``printLease``)."""

from __future__ import annotations

import datetime as dt

from proxy.printers.columns import (
    AGE,
    JSON,
    NAME,
    Column,
    Row,
    TablePrinter,
    lookup,
    name_age,
)

__all__ = ["HANDLERS"]

LEASE_COLUMNS = (
    NAME,
    Column("Holder", doc="io.k8s.api.coordination.v1.LeaseSpec.holderIdentity"),
    AGE,
)


def print_lease(lease: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(lease, now)
    return [name, str(lookup(lease, "spec", "holderIdentity") or ""), age], []


# kubectl's handler for the coordination.k8s.io group, by resource
HANDLERS: dict[str, TablePrinter] = {"leases": TablePrinter(LEASE_COLUMNS, print_lease)}
