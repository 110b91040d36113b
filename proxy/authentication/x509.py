"""Client certificates (``--client-ca-file``): CN is the user, each O a group.

The TLS layer has already verified the chain against the client CA (the secure port's
context requests a certificate and verifies any that is sent), so this authenticator
only maps the verified leaf's subject. A request without a certificate is not its
business (None).

When the secure port also trusts a ``--requestheader-client-ca-file`` (the TLS layer
then accepts certificates of either CA), the authenticator is given the client CA's
``CertificatePool`` and ignores a certificate the client CA did not sign: a front
proxy's certificate is not a user (``request_header.py``).
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID

from proxy.authentication.authenticator import AuthenticationError, Response
from proxy.request.user import UserInfo

__all__ = ["CertificatePool", "X509Authenticator", "peer_certificate", "user_from_subject"]


class CertificatePool:
    """The CA certificates of one PEM file; ``signed`` tells whether one of them
    signed a leaf directly (the TLS layer has verified the chain already)."""

    def __init__(self, cas: Sequence[x509.Certificate]) -> None:
        self.cas = tuple(cas)

    @classmethod
    def from_file(cls, path: str) -> CertificatePool:
        """ValueError/OSError for a file without certificates."""
        return cls(x509.load_pem_x509_certificates(Path(path).read_bytes()))

    def signed(self, cert: x509.Certificate) -> bool:
        for ca in self.cas:
            if ca.subject != cert.issuer:
                continue
            try:
                cert.verify_directly_issued_by(ca)
            except (ValueError, TypeError, InvalidSignature):
                continue
            return True
        return False

    @staticmethod
    def common_name(cert: x509.Certificate) -> str:
        names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        value = names[0].value if names else ""
        return value if isinstance(value, str) else value.decode()


def _ssl_object(request: web.Request) -> ssl.SSLObject | None:
    transport = request.transport
    found = transport.get_extra_info("ssl_object") if transport is not None else None
    return found if isinstance(found, ssl.SSLObject) else None


def peer_certificate(request: web.Request) -> x509.Certificate | None:
    """The verified client certificate of a TLS request, or None."""
    ssl_object = _ssl_object(request)
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    return x509.load_der_x509_certificate(der) if der else None


def user_from_subject(subject: Sequence[Sequence[tuple[str, Any]]] | tuple[Any, ...]) -> UserInfo:
    """``ssl.getpeercert()['subject']`` -> UserInfo(CN, groups = every O)."""
    common_name = ""
    groups: list[str] = []
    for rdn in subject:
        for key, value in rdn:
            if key == "commonName":
                common_name = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    return UserInfo(name=common_name, groups=tuple(groups))


class X509Authenticator:
    def __init__(self, client_cas: CertificatePool | None = None) -> None:
        # set when another CA (the requestheader CA) is trusted by the TLS layer too
        self.client_cas = client_cas

    async def authenticate(self, request: web.Request) -> Response | None:
        ssl_object = _ssl_object(request)
        if ssl_object is None:
            return None
        cert = ssl_object.getpeercert()
        if not cert:  # none sent (or no client CA configured)
            return None
        if self.client_cas is not None:
            leaf = peer_certificate(request)
            if leaf is None or not self.client_cas.signed(leaf):
                return None  # not a client-CA certificate (a front proxy's)
        subject = cert.get("subject", ())
        user = user_from_subject(subject if isinstance(subject, tuple) else ())
        if not user.name:
            raise AuthenticationError("x509: subject with cn= is required")
        return Response(user)
