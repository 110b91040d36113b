"""The CSR signing controller: issues the certificates of approved
CertificateSigningRequests from the lab's CA, as kube-controller-manager's
``csrsigning`` controller does with ``--cluster-signing-cert-file`` /
``--cluster-signing-key-file``.

It watches CSRs and, for one that is Approved, not Failed and not issued yet, whose
``spec.signerName`` it serves, checks the request against the signer's rules and either
writes ``status.certificate`` (``PUT .../status``) or, when the rules refuse it, a
``Failed`` condition (reason ``SignerValidationFailure``). Signers served:

- ``kubernetes.io/kube-apiserver-client``: any subject; usages among digital signature,
  key encipherment and client auth, client auth required;
- ``kubernetes.io/kube-apiserver-client-kubelet``: subject ``system:node:NAME`` in
  organization ``system:nodes``, no subject alternative names, the client usages;
- ``kubernetes.io/kubelet-serving``: the same subject, a DNS name or IP address
  required, no email or URI names, usages among digital signature, key encipherment and
  server auth, server auth required.

Other signers (``kubernetes.io/legacy-unknown``, anyone else's) are left to their own
signers. The certificate carries the request's subject and names and the usages asked
for, is valid from five minutes ago (clock skew) for ``spec.expirationSeconds`` or
``--cluster-signing-duration`` (one year), whichever is shorter, and never past the CA's
own expiry.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import logging

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from lab.sim.client import JSON, APIError, Client
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers
from proxy.server.certs import CertKey

__all__ = ["CSRSigningController", "SignerRefused", "sign_request"]

log = logging.getLogger("watchcache.sim")

SIGNING_DURATION = dt.timedelta(days=365)  # --cluster-signing-duration's default
BACKDATE = dt.timedelta(minutes=5)
CLIENT = "kubernetes.io/kube-apiserver-client"
KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
_EXTENDED = {"client auth": ExtendedKeyUsageOID.CLIENT_AUTH,
             "server auth": ExtendedKeyUsageOID.SERVER_AUTH}  # fmt: skip
_KEY_USAGES = {"digital signature": "digital_signature", "key encipherment": "key_encipherment"}


class SignerRefused(Exception):
    """The request breaks its signer's rules; the message is the Failed condition's."""


def _check_usages(usages: list[str], required: str) -> None:
    """``validAPIServerClientUsages`` / the serving equivalent."""
    for usage in usages:
        if usage not in (*_KEY_USAGES, required):
            kind = "client" if required == "client auth" else "serving"
            raise SignerRefused(f"invalid usage for {kind} certificate: {usage}")
    if required not in usages:
        kind = "client" if required == "client auth" else "serving"
        raise SignerRefused(f"missing required usage for {kind} certificate: {required}")


def _check_node_subject(request: x509.CertificateSigningRequest) -> None:
    orgs = [a.value for a in request.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    if orgs != ["system:nodes"]:
        raise SignerRefused("subject organization is not system:nodes")
    names = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not names or not str(names[0].value).startswith("system:node:"):
        raise SignerRefused("subject common name does not begin with system:node:")


CSR = x509.CertificateSigningRequest


def _alternative_names(request: CSR) -> x509.SubjectAlternativeName | None:
    try:
        return request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None


def check_signer_rules(signer: str, request: CSR, usages: list[str]) -> None:
    """The signer's rules (module docstring); SignerRefused when broken."""
    if signer == CLIENT:
        _check_usages(usages, "client auth")
        return
    _check_node_subject(request)
    names = _alternative_names(request)
    if signer == KUBELET_CLIENT:
        if names is not None and len(names) > 0:
            raise SignerRefused("subjectAltNames are not allowed")
        _check_usages(usages, "client auth")
        return
    dns_or_ip = names.get_values_for_type(x509.DNSName) + [
        str(ip) for ip in names.get_values_for_type(x509.IPAddress)] if names else []  # fmt: skip
    if not dns_or_ip:
        raise SignerRefused("DNS or IP subjectAltName is required")
    if names is not None and names.get_values_for_type(x509.RFC822Name):
        raise SignerRefused("Email subjectAltNames are not allowed")
    if names is not None and names.get_values_for_type(x509.UniformResourceIdentifier):
        raise SignerRefused("URI subjectAltNames are not allowed")
    _check_usages(usages, "server auth")


