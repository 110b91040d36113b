"""The launcher of ``watchcache serve`` (lab.apiserver.APIServer) that the lab, the
benchmark and every suite use: ready wait, errors that carry the server's log, stop by
PID with the exit code."""

from __future__ import annotations

import pytest

from lab.apiserver import APIServer, ServerNotReady
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
