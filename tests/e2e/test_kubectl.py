"""The real kubectl against the server: raw discovery reads, get across namespaces, get
as JSON, create from a file, delete."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import KUBECTL

pytestmark = pytest.mark.etcd


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        [str(KUBECTL), f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kx\n"

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  labels: {{app: demo}}
spec:
  containers:
  - name: c
    image: busybox
"""


def test_kubectl_end_to_end(kubeconfig: Path, tmp_path: Path) -> None:
    # manifests go as JSON, validated by the server (Strict); `kubectl create namespace`
    # and friends send protobuf (test_kubectl_protobuf.py)
    kubectl(kubeconfig, "create", "-f", "-", stdin=NAMESPACE)
    raw = json.loads(kubectl(kubeconfig, "get", "--raw", "/api/v1/namespaces"))
    assert raw["kind"] == "NamespaceList"
    assert "kx" in [n["metadata"]["name"] for n in raw["items"]]

    manifest = tmp_path / "pods.yaml"
    manifest.write_text(POD.format(name="a", ns="kx") + "---" + POD.format(name="b", ns="kx"))
    kubectl(kubeconfig, "create", "-f", str(manifest))

    table = kubectl(kubeconfig, "get", "pods", "-A")
    assert "kx" in table and " a " in f" {table} ".replace("\n", " ")

    columns = kubectl(kubeconfig, "get", "pods", "-n", "kx").splitlines()[0].split()
    assert columns == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]

    as_json = json.loads(kubectl(kubeconfig, "get", "pods", "-n", "kx", "-o", "json"))
    assert [p["metadata"]["name"] for p in as_json["items"]] == ["a", "b"]

    short = json.loads(kubectl(kubeconfig, "get", "po", "-n", "kx", "-l", "app=demo", "-o", "json"))
    assert len(short["items"]) == 2

    out = kubectl(kubeconfig, "delete", "pod", "a", "-n", "kx")
    assert 'pod "a" deleted' in out
    left = json.loads(kubectl(kubeconfig, "get", "pods", "-n", "kx", "-o", "json"))
    assert [p["metadata"]["name"] for p in left["items"]] == ["b"]


def test_kubectl_apply_and_strict_validation(kubeconfig: Path, tmp_path: Path) -> None:
    kubectl(kubeconfig, "apply", "-f", "-", stdin=NAMESPACE.replace("kx", "ka"))
    manifest = POD.format(name="ap", ns="ka")
    kubectl(kubeconfig, "apply", "-f", "-", stdin=manifest)
    kubectl(kubeconfig, "apply", "-f", "-", stdin=manifest.replace("app: demo", "app: demo2"))
    pod = json.loads(kubectl(kubeconfig, "get", "pod", "ap", "-n", "ka", "-o", "json"))
    assert pod["metadata"]["labels"] == {"app": "demo2"}
    bad = manifest.replace("  containers:", "  bogusField: 1\n  containers:")
    proc = subprocess.run(
        [str(KUBECTL), f"--kubeconfig={kubeconfig}", "apply", "-f", "-"],
        input=bad.replace("name: ap", "name: ap2"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert 'unknown field "spec.bogusField"' in proc.stderr


def test_kubectl_reports_not_found(kubeconfig: Path) -> None:
    proc = subprocess.run(
        [str(KUBECTL), f"--kubeconfig={kubeconfig}", "get", "pod", "nope", "-n", "default"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert 'pods "nope" not found' in proc.stderr


def test_kubectl_server_dry_run(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "apply", "-f", "-", stdin=NAMESPACE.replace("kx", "kd"))
    out = kubectl(
        kubeconfig, "apply", "--dry-run=server", "-f", "-", stdin=POD.format(name="dr", ns="kd")
    )
    assert "(server dry run)" in out
    listed = json.loads(kubectl(kubeconfig, "get", "pods", "-n", "kd", "-o", "json"))
    assert listed["items"] == []
