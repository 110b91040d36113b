"""`watchcache lab` end to end: one real lab (etcd + server + seed) for the module.

The lab runs as a user runs it (a subprocess of the console entry point, in a temp
dir, small data set); every demo must hold what it claims (exit 0); the bundled real
kubectl lists the seeded pods through the lab's kubeconfig; SIGTERM leaves nothing
running.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from lab.apiserver import cli_command
from lab.demos import DEMOS
from lab.process import stop_process
from lab.state import LabState
from tests.integration.conftest import KUBECTL

pytestmark = pytest.mark.etcd

PODS, NODES, NAMESPACES, CONFIGMAPS = 300, 10, 3, 10
WATCHCACHE = cli_command()


@dataclass
class RunningLab:
    dir: Path
    process: subprocess.Popen[str]
    state: LabState
    output: list[str]


def _wait_ready(proc: subprocess.Popen[str], output: list[str]) -> None:
    """Read the lab's output until it says ``ready`` (or exits)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        output.append(line)
        if line.strip() == "ready":
            return
    raise AssertionError(f"lab exited with {proc.wait()} before ready:\n{''.join(output)}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningLab]:
    d = tmp_path_factory.mktemp("lab")
    proc = subprocess.Popen(
        [*WATCHCACHE, "lab", "--dir", str(d), "--pods", str(PODS), "--nodes", str(NODES),
         "--namespaces", str(NAMESPACES), "--configmaps", str(CONFIGMAPS), "--port", "0",
         "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    output: list[str] = []
    try:
        _wait_ready(proc, output)
        yield RunningLab(d, proc, LabState.load(d), output)
    finally:
        stop_process(proc, 60)
        if proc.stdout is not None:
            proc.stdout.close()


def test_lab_is_ready_with_guide_and_state(lab: RunningLab) -> None:
    text = "".join(lab.output)
    assert "watchcache lab is ready" in text and "watchcache lab demo" in text
    assert re.search(r"pods: \d+ created", text)  # retried creates may count as existed
    st = lab.state
    assert st.own_etcd and st.etcd_pids and st.server_pid
    assert all(psutil.pid_exists(p) for p in [st.server_pid, *st.etcd_pids])
    assert Path(st.kubeconfig) == lab.dir / "kubeconfig"


def test_kubectl_lists_the_seeded_pods(lab: RunningLab) -> None:
    r = subprocess.run(
        [str(KUBECTL), "--kubeconfig", lab.state.kubeconfig, "get", "pods", "-A", "--no-headers"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == PODS
    assert {line.split()[0] for line in lines} == {"default", "team-01", "team-02"}


@pytest.mark.parametrize("name", list(DEMOS))
def test_demo_holds_what_it_claims(lab: RunningLab, name: str) -> None:
    r = subprocess.run([*WATCHCACHE, "lab", "demo", name, "--dir", str(lab.dir)],
                       capture_output=True, text=True, timeout=110)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout and "=>" in r.stdout


def test_demo_without_a_lab_says_so(tmp_path: Path) -> None:
    r = subprocess.run([*WATCHCACHE, "lab", "demo", "watch", "--dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 2 and "no running lab" in r.stdout


def test_a_second_lab_in_the_same_dir_refuses(lab: RunningLab) -> None:
    r = subprocess.run([*WATCHCACHE, "lab", "--dir", str(lab.dir), "--port", "0", "--quiet"],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 1 and "already running" in r.stdout
    assert LabState.load(lab.dir).lab_pid == lab.process.pid  # the running lab is untouched


def test_sigterm_stops_everything_it_started(lab: RunningLab) -> None:
    """Runs last in this module: the lab stops its server and etcd, by PID."""
    st = LabState.load(lab.dir)  # etcd-down restarted etcd: fresh PIDs
    pids = [st.server_pid, *st.etcd_pids]
    lab.process.send_signal(signal.SIGTERM)
    assert lab.process.wait(60) == 0
    assert lab.process.stdout is not None
    assert "nothing left running" in lab.process.stdout.read()
    assert not [p for p in pids if psutil.pid_exists(p) and _not_zombie(p)]
    assert not (lab.dir / "state.json").exists() and not (lab.dir / "control.sock").exists()
    assert os.listdir(lab.dir)  # the kubeconfig and logs stay for a look afterwards


def _not_zombie(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
