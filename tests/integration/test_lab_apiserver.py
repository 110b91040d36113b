"""The launcher of ``watchcache serve`` (lab.apiserver.APIServer) that the lab, the
benchmark and every suite use: ready wait, errors that carry the server's log, stop by
PID with the exit code."""

from __future__ import annotations

import http.server
import threading

import pytest

from lab.apiserver import APIServer, PortTaken, ServerNotReady
from lab.etcd import EtcdCluster

pytestmark = pytest.mark.etcd


def test_a_server_that_exits_is_reported_with_its_log() -> None:
    server = APIServer(["http://127.0.0.1:1"], extra_args=("--no-such-flag",))
    with pytest.raises(ServerNotReady) as err:
        server.start(timeout=30)
    assert "exited with 2" in str(err.value)
    assert "--no-such-flag" in str(err.value)  # the CLI's own complaint, from the log
    assert not server.running


def test_ready_then_stopped_by_pid_with_a_clean_exit(etcd: EtcdCluster, etcd_prefix: str) -> None:
    with APIServer(etcd.endpoints, etcd_prefix, extra_args=("--watch-cache=false",)) as server:
        assert server.is_ready() and server.running
        assert server.url.endswith(f":{server.port}")
    assert not server.running
    assert server.stop() == 0  # SIGTERM is a clean shutdown; stopping again is harmless
    assert "serving on " in server.log()


class _Impostor(http.server.BaseHTTPRequestHandler):
    """Another server on the port: answers 200 to everything, /readyz included."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_taken_port_is_reported_never_mistaken_for_ready(
    etcd: EtcdCluster, etcd_prefix: str
) -> None:
    """The lab once polled /readyz, got 200 from a foreign server on 8080 and seeded into
    it: readiness must come from the process the launcher started."""
    impostor = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    thread = threading.Thread(target=impostor.serve_forever, daemon=True)
    thread.start()
    try:
        port = impostor.server_address[1]
        server = APIServer(etcd.endpoints, etcd_prefix, port=int(port))
        with pytest.raises(PortTaken) as err:
            server.start(timeout=30)
        assert err.value.port == port
        assert f"127.0.0.1:{port} is already in use" in str(err.value)  # the server's words
        assert "--port" in str(err.value)
        assert "Traceback" not in server.log()
        assert not server.running
    finally:
        impostor.shutdown()
        impostor.server_close()
