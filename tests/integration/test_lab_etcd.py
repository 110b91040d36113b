"""The etcd launcher itself: start, kill and restart members by PID."""

from __future__ import annotations

import pytest

from lab.etcd import EtcdCluster

pytestmark = pytest.mark.etcd


def test_single_member_is_healthy(etcd: EtcdCluster) -> None:
    assert etcd.is_healthy(etcd.members[0])
    assert etcd.version >= (3, 4, 0)


def test_restart_member_keeps_data_dir(etcd_own: EtcdCluster) -> None:
    m = etcd_own.members[0]
    pid = m.pid
    etcd_own.kill_member(m)
    assert not etcd_own.is_healthy(m)
    etcd_own.restart_member(m)
    assert etcd_own.is_healthy(m)
    assert m.pid != pid
    assert (m.data_dir / "member").is_dir()


def test_a_cluster_that_never_gets_healthy_leaves_nothing_running() -> None:
    cluster = EtcdCluster(size=1)
    try:
        with pytest.raises(TimeoutError):
            cluster.start(timeout=0)  # spawned, then not healthy in time
        assert [m.process for m in cluster.members] == [None]  # stopped by PID
    finally:
        cluster.stop()
