"""Certificates and keys: a CA, certificates it signs, and the self-signed serving
certificate kube-apiserver generates in ``--cert-dir`` when no ``--tls-cert-file`` is given.

Everything is PEM. ``self_signed_serving_cert`` writes ``apiserver.crt`` (the serving
certificate followed by the CA that signed it, as kube's fixtures are) and
``apiserver.key`` once and reuses them afterwards, so a restarted server keeps the
certificate clients have already pinned. The lab uses ``new_ca`` / ``sign`` for its own
CA, the admin's and the learner's client certificates.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "SERVING_DNS_NAMES",
    "CertKey",
    "new_ca",
    "new_rsa_key_pem",
    "self_signed_serving_cert",
    "sign",
]

# the names a client inside or outside a cluster reaches the API server by
SERVING_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
SERVING_IPS = ("127.0.0.1", "::1")

_ONE_YEAR = dt.timedelta(days=365)


@dataclass(frozen=True)
class CertKey:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes

    def write(self, cert_path: Path, key_path: Path) -> None:
        cert_path.parent.mkdir(parents=True, exist_ok=True)
        cert_path.write_bytes(self.cert_pem)
        # the key is readable by its owner only
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(self.key_pem)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def new_rsa_key_pem(bits: int = 2048) -> bytes:
    """A new RSA private key, PEM (service-account token signing uses RS256)."""
    return _key_pem(rsa.generate_private_key(public_exponent=65537, key_size=bits))


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def new_ca(common_name: str, days: int = 365) -> CertKey:
    """A self-signed CA certificate and key."""
    key = _new_key()
    now = dt.datetime.now(dt.UTC)
    name = _name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return CertKey(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def sign(
    ca: CertKey,
    common_name: str,
    *,
    organizations: Sequence[str] = (),
    dns_names: Sequence[str] = (),
    ips: Sequence[str] = (),
    client: bool = False,
    server: bool = False,
    not_before: dt.datetime | None = None,
    not_after: dt.datetime | None = None,
) -> CertKey:
    """A certificate for ``common_name`` (and ``organizations``: kube reads them as the
    user's groups) signed by ``ca``, for client and/or server authentication."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey)
    key = _new_key()
    now = dt.datetime.now(dt.UTC)
    usages = [
        u
        for u, on in (
            (ExtendedKeyUsageOID.CLIENT_AUTH, client),
            (ExtendedKeyUsageOID.SERVER_AUTH, server),
        )
        if on
    ]
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organizations))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before or now - dt.timedelta(minutes=5))
        .not_valid_after(not_after or now + _ONE_YEAR)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    )
    sans: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return CertKey(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def self_signed_serving_cert(cert_dir: Path, host: str = "localhost") -> tuple[Path, Path]:
    """``(cert, key)`` paths of the serving certificate in ``cert_dir``, generated (a CA
    of its own plus a certificate for localhost, the ``kubernetes`` service names and
    the loopback addresses) unless both files already exist."""
    cert_path, key_path = cert_dir / "apiserver.crt", cert_dir / "apiserver.key"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    stamp = int(dt.datetime.now(dt.UTC).timestamp())
    ca = new_ca(f"{host}-ca@{stamp}")
    names = tuple(dict.fromkeys((host, *SERVING_DNS_NAMES)))
    served = sign(ca, f"{host}@{stamp}", dns_names=names, ips=SERVING_IPS, server=True)
    CertKey(served.cert_pem + ca.cert_pem, served.key_pem).write(cert_path, key_path)
    return cert_path, key_path
