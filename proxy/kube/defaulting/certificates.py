"""The certificates.k8s.io group's defaults (``pkg/apis/certificates/v1/defaults.go``)."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, default_zero, dicts, member

__all__ = ["DEFAULTERS"]


def certificate_signing_request(obj: JSON) -> None:
    """``SetDefaults_CertificateSigningRequestCondition``: a condition's status True."""
    for condition in dicts(member(obj, "status"), "conditions"):
        default_zero(condition, "status", "True")


DEFAULTERS: dict[str, Callable[[JSON], None]] = {
    "CertificateSigningRequest": certificate_signing_request,
}
