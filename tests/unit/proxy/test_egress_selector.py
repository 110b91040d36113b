"""``--egress-selector-config-file`` (``proxy.server.egressselector``): what is served,
what is refused with a message that says so, and the HTTP CONNECT dial against a real
socket (the proxy's answers, as konnectivity-server gives them)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from proxy.kube.pod_connect import is_global_unicast, split_scheme_name_port
from proxy.server.egressselector import EgressDialError, HTTPConnectDialer, load_egress_selector
from proxy.server.settings import ConfigError

HEAD = "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n"


def _config(tmp_path: Path, selections: str) -> str:
    path = tmp_path / "egress.yaml"
    path.write_text(HEAD + "egressSelections:\n" + selections)
    return str(path)


def test_no_file_and_direct_dial_directly(tmp_path: Path) -> None:
    assert load_egress_selector("").cluster_transport() is None
    direct = _config(tmp_path, "- name: cluster\n  connection: {proxyProtocol: Direct}\n")
    assert load_egress_selector(direct).cluster is None


def test_http_connect_over_uds_and_tcp(tmp_path: Path) -> None:
    uds = _config(tmp_path, "- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n"
                            "    transport: {uds: {udsName: /run/k.sock}}\n")  # fmt: skip
    assert load_egress_selector(uds).cluster == HTTPConnectDialer(uds="/run/k.sock")
    tcp = _config(tmp_path, "- name: cluster\n  connection:\n    proxyProtocol: HTTPConnect\n"
                            "    transport: {tcp: {url: 'http://127.0.0.1:8131'}}\n")  # fmt: skip
    assert load_egress_selector(tcp).cluster == HTTPConnectDialer(tcp=("127.0.0.1", 8131))


@pytest.mark.parametrize(("selections", "message"), [
    ("- name: cluster\n  connection: {proxyProtocol: GRPC, transport: {uds: {udsName: x}}}\n",
     "proxyProtocol 'GRPC' is not supported"),
    ("- name: cluster\n  connection: {proxyProtocol: HTTPConnect}\n", "exactly one of"),
    ("- name: etcd\n  connection: {proxyProtocol: HTTPConnect, transport: {uds: {udsName: x}}}\n",
     "the etcd egress can only be Direct"),
    ("- name: pods\n  connection: {proxyProtocol: Direct}\n", "unknown egress selection 'pods'"),
    ("- name: cluster\n  connection: {proxyProtocol: HTTPConnect, transport: {tcp: {url: "
     "'https://k:8131'}}}\n", "TLS to the proxy is not supported"),
])  # fmt: skip
def test_what_is_refused_says_why(tmp_path: Path, selections: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_egress_selector(_config(tmp_path, selections))


async def _proxy(tmp_path: Path, answer: bytes) -> tuple[asyncio.Server, list[bytes], str]:
    seen: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(answer)
        if answer.startswith(b"HTTP/1.1 200"):
            writer.write(await reader.readuntil(b"!"))  # an echo through the tunnel
        await writer.drain()
        writer.close()

    path = str(tmp_path / "k.sock")
    return await asyncio.start_unix_server(serve, path), seen, path


async def test_connect_tunnel_and_its_refusal(tmp_path: Path) -> None:
    server, seen, path = await _proxy(tmp_path, b"HTTP/1.1 200 Connection established\r\n\r\n")
    async with server:
        sock = await HTTPConnectDialer(uds=path).dial("10.244.1.7", 80)
        loop = asyncio.get_running_loop()
        await loop.sock_sendall(sock, b"ping!")
        assert await loop.sock_recv(sock, 16) == b"ping!"
        sock.close()
    assert seen == [b"CONNECT 10.244.1.7:80 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"]
    server, _, path = await _proxy(tmp_path, b"HTTP/1.1 503 connection refused\r\n\r\n")
    async with server:
        with pytest.raises(EgressDialError, match=f"proxy error from {path} while dialing "
                           "10.244.1.7:81, code 503: 503 connection refused"):  # fmt: skip
            await HTTPConnectDialer(uds=path).dial("10.244.1.7", 81)
    with pytest.raises(EgressDialError, match=r"dial .*No such file"):
        await HTTPConnectDialer(uds=str(tmp_path / "absent.sock")).dial("10.244.1.7", 80)


def test_names_and_addresses_as_upstream() -> None:
    assert split_scheme_name_port("web") == ("", "web", "")
    assert split_scheme_name_port("https:web:443") == ("https", "web", "443")
    assert split_scheme_name_port("http:web") == ("", "http", "web")  # name:port
    assert split_scheme_name_port("ftp:web:21") is None
    assert split_scheme_name_port("a:b:c:d") is None
    assert [is_global_unicast(a) for a in ("10.244.0.5", "127.0.0.1", "169.254.1.1",
                                           "0.0.0.0", "224.0.0.1", "::1", "fd00::5", "x")] == [
        True, False, False, False, False, False, True, False]  # fmt: skip
