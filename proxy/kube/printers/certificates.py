"""Column handlers of the ``certificates.k8s.io`` group: certificatesigningrequests
(kubectl's ``printCertificateSigningRequest``)."""

from __future__ import annotations

import datetime as dt

from proxy.printers.columns import (
    AGE,
    JSON,
    NAME,
    Column,
    Row,
    TablePrinter,
    as_list,
    lookup,
    name_age,
)
from proxy.printers.duration import human_duration

__all__ = ["HANDLERS"]

CSR = "io.k8s.api.certificates.v1."
CSR_COLUMNS = (
    NAME,
    AGE,
    Column("SignerName", doc=CSR + "CertificateSigningRequestSpec.signerName"),
    Column("Requestor", description="Name of the requestor"),
    Column("RequestedDuration", doc=CSR + "CertificateSigningRequestSpec.expirationSeconds"),
    Column("Condition", doc=CSR + "CertificateSigningRequestStatus.conditions"),
)


def csr_condition(csr: dict[str, JSON]) -> str:
    """``extractCSRStatus``: Denied, else Approved, else Pending; then ``,Failed`` and
    ``,Issued`` (a certificate is there)."""
    types = {lookup(c, "type") for c in as_list(lookup(csr, "status", "conditions"))
             if isinstance(c, dict)}  # fmt: skip
    out = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        out += ",Failed"
    if lookup(csr, "status", "certificate"):
        out += ",Issued"
    return out


def print_csr(csr: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(csr, now)
    seconds = lookup(csr, "spec", "expirationSeconds")
    duration = (human_duration(dt.timedelta(seconds=int(seconds)))
                if isinstance(seconds, int) else "<none>")  # fmt: skip
    signer = str(lookup(csr, "spec", "signerName") or "<none>")
    requestor = str(lookup(csr, "spec", "username") or "")
    return [name, age, signer, requestor, duration, csr_condition(csr)], []


# kubectl's handler for the certificates.k8s.io group, by resource
HANDLERS: dict[str, TablePrinter] = {
    "certificatesigningrequests": TablePrinter(CSR_COLUMNS, print_csr)
}
