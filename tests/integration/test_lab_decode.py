"""``watchcache lab decode KEY [--revision N]`` against a real server and etcd: a Pod
applied with the real kubectl (server-side, so it has managedFields) is read back from
etcd as the course reads it — the ``k8s\\0`` + runtime.Unknown envelope, the object as
YAML, its managedFields — at the newest revision and at an older one; a server with
``--storage-media-type=application/json`` stores plain JSON; the bundled etcdctl's
``--print-value-only`` piped in decodes the same."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import orjson
import pytest

from lab.apiserver import cli_command
from lab.etcd import EtcdCluster
from lab.kubeconfig import write_kubeconfig
from tests.integration.conftest import KUBECTL, ServerFactory

pytestmark = pytest.mark.etcd

ETCDCTL = KUBECTL.parent / "etcdctl"
POD = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, labels: {app: web}}
spec: {containers: [{name: web, image: "nginx:1.27"}]}
"""


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    r = subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), *args], input=stdin,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout


def _decode(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(cli_command("lab", "decode", *args), input=stdin, capture_output=True,
                       timeout=60)  # fmt: skip
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(),
                                       r.stderr.decode())  # fmt: skip


def test_decode_shows_the_envelope_the_object_and_its_managed_fields(
    server_factory: ServerFactory, etcd: EtcdCluster, tmp_path: Path
) -> None:
    prefix = f"/t-{uuid.uuid4().hex[:12]}/registry"
    server = server_factory(prefix=prefix)  # protobuf, kube-apiserver's default
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    _kubectl(kubeconfig, "apply", "--server-side", "--field-manager=course", "-f", "-",
             stdin=POD)  # fmt: skip
    first = orjson.loads(_kubectl(kubeconfig, "get", "pod", "web", "-o", "json"))
    _kubectl(kubeconfig, "label", "pod", "web", "tier=frontend")
    key = f"{prefix}/pods/default/web"
    endpoints = f"--endpoints={','.join(etcd.endpoints)}"
    out = _decode(key, endpoints)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"key:       {key}" in text
    assert "envelope:  protobuf: k8s\\0 (magic) + runtime.Unknown" in text
    assert "typeMeta.apiVersion: v1" in text and "typeMeta.kind:       Pod" in text
    assert "bytes:     k8s\\x00\\n\\t\\n\\x02v1\\x12\\x03Pod" in text  # etcdctl prints these
    obj_part, managed_part = text.split("--- managedFields")
    assert "kind: Pod" in obj_part and "name: web" in obj_part and "tier: frontend" in obj_part
    assert "managedFields" not in obj_part.split("--- object")[1].split("\n", 1)[1]
    assert "manager: course" in managed_part and "operation: Apply" in managed_part
    assert "manager: kubectl-label" in managed_part and "f:tier: {}" in managed_part
    # the first version, at the revision it was written (etcd keeps it until a compaction)
    old = _decode(key, endpoints, f"--revision={first['metadata']['resourceVersion']}")
    assert old.returncode == 0, old.stderr
    assert "app: web" in old.stdout and "tier: frontend" not in old.stdout
    assert f"mod {first['metadata']['resourceVersion']}," in old.stdout
    missing = _decode(f"{prefix}/pods/default/nope", endpoints)
    assert missing.returncode == 1 and "no such key" in missing.stderr
    # the course's own command: the bundled etcdctl, the value piped in
    value = subprocess.run([str(ETCDCTL), endpoints, "get", key, "--print-value-only"],
                           capture_output=True, timeout=30, check=True).stdout  # fmt: skip
    piped = _decode("-", stdin=value)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.split("--- object")[1] == text.split("--- object")[1]


def test_a_json_stored_object_has_no_envelope(
    server_factory: ServerFactory, etcd: EtcdCluster, tmp_path: Path
) -> None:
    prefix = f"/t-{uuid.uuid4().hex[:12]}/registry"
    server = server_factory("--storage-media-type=application/json", prefix=prefix)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    _kubectl(kubeconfig, "create", "configmap", "plain", "--from-literal=a=b")
    out = _decode(f"{prefix}/configmaps/default/plain",
                  f"--endpoints={','.join(etcd.endpoints)}")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "envelope:  JSON: no envelope, the object's own text" in out.stdout
    assert 'bytes:     {"apiVersion":"v1","kind":"ConfigMap"' in out.stdout
    assert "data:\n  a: b" in out.stdout
