"""The lab's own PKI: a CA that signs the server's certificate and two client
certificates — the administrator (``lab-admin`` in ``system:masters``) and a restricted
``learner`` (group ``learners``, no permissions until a binding grants some) — plus a
static token for the ``authn`` demo. Everything lives in ``<lab dir>/pki``.
"""

from __future__ import annotations

import secrets
import ssl
from dataclasses import dataclass
from pathlib import Path

from proxy.server.certs import SERVING_DNS_NAMES, new_ca, sign

__all__ = ["ADMIN", "LEARNER", "TOKEN_USER", "LabPKI"]

ADMIN = ("lab-admin", ("system:masters",))
LEARNER = ("learner", ("learners",))
TOKEN_USER = "token-user"


@dataclass(frozen=True)
class LabPKI:
    dir: Path

    @classmethod
    def create(cls, directory: Path) -> LabPKI:
        """A fresh CA and certificates (the lab's data is fresh each run too)."""
        directory.mkdir(parents=True, exist_ok=True)
        ca = new_ca("watchcache-lab-ca")
        ca.write(directory / "ca.crt", directory / "ca.key")
        server = sign(ca, "watchcache", dns_names=SERVING_DNS_NAMES,
                      ips=("127.0.0.1", "::1"), server=True)  # fmt: skip
        server.write(directory / "apiserver.crt", directory / "apiserver.key")
        for name, groups in (ADMIN, LEARNER):
            sign(ca, name, organizations=groups, client=True).write(
                directory / f"{name}.crt", directory / f"{name}.key"
            )
        token = secrets.token_hex(16)
        tokens = directory / "tokens.csv"
        tokens.write_text(f"{token},{TOKEN_USER},{TOKEN_USER},learners\n")
        tokens.chmod(0o600)
        return cls(directory)

    def server_flags(self) -> tuple[str, ...]:
        d = self.dir
        return (
            f"--tls-cert-file={d / 'apiserver.crt'}",
            f"--tls-private-key-file={d / 'apiserver.key'}",
            f"--client-ca-file={d / 'ca.crt'}",
            f"--token-auth-file={d / 'tokens.csv'}",
            f"--cert-dir={d}",  # the service-account signing key is generated here
        )

    @property
    def token(self) -> str:
        return (self.dir / "tokens.csv").read_text().split(",", 1)[0]

    def ssl_context(self, user: str | None = None) -> ssl.SSLContext:
        """Trusts the lab CA; presents ``user``'s client certificate when given."""
        ctx = ssl.create_default_context(cafile=str(self.dir / "ca.crt"))
        if user is not None:
            ctx.load_cert_chain(self.dir / f"{user}.crt", self.dir / f"{user}.key")
        return ctx