def sign_request(ca: CertKey, csr: JSON, now: dt.datetime | None = None) -> bytes:
    """The PEM certificate ``ca`` issues for ``csr`` (a CertificateSigningRequest);
    SignerRefused when the request breaks its signer's rules or does not parse."""
    spec = csr.get("spec") or {}
    try:
        request = x509.load_pem_x509_csr(base64.b64decode(str(spec.get("request") or "")))
    except ValueError as e:
        raise SignerRefused(f"unable to parse csr: {e}") from None
    usages = [str(u) for u in spec.get("usages") or []]
    check_signer_rules(str(spec.get("signerName")), request, usages)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem)
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey)
    now = now or dt.datetime.now(dt.UTC)
    ttl = SIGNING_DURATION
    if isinstance(spec.get("expirationSeconds"), int):
        ttl = min(ttl, dt.timedelta(seconds=max(int(spec["expirationSeconds"]), 600)))
    builder = (
        x509.CertificateBuilder()
        .subject_name(request.subject)
        .issuer_name(ca_cert.subject)
        .public_key(request.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(min(now + ttl, ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    if any(u in _KEY_USAGES for u in usages):  # none asked: no extension (as Go omits 0)
        builder = builder.add_extension(_key_usage(usages), critical=True)
    authority = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    builder = builder.add_extension(authority, critical=False)
    extended = [_EXTENDED[u] for u in usages if u in _EXTENDED]
    if extended:
        builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=False)
    names = _alternative_names(request)
    if names is not None and len(names) > 0:
        builder = builder.add_extension(names, critical=False)
    return builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _key_usage(usages: list[str]) -> x509.KeyUsage:
    flags = {flag: usage in usages for usage, flag in _KEY_USAGES.items()}
    return x509.KeyUsage(content_commitment=False, data_encipherment=False, key_agreement=False,
                         key_cert_sign=False, crl_sign=False, encipher_only=False,
                         decipher_only=False, **flags)  # fmt: skip


def _has_true(csr: JSON, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status", "True") == "True"
               for c in (csr.get("status") or {}).get("conditions") or [])  # fmt: skip


class CSRSigningController:
    """Issues the certificates of the CSRs ``csrs`` reports, signed by ``ca``."""

    SIGNERS = (CLIENT, KUBELET_CLIENT, KUBELET_SERVING)

    def __init__(self, server: str, csrs: Informer, ca: CertKey) -> None:
        self.client = Client(server, "csrsigning-controller")
        self.csrs = csrs
        self.ca = ca
        self.queue: WorkQueue[str] = WorkQueue()
        self.issued = 0

    async def run(self) -> None:
        self.csrs.add_handler(lambda kind, csr, old: self.queue.add(key_of(csr)))
        try:
            await run_workers("csrsigning-controller", self.queue, self.sync, 1)
        finally:
            await self.client.close()

    async def sync(self, key: str) -> None:
        csr = self.csrs.get(key)
        if csr is None or not _has_true(csr, "Approved") or _has_true(csr, "Failed"):
            return
        status = dict(csr.get("status") or {})
        signer = (csr.get("spec") or {}).get("signerName")
        if status.get("certificate") or signer not in self.SIGNERS:
            return
        try:
            pem = await asyncio.to_thread(sign_request, self.ca, csr)
            status["certificate"] = base64.b64encode(pem).decode()
            self.issued += 1
        except SignerRefused as e:
            failed = {"type": "Failed", "status": "True", "reason": "SignerValidationFailure",
                      "message": str(e)}  # fmt: skip
            status["conditions"] = [*status.get("conditions", []), failed]
        body = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                **csr, "status": status}  # fmt: skip
        with contextlib.suppress(APIError):  # 409: signed again from the newer CSR
            replace = self.client.certificates.replace_certificate_signing_request_status
            await self.client.call(replace, csr["metadata"]["name"], body)
