"""The certificates admission plugins of kube-apiserver
(``plugin/pkg/admission/certificates``), all default-on:

- **CertificateApproval**: an update of ``certificatesigningrequests/approval`` needs the
  ``approve`` verb on ``signers`` (group ``certificates.k8s.io``) named the CSR's
  ``signerName``, or its domain with ``/*`` (``example.com/*``);
- **CertificateSigning**: an update of ``certificatesigningrequests/status`` that
  changes ``status.certificate`` needs the ``sign`` verb there, likewise;
- **CertificateSubjectRestriction**: a CSR for ``kubernetes.io/kube-apiserver-client``
  may not ask for the ``system:masters`` group (an organization of its subject).

Without an authorizer (the plain port, which authorizes nothing) the first two admit
everything, as an ``AlwaysAllow`` authorizer would.
"""

from __future__ import annotations

import base64
from typing import Any

from cryptography import x509
from cryptography.x509.oid import NameOID

from proxy import apierrors
from proxy.admission.attributes import CREATE, UPDATE, Attributes
from proxy.admission.interfaces import Plugin, PluginDeps
from proxy.authorization.authorizer import Attributes as AuthorizationAttributes
from proxy.authorization.authorizer import Authorizer, Decision
from proxy.request.user import UserInfo

__all__ = ["CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction"]

JSON = dict[str, Any]
_GROUP = "certificates.k8s.io"
_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client"


def _is_csr(attrs: Attributes, subresource: str) -> bool:
    return (attrs.resource.group, attrs.resource.plural, attrs.subresource) == (
        _GROUP, "certificatesigningrequests", subresource)  # fmt: skip


def _signer_name(obj: JSON | None) -> str:
    return str(((obj or {}).get("spec") or {}).get("signerName") or "")


def is_authorized_for_signer_name(
    authorizer: Authorizer, user: UserInfo, verb: str, signer_name: str
) -> bool:
    """``certificates.IsAuthorizedForSignerName``: the verb on ``signers`` named the
    signer, else on its domain's wildcard."""
    names = [signer_name]
    if "/" in signer_name:
        names.append(signer_name.split("/", 1)[0] + "/*")
    for name in names:
        attrs = AuthorizationAttributes(user=user, verb=verb, api_group=_GROUP,
                                        resource="signers", name=name)  # fmt: skip
        if authorizer.authorize(attrs)[0] is Decision.ALLOW:
            return True
    return False


class _SignerVerb(Plugin):
    """The check of CertificateApproval and CertificateSigning."""

    operations = frozenset({UPDATE})
    validating = True
    verb = ""
    words = ""

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        self.authorizer = deps.authorizer

    def _check(self, attrs: Attributes) -> None:
        if self.authorizer is None or attrs.user is None:
            return
        signer = _signer_name(attrs.object)
        if not is_authorized_for_signer_name(self.authorizer, attrs.user, self.verb, signer):
            raise apierrors.forbidden(
                attrs.resource.qualified, attrs.name,
                f'user not permitted to {self.words} requests with signerName "{signer}"',
            )  # fmt: skip


class CertificateApproval(_SignerVerb):
    name = "CertificateApproval"
    verb = "approve"
    words = "approve"

    async def validate(self, attrs: Attributes) -> None:
        if _is_csr(attrs, "approval"):
            self._check(attrs)


class CertificateSigning(_SignerVerb):
    name = "CertificateSigning"
    verb = "sign"
    words = "sign"

    async def validate(self, attrs: Attributes) -> None:
        if not _is_csr(attrs, "status"):
            return
        new = ((attrs.object or {}).get("status") or {}).get("certificate")
        old = ((attrs.old_object or {}).get("status") or {}).get("certificate")
        if new != old:  # only a change of the certificate is signing
            self._check(attrs)


class CertificateSubjectRestriction(Plugin):
    name = "CertificateSubjectRestriction"
    operations = frozenset({CREATE})
    validating = True

    async def validate(self, attrs: Attributes) -> None:
        if not _is_csr(attrs, "") or _signer_name(attrs.object) != _CLIENT_SIGNER:
            return
        request = str(((attrs.object or {}).get("spec") or {}).get("request") or "")
        try:
            csr = x509.load_pem_x509_csr(base64.b64decode(request))
        except ValueError:
            return  # no subject to judge (upstream's validation refuses it before)
        orgs = [a.value for a in csr.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        if "system:masters" in orgs:
            raise apierrors.forbidden(
                attrs.resource.qualified, attrs.name,
                f"use of {_CLIENT_SIGNER} signer with system:masters group is not allowed",
            )  # fmt: skip
