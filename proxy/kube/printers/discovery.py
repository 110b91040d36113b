"""Column handlers of the ``discovery.k8s.io`` group: endpointslices (kubectl's
``printEndpointSlice``: the address type, the first three ports and addresses, then
``+ N more...``)."""

from __future__ import annotations

import datetime as dt

from proxy.printers.columns import AGE, JSON, NAME, Column, Row, TablePrinter, as_list, name_age

__all__ = ["HANDLERS"]

_SHOWN = 3  # kubectl's max in formatDiscoveryPorts/formatDiscoveryEndpoints
_DOC = "io.k8s.api.discovery.v1.EndpointSlice."
ENDPOINT_SLICE_COLUMNS = (
    NAME,
    Column("AddressType", doc=_DOC + "addressType"),
    Column("Ports", doc=_DOC + "ports"),
    Column("Endpoints", doc=_DOC + "endpoints"),
    AGE,
)


def list_with_more(items: list[str]) -> str:
    """``listWithMoreString``: the first three, ``+ N more...``; none: ``<unset>``."""
    shown = ",".join(items[:_SHOWN])
    if len(items) > _SHOWN:
        return f"{shown} + {len(items) - _SHOWN} more..."
    return shown or "<unset>"


def print_endpoint_slice(obj: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(obj, now)
    ports = [str(p["port"]) if p.get("port") is not None else str(p.get("name") or "*")
             for p in as_list(obj.get("ports")) if isinstance(p, dict)]  # fmt: skip
    addresses = [str(a) for e in as_list(obj.get("endpoints")) if isinstance(e, dict)
                 for a in as_list(e.get("addresses"))]  # fmt: skip
    return [name, str(obj.get("addressType") or ""), list_with_more(ports),
            list_with_more(addresses), age], []  # fmt: skip


# kubectl's handler for the discovery.k8s.io group, by resource
HANDLERS: dict[str, TablePrinter] = {
    "endpointslices": TablePrinter(ENDPOINT_SLICE_COLUMNS, print_endpoint_slice),
}
