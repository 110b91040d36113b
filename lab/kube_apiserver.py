"""A kube-apiserver binary the user provides, started by the bench as its reference.

``watchcache bench --reference-binary PATH`` starts it on an etcd of its own, HTTPS only
(its self-signed certificate from ``--cert-dir``), with the static token file the bench
gives watchcache too, so both answer the same bearer token through the same kind of
chain (token authenticator, RBAC, the user in ``system:masters``). Its service-account
key is generated here (kube-apiserver refuses to start without one). Nothing of
Kubernetes is fetched or built by the project: the binary is the user's.
"""

from __future__ import annotations

import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from lab.etcd import free_port
from lab.process import stop_process

__all__ = ["KubeAPIServer", "insecure_context"]


def insecure_context() -> ssl.SSLContext:
    """TLS without verifying the peer: the bench's own servers' self-signed certificates
    on loopback (wrk does not verify either, so both clients do the same work)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _service_account_key(path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()))  # fmt: skip


@dataclass
class KubeAPIServer:
    """One kube-apiserver process: ``start`` waits until ``/readyz`` answers 200 to the
    token; ``stop`` ends it by its own PID."""

    binary: Path
    etcd_servers: Sequence[str]
    work: Path
    token_file: Path
    token: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("kube-apiserver was not started")
        return self.process.pid

    def command(self) -> list[str]:
        key = self.work / "service-account.key"
        return [
            str(self.binary), f"--etcd-servers={','.join(self.etcd_servers)}",
            "--bind-address=127.0.0.1", f"--secure-port={self.port}",
            f"--cert-dir={self.work / 'certs'}", f"--token-auth-file={self.token_file}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={key}", f"--service-account-signing-key-file={key}",
            "--service-cluster-ip-range=10.96.0.0/12",
        ]  # fmt: skip

    def start(self, timeout: float = 120.0) -> KubeAPIServer:
        self.work.mkdir(parents=True, exist_ok=True)
        _service_account_key(self.work / "service-account.key")
        with open(self.work / "kube-apiserver.log", "ab") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"kube-apiserver exited with {self.process.returncode}; "
                                   f"log {self.work / 'kube-apiserver.log'}")  # fmt: skip
            if self._ready():
                return self
            time.sleep(0.2)  # process start-up: nothing to await but the port
        self.stop()
        raise RuntimeError(f"kube-apiserver not ready after {timeout}s; "
                           f"log {self.work / 'kube-apiserver.log'}")  # fmt: skip

    def _ready(self) -> bool:
        request = urllib.request.Request(self.url + "/readyz",
                                         headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=2.0, context=insecure_context()) as r:
                return int(r.status) == 200
        except (urllib.error.URLError, OSError, TimeoutError):
            return False

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, 15.0)
