"""`watchcache lab` end to end: one real lab (etcd + server + seed) for the module.

The lab runs as a user runs it (a subprocess of the console entry point, in a temp
dir, small data set); every demo must hold what it claims (exit 0); the bundled real
kubectl lists the seeded pods through the lab's kubeconfig; SIGTERM leaves nothing
running.
"""

from __future__ import annotations

import http.server
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import psutil  # type: ignore[import-untyped]
import pytest

from lab.apiserver import cli_command
from lab.demos import DEMOS
from lab.process import stop_process
from lab.state import LabState
from tests.csr import csr_object, key_pem, new_request
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


def test_the_guide_fits_80_columns(lab: RunningLab) -> None:
    """Except where a path the user chose is long (this test's lab dir, the venv)."""
    long = [line for line in lab.output if len(line.rstrip("\n")) > 80
            and str(lab.dir) not in line and "export PATH=" not in line]  # fmt: skip
    assert not long


def test_a_lab_on_a_taken_port_says_which_and_how(tmp_path: Path) -> None:
    """Another server answering 200 on the port: the lab must not take it for its own,
    and must say which port is taken and how to choose another, not an ExceptionGroup."""
    impostor = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    threading.Thread(target=impostor.serve_forever, daemon=True).start()
    port = int(impostor.server_address[1])
    try:
        r = subprocess.run(
            [*WATCHCACHE, "lab", "--dir", str(tmp_path), "--pods", "10", "--nodes", "2",
             "--namespaces", "1", "--configmaps", "1", "--port", str(port), "--quiet"],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
    finally:
        impostor.shutdown()
        impostor.server_close()
    assert r.returncode == 1, r.stdout
    assert f"port {port} is taken by another process" in r.stdout
    assert f"--port {port + 1}" in r.stdout
    assert "ExceptionGroup" not in r.stdout and "seeding" not in r.stdout
    assert "ready" not in r.stdout.splitlines()


class _Impostor(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


def _raw(lab: RunningLab, path: str, timeout: float = 30) -> str:
    r = subprocess.run([str(KUBECTL), "--kubeconfig", lab.state.kubeconfig, "get", "--raw", path],
                       capture_output=True, text=True, timeout=timeout)  # fmt: skip
    return r.stdout + r.stderr


def test_a_watch_from_resource_version_1_is_too_old(lab: RunningLab) -> None:
    """The course's experiment: the lab's watch window starts after the seeding, as a
    real cluster's (not at revision 1, which replayed every seeded pod)."""
    out = _raw(lab, "/api/v1/pods?watch=1&resourceVersion=1")
    event = orjson.loads(out.splitlines()[0])
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
    assert re.fullmatch(r"too old resource version: 1 \(\d+\)", event["object"]["message"])
    oldest = int(event["object"]["message"].split("(")[1].rstrip(")"))
    assert oldest > PODS  # the window starts after the seeding


def test_the_course_bookmark_command_shows_a_bookmark(lab: RunningLab) -> None:
    """Thanks to the simulated cluster's churn the pods cache moves within the watch, so
    the BOOKMARK due 2 s before timeoutSeconds is sent."""
    out = _raw(lab, "/api/v1/pods?watch=1&resourceVersion=&timeoutSeconds=6"
                    "&allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dno-such-node")
    events = [orjson.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [e["type"] for e in events] == ["BOOKMARK"], out[-500:]


def test_the_simulated_cluster_keeps_a_lease_per_node(lab: RunningLab) -> None:
    """Each node agent's first renewal comes within its 10 s interval (spread out)."""
    deadline = time.monotonic() + 25
    while True:
        out = _raw(lab, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
        if len(orjson.loads(out)["items"]) == NODES or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert len(orjson.loads(out)["items"]) == NODES


def test_kubectl_lists_the_seeded_pods(lab: RunningLab) -> None:
    r = subprocess.run(
        [str(KUBECTL), "--kubeconfig", lab.state.kubeconfig, "get", "pods", "-A", "--no-headers"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == PODS
    assert {line.split()[0] for line in lines} == {"default", "team-01", "team-02"}


def _kubectl(lab: RunningLab, *args: str) -> str:
    r = subprocess.run([str(KUBECTL), "--kubeconfig", lab.state.kubeconfig, *args],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_first_hour_commands_answer_as_on_a_cluster(lab: RunningLab) -> None:
    """docs/lab.md 'The first hour', over HTTPS as the admin: a token for the default
    ServiceAccount (the serviceaccounts controller made it), kube-root-ca.crt holding the
    lab CA, kubectl top through the aggregator, a pod's Events in describe, its log and
    an exec in it through its node's kubelet."""
    deadline = time.monotonic() + 30
    while "kube-root-ca.crt" not in _raw(lab, "/api/v1/namespaces/team-01/configmaps"):
        assert time.monotonic() < deadline, "no kube-root-ca.crt in team-01"
        time.sleep(0.5)
    token = _kubectl(lab, "create", "token", "default", "-n", "team-01").strip()
    assert token.startswith("eyJ") and token.count(".") == 2
    cm = orjson.loads(_kubectl(lab, "get", "cm", "kube-root-ca.crt", "-n", "team-01", "-o",
                               "json"))  # fmt: skip
    assert cm["data"]["ca.crt"] == (Path(lab.state.pki_dir) / "ca.crt").read_text()
    top = _kubectl(lab, "top", "pods", "-A").splitlines()
    assert top[0].split() == ["NAMESPACE", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    assert len(top) > 1
    nodes = _kubectl(lab, "top", "nodes").splitlines()
    assert nodes[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    assert len(nodes) == NODES + 1
    _kubectl(lab, "run", "first-hour", "--image=nginx")
    _kubectl(lab, "wait", "--for=condition=Ready", "pod/first-hour", "--timeout=40s")
    deadline = time.monotonic() + 20
    while "Started container first-hour" not in (out := _kubectl(lab, "describe", "pod",
                                                                  "first-hour")):  # fmt: skip
        assert time.monotonic() < deadline, out
        time.sleep(0.5)
    events = out.split("\nEvents:", 1)[1]
    assert "default-scheduler  Successfully assigned default/first-hour to node-" in events
    # the node's kubelet API, through the server (tests/e2e/test_kubelet_api.py has each
    # command; here: the lab's own wiring of certificates and node addresses)
    assert "Configuration complete" in _kubectl(lab, "logs", "first-hour")
    sa = "/var/run/secrets/kubernetes.io/serviceaccount"
    assert _kubectl(lab, "exec", "first-hour", "--", "cat", f"{sa}/namespace") == "default"
    _kubectl(lab, "delete", "pod", "first-hour", "--wait=false")


def test_an_approved_csr_logs_in_with_the_lab_ca(lab: RunningLab, tmp_path: Path) -> None:
    """docs/lab.md 'Approve a certificate': the lab's signer issues an approved
    kube-apiserver-client CSR from the lab CA, and the server, which trusts that CA for
    client certificates, authenticates the holder as the request's subject."""
    import base64
    import json
    import ssl
    import urllib.request

    key, request = new_request("jane", "dev")
    csr = csr_object("jane", request, ["client auth"])
    (tmp_path / "csr.json").write_text(json.dumps(csr))
    _kubectl(lab, "apply", "-f", str(tmp_path / "csr.json"))
    assert _kubectl(lab, "certificate", "approve", "jane").strip() == (
        "certificatesigningrequest.certificates.k8s.io/jane approved")
    deadline = time.monotonic() + 30
    while "Approved,Issued" not in (row := _kubectl(lab, "get", "csr", "jane", "--no-headers")):
        assert time.monotonic() < deadline, row
        time.sleep(0.5)
    assert row.split()[3] == "lab-admin"  # REQUESTOR: who created it
    cert = base64.b64decode(orjson.loads(_kubectl(lab, "get", "csr", "jane", "-o", "json"))[
        "status"]["certificate"])  # fmt: skip
    (tmp_path / "jane.crt").write_bytes(cert)
    (tmp_path / "jane.key").write_bytes(key_pem(key))
    ctx = ssl.create_default_context(cafile=str(Path(lab.state.pki_dir) / "ca.crt"))
    ctx.load_cert_chain(tmp_path / "jane.crt", tmp_path / "jane.key")
    review = urllib.request.Request(
        f"{lab.state.secure_url}/apis/authentication.k8s.io/v1/selfsubjectreviews",
        data=b'{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}',
        headers={"Content-Type": "application/json"}, method="POST")  # fmt: skip
    with urllib.request.urlopen(review, context=ctx, timeout=10) as resp:
        user = orjson.loads(resp.read())["status"]["userInfo"]
    assert user == {"username": "jane", "groups": ["dev", "system:authenticated"]}


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
