"""Security: a small fuzzer over the authentication headers and client certificates of
the secure port. Whatever arrives, a protected resource is never served to anyone but
the one admin token; answers are 401/403 Statuses (or upstream's 500 for impersonation
headers without a user), never a crash; the token is never echoed back; certificates
from another CA, expired ones and a server certificate used as a client certificate
are refused."""

from __future__ import annotations

import datetime as dt
import random
import ssl
import string
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import jwt
import pytest

from lab.etcd import EtcdCluster
from proxy.server.certs import new_ca, sign
from tests.integration.conftest import ServerProcess, start_server

ADMIN_TOKEN = "fuzz-admin-token-0123456789"
SECRETS = "/api/v1/namespaces/kube-system/secrets"


@pytest.fixture(scope="module")
def fuzz_server(
    etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServerProcess, Path]]:
    d = tmp_path_factory.mktemp("fuzz")
    ca = new_ca("fuzz-ca")
    (d / "ca.crt").write_bytes(ca.cert_pem)
    (d / "ca.key").write_bytes(ca.key_pem)
    (d / "tokens.csv").write_text(f"{ADMIN_TOKEN},root,0,system:masters\n")
    server = start_server(
        etcd.endpoints, None, "--secure-port=0", f"--cert-dir={d / 'certs'}",
        f"--client-ca-file={d / 'ca.crt'}", f"--token-auth-file={d / 'tokens.csv'}",
    )  # fmt: skip
    try:
        yield server, d
    finally:
        server.stop()


def _junk(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + " .:-_/=+,\"'%\t"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))


def _headers(rng: random.Random) -> dict[str, str]:
    forged = jwt.encode({"iss": "https://kubernetes.default.svc.cluster.local",
                         "sub": "system:serviceaccount:kube-system:default",
                         "exp": 4102444800}, "not-the-key-" * 4, algorithm="HS256")  # fmt: skip
    choices = [
        lambda: {"Authorization": f"Bearer {_junk(rng)}"},
        lambda: {"Authorization": _junk(rng)},
        lambda: {"Authorization": f"Bearer {ADMIN_TOKEN[:-1]}"},  # one character short
        lambda: {"Authorization": f"Basic {_junk(rng)}"},
        lambda: {"Authorization": f"Bearer {forged}"},
        lambda: {"Authorization": "Bearer eyJhbGciOiJub25lIn0.e30."},  # alg none
        lambda: {"Impersonate-User": "root", "Impersonate-Group": "system:masters"},
        lambda: {"Impersonate-Group": _junk(rng) or "g"},
        lambda: {"Impersonate-User": _junk(rng) or "u", "Impersonate-Extra-" + "x": _junk(rng)},
        lambda: {"X-Remote-User": "root", "X-Remote-Group": "system:masters"},
    ]
    return rng.choice(choices)()


async def test_fuzzed_credentials_never_reach_a_secret(
    fuzz_server: tuple[ServerProcess, Path],
) -> None:
    server, d = fuzz_server
    ctx = ssl.create_default_context(cafile=str(d / "certs" / "apiserver.crt"))
    rng = random.Random(12)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as http:
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        async with http.get(server.secure_url + SECRETS, headers=admin) as resp:
            assert resp.status == 200
        for _ in range(150):
            headers = _headers(rng)
            try:
                async with http.get(server.secure_url + SECRETS, headers=headers) as resp:
                    body = await resp.text()
                    status = resp.status
            except (aiohttp.ClientError, ValueError):
                continue  # a header the client library itself refuses to send
            assert status in (401, 403, 500), (headers, status, body)
            if status == 500:  # upstream's answer to impersonation without a user
                assert "without impersonating a user" in body and "Impersonate-User" not in headers
            else:
                assert '"kind":"Status"' in body
            assert ADMIN_TOKEN[:-1] not in body
        async with http.get(server.secure_url + "/healthz") as resp:
            assert resp.status == 200  # the server is still there


def _client_ctx(d: Path, cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(d / "certs" / "apiserver.crt"))
    ctx.load_cert_chain(cert, key)
    return ctx


@pytest.mark.parametrize("kind", ["other-ca", "expired", "server-usage"])
async def test_bad_client_certificates_are_refused(
    fuzz_server: tuple[ServerProcess, Path], kind: str, tmp_path: Path
) -> None:
    server, d = fuzz_server
    good_ca_pem = (d / "ca.crt").read_bytes(), (d / "ca.key").read_bytes()
    from proxy.server.certs import CertKey

    ca = CertKey(*good_ca_pem) if kind != "other-ca" else new_ca("stranger")
    past = dt.datetime.now(dt.UTC) - dt.timedelta(days=2)
    if kind == "expired":
        cert = sign(ca, "root", organizations=["system:masters"], client=True,
                    not_before=past, not_after=past + dt.timedelta(days=1))  # fmt: skip
    elif kind == "server-usage":
        cert = sign(ca, "root", organizations=["system:masters"], server=True)
    else:
        cert = sign(ca, "root", organizations=["system:masters"], client=True)
    cert.write(tmp_path / "c.crt", tmp_path / "c.key")
    ctx = _client_ctx(d, tmp_path / "c.crt", tmp_path / "c.key")
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as http:
        try:
            async with http.get(server.secure_url + SECRETS) as resp:
                status = resp.status
        except aiohttp.ClientError:
            status = 0  # the TLS handshake refused the certificate
    assert status in (0, 401, 403)
