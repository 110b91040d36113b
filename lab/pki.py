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

from proxy.server.certs import SERVING_DNS_NAMES, CertKey, new_ca, sign

__all__ = ["ADMIN", "KUBELET_CLIENT", "LEARNER", "MONITORING", "TOKEN_USER", "LabPKI",
           "kubelet_client_flags", "main"]

ADMIN = ("lab-admin", ("system:masters",))
LEARNER = ("learner", ("learners",))
# Prometheus's identity in the compose stack: the bootstrap policy lets the group
# system:monitoring read /metrics and the health endpoints, nothing else
MONITORING = ("prometheus", ("system:monitoring",))
TOKEN_USER = "token-user"
# the API server's identity towards the kubelets (kubeadm's apiserver-kubelet-client)
KUBELET_CLIENT = ("kube-apiserver-kubelet-client", ("kubeadm:cluster-admins",))


def kubelet_client_flags(directory: Path) -> tuple[str, ...]:
    """The API server's flags to reach the simulated kubelets: its client certificate
    (the kubelets' CA is the lab CA) and their addresses (a node's InternalIP: the
    Hostname does not resolve on this host; kubeadm clusters often set the same)."""
    name = KUBELET_CLIENT[0]
    return (f"--kubelet-client-certificate={directory / f'{name}.crt'}",
            f"--kubelet-client-key={directory / f'{name}.key'}",
            "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname")  # fmt: skip


@dataclass(frozen=True)
class LabPKI:
    dir: Path

    @classmethod
    def create(cls, directory: Path, dns_names: tuple[str, ...] = ()) -> LabPKI:
        """A fresh CA and certificates (the lab's data is fresh each run too); the
        server certificate also names ``dns_names`` (the compose stack's host names)."""
        directory.mkdir(parents=True, exist_ok=True)
        ca = new_ca("watchcache-lab-ca")
        ca.write(directory / "ca.crt", directory / "ca.key")
        server = sign(ca, "watchcache", dns_names=(*SERVING_DNS_NAMES, *dns_names),
                      ips=("127.0.0.1", "::1"), server=True)  # fmt: skip
        server.write(directory / "apiserver.crt", directory / "apiserver.key")
        for name, groups in (ADMIN, LEARNER, KUBELET_CLIENT):
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
            *kubelet_client_flags(d),
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


def main(argv: list[str]) -> int:
    """``watchcache pki --dir DIR --server-url URL [--dns-name NAME ...]``: the PKI of a
    stack of replicas (docker-compose), made once and kept: the CA, a serving
    certificate for every name the replicas are reached by, client certificates for the
    administrator, the learner and Prometheus, a shared service-account signing key
    (tokens minted by one replica verify on the other), a token file, and ``DIR/kubeconfig``
    (contexts ``lab-admin`` and ``learner``, certificates embedded) for ``URL``.

    ``--owner UID:GID`` hands the directory's files to the user the replicas run as;
    ``--kubeconfig-owner-of PATH`` gives the kubeconfig to the owner of ``PATH`` (the
    project directory, so the person who ran ``docker-compose up`` can read it)."""
    import argparse
    import os

    from lab.kubeconfig import secure_kubeconfig, write_kubeconfig
    from proxy.server.certs import new_rsa_key_pem

    parser = argparse.ArgumentParser(prog="watchcache pki", description=main.__doc__)
    parser.add_argument("--dir", required=True, type=Path, help="where the files go")
    parser.add_argument("--server-url", required=True, help="the URL the kubeconfig names")
    parser.add_argument("--dns-name", action="append", default=[], help="also in the "
                        "serving certificate (repeatable)")  # fmt: skip
    parser.add_argument("--owner", default="", help="UID:GID to own the files")
    parser.add_argument("--kubeconfig-owner-of", default="", type=Path,
                        help="the kubeconfig belongs to the owner of this path")  # fmt: skip
    a = parser.parse_args(argv)
    directory: Path = a.dir
    if (directory / "ca.crt").exists():
        print(f"pki: {directory} exists, kept", flush=True)
    else:
        pki = LabPKI.create(directory, tuple(a.dns_name))
        name, groups = MONITORING
        ca = _load_ca(directory)
        sign(ca, name, organizations=groups, client=True).write(
            directory / f"{name}.crt", directory / f"{name}.key"
        )
        sa_key = directory / "sa.key"
        sa_key.write_bytes(new_rsa_key_pem())
        sa_key.chmod(0o600)
        text = secure_kubeconfig(a.server_url, pki.dir, (ADMIN[0], LEARNER[0]))
        write_kubeconfig(directory / "kubeconfig", a.server_url, text=text)
        print(f"pki: wrote {directory}", flush=True)
    directory.chmod(0o755)  # the replicas and Prometheus run as other users
    if a.owner:
        uid, _, gid = a.owner.partition(":")
        for path in directory.iterdir():
            if path.name != "kubeconfig":
                os.chown(path, int(uid), int(gid or uid))
        # Prometheus (another user) reads its own client key; it can only read metrics
        (directory / f"{MONITORING[0]}.key").chmod(0o644)
    if a.kubeconfig_owner_of:
        st = a.kubeconfig_owner_of.stat()
        os.chown(directory / "kubeconfig", st.st_uid, st.st_gid)
    return 0


def _load_ca(directory: Path) -> CertKey:
    return CertKey((directory / "ca.crt").read_bytes(), (directory / "ca.key").read_bytes())
