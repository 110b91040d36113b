"""Server-side apply with the real kubectl and the official Python client, against the
server with and without its watch cache: ``kubectl apply --server-side`` (twice, with a
change, with a conflict, with ``--force-conflicts``), ``kubectl diff --server-side``, the
client-side → server-side apply migration, and ``DynamicClient.server_side_apply``."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import KUBECTL
from tests.integration.conftest import ServerProcess

pytestmark = pytest.mark.etcd

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ssa-demo
  namespace: {ns}
  labels: {{app: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: web
        image: {image}
"""


def run(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), f"--kubeconfig={kubeconfig}", *args],
        input=stdin, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def ok(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    proc = run(kubeconfig, *args, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def managed(kubeconfig: Path, ns: str, kind: str, name: str) -> list[tuple[str, str, str]]:
    obj = json.loads(ok(kubeconfig, "get", "--raw", _path(ns, kind, name)))
    return sorted(
        (e["manager"], e["operation"], e.get("subresource", ""))
        for e in obj["metadata"]["managedFields"]
    )


def _path(ns: str, kind: str, name: str) -> str:
    if kind == "deployments":
        return f"/apis/apps/v1/namespaces/{ns}/deployments/{name}"
    return f"/api/v1/namespaces/{ns}/{kind}/{name}"


def test_kubectl_server_side_apply(kubeconfig: Path) -> None:
    ns = "ssa-kubectl"
    ok(kubeconfig, "create", "namespace", ns)
    manifest = DEPLOYMENT.format(ns=ns, replicas=2, image="nginx:1.25")
    assert "serverside-applied" in ok(
        kubeconfig, "apply", "--server-side", "-f", "-", stdin=manifest
    )
    ok(kubeconfig, "apply", "--server-side", "-f", "-", stdin=manifest)  # again: a no-op
    assert managed(kubeconfig, ns, "deployments", "ssa-demo") == [("kubectl", "Apply", "")]

    changed = DEPLOYMENT.format(ns=ns, replicas=2, image="nginx:1.27")
    diff = run(kubeconfig, "diff", "--server-side", "-f", "-", stdin=changed)
    assert diff.returncode == 1 and "nginx:1.27" in diff.stdout, diff.stderr
    ok(kubeconfig, "apply", "--server-side", "-f", "-", stdin=changed)
    image = "{.spec.template.spec.containers[0].image}"
    assert (
        ok(kubeconfig, "-n", ns, "get", "deploy", "ssa-demo", "-o", f"jsonpath={image}")
        == "nginx:1.27"
    )

    ok(kubeconfig, "-n", ns, "scale", "deploy", "ssa-demo", "--replicas=3")
    more = DEPLOYMENT.format(ns=ns, replicas=4, image="nginx:1.27")
    conflict = run(kubeconfig, "apply", "--server-side", "-f", "-", stdin=more)
    assert conflict.returncode != 0
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
        "using apps/v1: .spec.replicas"
    ) in conflict.stderr
    ok(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=more)
    replicas = ok(
        kubeconfig, "-n", ns, "get", "deploy", "ssa-demo", "-o", "jsonpath={.spec.replicas}"
    )
    assert replicas == "4"
    assert managed(kubeconfig, ns, "deployments", "ssa-demo") == [("kubectl", "Apply", "")]


CONFIGMAP = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: csa\n  namespace: {ns}\ndata:\n{data}"
)


def test_client_side_apply_upgrades_to_server_side(kubeconfig: Path) -> None:
    """kubectl's migration (as against kube-apiserver): the client-side applier's fields
    pass to the server-side applier, fields it no longer sends are removed, and the
    last-applied annotation follows the new configuration."""
    ns = "ssa-csa"
    ok(kubeconfig, "create", "namespace", ns)
    ok(kubeconfig, "apply", "-f", "-", stdin=CONFIGMAP.format(ns=ns, data='  a: "1"\n  b: "2"\n'))
    assert managed(kubeconfig, ns, "configmaps", "csa") == [
        ("kubectl-client-side-apply", "Update", "")
    ]
    ok(
        kubeconfig,
        "apply",
        "--server-side",
        "-f",
        "-",
        stdin=CONFIGMAP.format(ns=ns, data='  a: "9"\n'),
    )
    obj = json.loads(ok(kubeconfig, "get", "--raw", _path(ns, "configmaps", "csa")))
    assert obj["data"] == {"a": "9"}
    assert obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == (
        '{"apiVersion":"v1","data":{"a":"9"},"kind":"ConfigMap","metadata":'
        f'{{"name":"csa","namespace":"{ns}"}}}}\n'
    )
    assert managed(kubeconfig, ns, "configmaps", "csa") == [
        ("kubectl", "Apply", ""),
        ("kubectl-last-applied", "Apply", ""),
    ]


@pytest.fixture(scope="module")
def dyn(e2e_server: ServerProcess) -> Iterator[dynamic.DynamicClient]:
    config = client.Configuration(host=e2e_server.url)
    with client.ApiClient(config) as api:
        yield dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]


def apply(
    dyn: dynamic.DynamicClient, resource: Any, body: dict[str, Any], ns: str, manager: str,
    force: bool = False,
) -> Any:  # fmt: skip
    return dyn.server_side_apply(  # type: ignore[no-untyped-call]
        resource, body=body, namespace=ns, field_manager=manager, force_conflicts=force or None
    )


def test_python_client_server_side_apply(dyn: dynamic.DynamicClient) -> None:
    ns = "ssa-python"
    namespaces = dyn.resources.get(api_version="v1", kind="Namespace")
    namespaces.create(body={"metadata": {"name": ns}})
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "dyn"},
        "data": {"a": "1"},
    }
    got = apply(dyn, cms, body, ns, "controller-a")
    assert got.data.a == "1"
    assert [e.manager for e in got.metadata.managedFields] == ["controller-a"]
    other = {**body, "data": {"a": "2"}}
    with pytest.raises(ApiException) as exc:
        apply(dyn, cms, other, ns, "controller-b")
    assert exc.value.status == 409
    assert json.loads(str(exc.value.body))["message"] == (
        'Apply failed with 1 conflict: conflict with "controller-a": .data.a'
    )
    got = apply(dyn, cms, other, ns, "controller-b", force=True)
    assert got.data.a == "2"
    assert [e.manager for e in got.metadata.managedFields] == ["controller-b"]
