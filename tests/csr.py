"""CertificateSigningRequests for the tests: a fresh key, a PKCS#10 request for a
subject, and the CSR object that carries it (``spec.request`` base64 PEM)."""

from __future__ import annotations

import base64
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["CLIENT_SIGNER", "csr_object", "key_pem", "new_request"]

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"


def new_request(
    common_name: str, organization: str, *names: x509.GeneralName
) -> tuple[ec.EllipticCurvePrivateKey, bytes]:
    """A new key and a PEM request for ``CN=common_name, O=organization`` naming
    ``names`` (subject alternative names)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                         x509.NameAttribute(NameOID.COMMON_NAME, common_name)])  # fmt: skip
    builder = x509.CertificateSigningRequestBuilder().subject_name(subject)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    return key, builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())  # fmt: skip


def csr_object(
    name: str,
    request: bytes,
    usages: list[str],
    signer: str = CLIENT_SIGNER,
    expiration_seconds: int | None = None,
) -> dict[str, Any]:
    """The ``certificates.k8s.io/v1`` CertificateSigningRequest ``name`` for ``request``."""
    spec: dict[str, Any] = {"request": base64.b64encode(request).decode(), "signerName": signer,
                            "usages": usages}  # fmt: skip
    if expiration_seconds is not None:
        spec["expirationSeconds"] = expiration_seconds
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip
