"""EtcdClient over TLS and mTLS against a real etcd, and clear errors for wrong TLS
material. Certificates are made with the openssl CLI; the TLS etcd is started here
(lab/etcd.py has no hook for extra flags yet) and stopped by PID."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from etcdclient import ConfigError, EtcdClient, Unavailable
from lab.etcd import etcd_binary, free_port
from lab.process import stop_process

pytestmark = pytest.mark.etcd

_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(d: Path, name: str) -> None:
    _openssl("req", "-x509", *_EC, "-keyout", f"{name}.key", "-out", f"{name}.crt",
             "-days", "2", "-subj", f"/CN={name}", cwd=d)  # fmt: skip


def _leaf(d: Path, name: str, ca: str, ext: str) -> None:
    _openssl("req", *_EC, "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}", cwd=d)  # fmt: skip
    (d / f"{name}.ext").write_text(ext)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "2",
             "-extfile", f"{name}.ext", cwd=d)  # fmt: skip


@dataclass
class TLSEtcd:
    endpoint: str
    certs: Path

    def file(self, name: str) -> str:
        return str(self.certs / name)


@pytest.fixture(scope="module")
def tls_etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TLSEtcd]:
    if shutil.which("openssl") is None:
        pytest.fail("the openssl CLI is required for the TLS tests")
    d = tmp_path_factory.mktemp("tls")
    _ca(d, "ca")
    _ca(d, "other-ca")
    san = "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
    _leaf(d, "server", "ca", san + "extendedKeyUsage=serverAuth\n")
    _leaf(d, "client", "ca", "extendedKeyUsage=clientAuth\n")
    _leaf(d, "stranger", "other-ca", "extendedKeyUsage=clientAuth\n")
    port, peer = free_port(), free_port()
    url = f"https://127.0.0.1:{port}"
    args = [
        etcd_binary(), "--name", "tls", "--data-dir", str(d / "data"),
        "--listen-client-urls", url, "--advertise-client-urls", url,
        "--listen-peer-urls", f"http://127.0.0.1:{peer}",
        "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
        "--initial-cluster", f"tls=http://127.0.0.1:{peer}",
        "--cert-file", str(d / "server.crt"), "--key-file", str(d / "server.key"),
        "--trusted-ca-file", str(d / "ca.crt"), "--client-cert-auth",
        "--log-level", "warn",
    ]  # fmt: skip
    with open(d / "etcd.log", "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        yield TLSEtcd(url, d)
    finally:
        stop_process(proc)


async def test_mtls_round_trip(tls_etcd: TLSEtcd) -> None:
    t = tls_etcd
    async with EtcdClient(
        [t.endpoint], ca_file=t.file("ca.crt"), cert_file=t.file("client.crt"),
        key_file=t.file("client.key"), dial_timeout=20,
    ) as c:  # fmt: skip
        rev = await c.put(b"/tls", b"secret")
        got = await c.get(b"/tls")
        assert got.kv is not None and got.kv.value == b"secret" and got.kv.mod_revision == rev
        async with c.watch(b"/tls", start_revision=rev) as w:
            async with asyncio.timeout(10):
                batch = await anext(w)
        assert batch.events[0].kv.value == b"secret"


@pytest.mark.parametrize(
    ("ca", "cert"),
    [("other-ca", "client"), ("ca", None), ("ca", "stranger")],
    ids=["server-not-trusted", "no-client-cert", "client-cert-of-another-ca"],
)
async def test_wrong_tls_material_is_a_clear_unavailable(
    tls_etcd: TLSEtcd, ca: str, cert: str | None
) -> None:
    t = tls_etcd
    await _until_up(t)
    c = EtcdClient(
        [t.endpoint], ca_file=t.file(f"{ca}.crt"),
        cert_file=t.file(f"{cert}.crt") if cert else None,
        key_file=t.file(f"{cert}.key") if cert else None,
        dial_timeout=1.0, request_timeout=1.0,
    )  # fmt: skip
    t0 = time.monotonic()
    try:
        with pytest.raises(Unavailable) as e:
            await c.connect()
    finally:
        await c.close()
    assert time.monotonic() - t0 < 3
    message = str(e.value).lower()
    assert t.endpoint in message
    assert any(w in message for w in ("ssl", "tls", "certificate", "handshake")), message


async def test_plaintext_client_against_tls_etcd_is_unavailable(tls_etcd: TLSEtcd) -> None:
    await _until_up(tls_etcd)
    plain = tls_etcd.endpoint.replace("https://", "http://")
    c = EtcdClient([plain], dial_timeout=1.0, request_timeout=1.0)
    try:
        with pytest.raises(Unavailable):
            await c.connect()
    finally:
        await c.close()


def test_unreadable_tls_files_are_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ca_file"):
        EtcdClient(["https://127.0.0.1:2379"], ca_file=str(tmp_path / "missing.crt"))
    with pytest.raises(ConfigError, match="together"):
        EtcdClient(["https://127.0.0.1:2379"], cert_file=str(tmp_path / "c.crt"))
    with pytest.raises(ConfigError, match="bad etcd endpoint"):
        EtcdClient(["ftp://127.0.0.1:2379"])


async def _until_up(t: TLSEtcd) -> None:
    """Wait for the TLS etcd with good material (it may still be starting)."""
    async with EtcdClient(
        [t.endpoint], ca_file=t.file("ca.crt"), cert_file=t.file("client.crt"),
        key_file=t.file("client.key"), dial_timeout=20,
    ):  # fmt: skip
        pass
