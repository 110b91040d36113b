"""e2e fixtures: a private ``watchcache serve`` (subprocess, real etcd) per module, and a
kubeconfig for the real kubectl (the lab's). Server helpers come from
tests/integration/conftest.py."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lab.etcd import EtcdCluster
from lab.kubeconfig import write_kubeconfig
from tests.integration.conftest import KUBECTL, ServerProcess, start_server

__all__ = ["KUBECTL", "run_kubectl", "wait_until", "write_kubeconfig"]


def run_kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """The real kubectl against ``kubeconfig``, its output captured as text."""
    command = [str(KUBECTL), "--kubeconfig", str(kubeconfig), *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def wait_until(what: str, check: Callable[[], object], within: float = 30.0) -> None:
    """Poll ``check`` until it is true; AssertionError naming ``what`` after ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"not within {within} s: {what}")


@pytest.fixture(scope="module", params=["uncached", "cached"])
def e2e_server(etcd: EtcdCluster, request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    """A server of its own (a unique prefix: lists see only this module's objects), once
    with every read from etcd (``--watch-cache=false``) and once with the watch cache."""
    flag = "--watch-cache=false" if request.param == "uncached" else "--watch-cache=true"
    with start_server(etcd.endpoints, None, flag) as proc:
        yield proc


@pytest.fixture
def kubeconfig(e2e_server: ServerProcess, tmp_path: Path) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", e2e_server.url)
