"""Column handlers of the ``policy`` group: poddisruptionbudgets (kubectl's
``printPodDisruptionBudget``)."""

from __future__ import annotations

import datetime as dt

from proxy.printers.columns import (
    AGE,
    JSON,
    NAME,
    Column,
    Row,
    TablePrinter,
    as_int,
    lookup,
    name_age,
)

__all__ = ["HANDLERS"]

PDB_COLUMNS = (
    NAME,
    Column("Min Available", description="The minimum number of pods that must be available."),
    Column("Max Unavailable", description="The maximum number of pods that may be unavailable."),
    Column(
        "Allowed Disruptions",
        type="integer",
        description="Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
)


def _int_or_string(value: JSON) -> str:
    """An IntOrString as its String(): ``N/A`` when unset."""
    return "N/A" if value is None else str(value)


def print_pdb(pdb: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(pdb, now)
    return [name, _int_or_string(lookup(pdb, "spec", "minAvailable")),
            _int_or_string(lookup(pdb, "spec", "maxUnavailable")),
            as_int(lookup(pdb, "status", "disruptionsAllowed")), age], []  # fmt: skip


# kubectl's handler for the policy group, by resource
HANDLERS: dict[str, TablePrinter] = {"poddisruptionbudgets": TablePrinter(PDB_COLUMNS, print_pdb)}
