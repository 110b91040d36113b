"""Everything around the lab's extension API server: its PKI, its process, and its
registration with watchcache.

- ``ExtensionPKI``: a serving CA and certificate for ``watchcache-metrics.kube-system.svc``
  (the name the aggregator verifies), a front-proxy CA and the front-proxy client
  certificate (CN ``front-proxy-client``) watchcache presents — kubeadm's layout.
  ``server_flags()`` are the watchcache flags that go with them.
- ``ExtensionServer``: ``python -m lab.extension.server`` as a child process in its own
  session, stopped by its PID.
- ``register``: the Service (``type: ExternalName``, ``externalName: localhost``: the
  lab has no kube-proxy, and an ExternalName Service is resolved to its name by
  kube-aggregator's default resolver, so no extension is needed) and the APIService
  ``v1beta1.metrics.k8s.io`` with the serving CA as ``caBundle``.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.apiserver import REPO
from lab.etcd import free_port
from lab.extension.metrics import GROUP, VERSION
from lab.process import stop_process
from proxy.server.certs import new_ca, sign

__all__ = [
    "FRONT_PROXY_CN",
    "SERVICE_NAME",
    "SERVICE_NAMESPACE",
    "ExtensionPKI",
    "ExtensionServer",
    "apiservice_object",
    "register",
    "service_object",
    "start_extension",
]

JSON = dict[str, Any]
SERVICE_NAMESPACE, SERVICE_NAME = "kube-system", "watchcache-metrics"
FRONT_PROXY_CN = "front-proxy-client"
APISERVICE_NAME = f"{VERSION}.{GROUP}"


@dataclass(frozen=True)
class ExtensionPKI:
    dir: Path

    @classmethod
    def create(cls, directory: Path) -> ExtensionPKI:
        directory.mkdir(parents=True, exist_ok=True)
        serving_ca = new_ca("watchcache-metrics-ca")
        serving_ca.write(directory / "extension-ca.crt", directory / "extension-ca.key")
        names = (f"{SERVICE_NAME}.{SERVICE_NAMESPACE}.svc", "localhost")
        sign(serving_ca, SERVICE_NAME, dns_names=names, ips=("127.0.0.1",), server=True).write(
            directory / "extension.crt", directory / "extension.key"
        )
        front_proxy_ca = new_ca("front-proxy-ca")
        front_proxy_ca.write(directory / "front-proxy-ca.crt", directory / "front-proxy-ca.key")
        sign(front_proxy_ca, FRONT_PROXY_CN, client=True).write(
            directory / "front-proxy-client.crt", directory / "front-proxy-client.key"
        )
        return cls(directory)

    def server_flags(self) -> tuple[str, ...]:
        """watchcache's front-proxy flags (kubeadm's values)."""
        d = self.dir
        return (
            f"--requestheader-client-ca-file={d / 'front-proxy-ca.crt'}",
            f"--requestheader-allowed-names={FRONT_PROXY_CN}",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={d / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={d / 'front-proxy-client.key'}",
        )

    @property
    def ca_bundle(self) -> bytes:
        return (self.dir / "extension-ca.crt").read_bytes()


@dataclass
class ExtensionServer:
    """The extension server process (``start``/``stop``, by its own PID only)."""

    source_url: str
    pki: ExtensionPKI
    port: int = field(default_factory=free_port)
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        d = self.pki.dir
        return [sys.executable, "-m", "lab.extension.server", f"--source={self.source_url}",
                f"--port={self.port}", f"--tls-cert-file={d / 'extension.crt'}",
                f"--tls-private-key-file={d / 'extension.key'}",
                f"--requestheader-client-ca-file={d / 'front-proxy-ca.crt'}",
                f"--requestheader-allowed-names={FRONT_PROXY_CN}"]  # fmt: skip

    def start(self, timeout: float = 30.0) -> ExtensionServer:
        """Spawn it and wait until its port accepts connections."""
        log = open(self.log_path or os.devnull, "ab")  # noqa: SIM115 - handed to the child
        try:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )  # fmt: skip
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the extension server exited with {self.process.returncode}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)  # process start-up: nothing to await but the port
        self.stop()
        raise RuntimeError(f"the extension server did not listen on {self.port} in {timeout}s")

    def stop(self) -> int | None:
        return stop_process(self.process, 10.0) if self.process is not None else None


def service_object(port: int) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE_NAME, "namespace": SERVICE_NAMESPACE},
        "spec": {"type": "ExternalName", "externalName": "localhost",
                 "ports": [{"name": "https", "port": port, "protocol": "TCP"}]},
    }  # fmt: skip


def apiservice_object(port: int, ca_bundle: bytes) -> JSON:
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": APISERVICE_NAME},
        "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 100,
                 "versionPriority": 100, "caBundle": base64.b64encode(ca_bundle).decode(),
                 "service": {"namespace": SERVICE_NAMESPACE, "name": SERVICE_NAME,
                             "port": port}},
    }  # fmt: skip


def _put_or_create(base_url: str, collection: str, obj: JSON) -> None:
    """Create ``obj``; replace the stored one when it exists (a previous run's)."""
    body = json.dumps(obj).encode()
    headers = {"Content-Type": "application/json"}
    try:
        req = urllib.request.Request(base_url + collection, body, headers, method="POST")
        urllib.request.urlopen(req, timeout=10).close()
    except urllib.error.HTTPError as e:
        if e.code != 409:
            raise
        url = f"{base_url}{collection}/{obj['metadata']['name']}"
        with urllib.request.urlopen(url, timeout=10) as r:
            current = json.load(r)
        obj = {
            **obj,
            "metadata": {
                **obj["metadata"],
                "resourceVersion": current["metadata"]["resourceVersion"],
            },
        }
        req = urllib.request.Request(url, json.dumps(obj).encode(), headers, method="PUT")
        urllib.request.urlopen(req, timeout=10).close()  # fmt: skip


def register(base_url: str, port: int, ca_bundle: bytes) -> None:
    """The Service and the APIService, through watchcache's plain port (``base_url``)."""
    _put_or_create(base_url, f"/api/v1/namespaces/{SERVICE_NAMESPACE}/services",
                   service_object(port))  # fmt: skip
    _put_or_create(base_url, "/apis/apiregistration.k8s.io/v1/apiservices",
                   apiservice_object(port, ca_bundle))  # fmt: skip


def start_extension(server_url: str, pki: ExtensionPKI, log_path: Path | None) -> ExtensionServer:
    """Start the extension server reading from ``server_url`` (watchcache's plain port)
    and register it there; blocking (run it in a thread from async code)."""
    extension = ExtensionServer(server_url, pki, log_path=log_path).start()
    try:
        register(server_url, extension.port, pki.ca_bundle)
    except BaseException:
        extension.stop()
        raise
    return extension
