"""The real kubectl's ``create <subcommand>``s, which send protobuf bodies (and ask for
protobuf answers), against a cached and an uncached server; ``get -o json`` of what they
made shows the expected fields."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_kubectl import kubectl

pytestmark = pytest.mark.etcd

NS = "pbx"


def get(kubeconfig: Path, *args: str) -> Any:
    return json.loads(kubectl(kubeconfig, "get", *args, "-o", "json"))


def tls_pair(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=pbx", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def test_create_subcommands(kubeconfig: Path, tmp_path: Path) -> None:
    k = kubeconfig
    kubectl(k, "create", "namespace", NS)
    assert get(k, "namespace", NS)["status"]["phase"] == "Active"
    n = ("-n", NS)
    kubectl(k, "create", "configmap", "cm", "--from-literal=a=b", *n)
    assert get(k, "configmap", "cm", *n)["data"] == {"a": "b"}
    (tmp_path / "k").write_bytes(b"v\x00w\xff")
    kubectl(k, "create", "secret", "generic", "s", f"--from-file={tmp_path / 'k'}", *n)
    assert get(k, "secret", "s", *n)["data"] == {"k": "dgB3/w=="}  # bytes survive (base64)
    cert, key = tls_pair(tmp_path)
    kubectl(k, "create", "secret", "tls", "t", f"--cert={cert}", f"--key={key}", *n)
    tls = get(k, "secret", "t", *n)
    assert tls["type"] == "kubernetes.io/tls" and set(tls["data"]) == {"tls.crt", "tls.key"}
    kubectl(k, "create", "deployment", "d", "--image=nginx", "--replicas=2", "--port=80", *n)
    dep = get(k, "deployment", "d", *n)
    assert dep["spec"]["replicas"] == 2
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "nginx"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]  # defaulted
    kubectl(k, "create", "job", "j", "--image=busybox", *n, "--", "true")
    job = get(k, "job", "j", *n)
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["true"]
    kubectl(k, "create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", *n)
    assert get(k, "cronjob", "cj", *n)["spec"]["schedule"] == "*/5 * * * *"
    kubectl(k, "create", "service", "clusterip", "svc", "--tcp=80:8080", *n)
    port = get(k, "service", "svc", *n)["spec"]["ports"][0]
    assert (port["port"], port["targetPort"]) == (80, 8080)  # IntOrString
    kubectl(k, "create", "serviceaccount", "sa", *n)
    assert get(k, "serviceaccount", "sa", *n)["metadata"]["name"] == "sa"
    kubectl(k, "create", "role", "r", "--verb=get,list", "--resource=pods", *n)
    rule = get(k, "role", "r", *n)["rules"][0]
    assert rule["verbs"] == ["get", "list"] and rule["resources"] == ["pods"]
    kubectl(k, "create", "rolebinding", "rb", "--role=r", "--serviceaccount=pbx:sa", *n)
    assert get(k, "rolebinding", "rb", *n)["subjects"][0]["name"] == "sa"
    kubectl(k, "create", "clusterrole", "pbx-cr", "--verb=get", "--resource=nodes")
    assert get(k, "clusterrole", "pbx-cr")["rules"][0]["resources"] == ["nodes"]
    kubectl(k, "create", "quota", "q", "--hard=cpu=1,pods=10", *n)
    assert get(k, "resourcequota", "q", *n)["spec"]["hard"] == {"cpu": "1", "pods": "10"}
    kubectl(k, "create", "priorityclass", "pbx-high", "--value=1000", "--description=hi")
    assert get(k, "priorityclass", "pbx-high")["value"] == 1000
    kubectl(
        k, "create", "poddisruptionbudget", "pdb", "--selector=app=d", "--min-available=50%", *n
    )
    assert get(k, "poddisruptionbudget", "pdb", *n)["spec"]["minAvailable"] == "50%"
    # kubectl's own reads of them (protobuf where it asks for it) work too
    names = kubectl(k, "get", "configmaps,secrets,deployments,services", *n, "-o", "name")
    assert "configmap/cm" in names and "deployment.apps/d" in names
