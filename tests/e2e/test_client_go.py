"""A real client-go (Debian 13's, 0.32) against watchcache: the program in
``tests/e2e/clientgo/main.go``, built at test time (``clientgo_build``), runs shared
informers on pods in protobuf with WatchList on, a metadata informer, server-side apply
with its conflict, a CRD and its custom resources through the dynamic client and a
dynamic informer, and leader election on a Lease. It asserts what it saw itself
(including, from its own transport, that pods went over the wire as protobuf and were
listed by WatchList) and prints ``ok <step>`` per step; this test checks it finished.
Against a server with the watch cache and one without (``e2e_server``).
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.e2e.clientgo_build import build_client_go
from tests.integration.conftest import ServerProcess

# a fresh checkout builds client-go first (~5 min on 2 cores): `make slow-test`
pytestmark = [pytest.mark.etcd, pytest.mark.slow, pytest.mark.timeout(1800)]

STEPS = (
    "ok namespace",
    "ok pod informer (protobuf, WatchList): add, update, delete",
    "ok server-side apply (conflict, force) and metadata informer",
    "ok custom resources: dynamic create, patch, delete, informer",
    "ok leader election on a Lease (acquired, released)",
    "ok all",
)


@pytest.fixture(scope="module")
def client_go() -> Path:
    return build_client_go()


def test_a_client_go_program_sees_what_it_asks(
    client_go: Path, kubeconfig: Path, e2e_server: ServerProcess
) -> None:
    suffix = uuid.uuid4().hex[:8]
    env = {**os.environ, "KUBE_FEATURE_WatchListClient": "true"}
    done = subprocess.run(
        [str(client_go), f"--kubeconfig={kubeconfig}", f"--namespace=clientgo-{suffix}",
         f"--group=g{suffix}.example.com"],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert [line for line in lines if line.startswith("ok ")] == list(STEPS), done.stdout
