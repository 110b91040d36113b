"""Audit with the real kubectl and the official Python client, cached and uncached: a
policy file with each level, the log read back as upstream's ``audit.k8s.io/v1``
Events (fields in upstream's order, stages, objectRef, responseStatus, request and
response objects, authorization annotations, impersonatedUser, the Audit-Id header)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lab.etcd import EtcdCluster
from tests.client_python import Watch, call_raw
from tests.e2e.conftest import KUBECTL
from tests.integration.conftest import ServerProcess, start_server

POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/metrics", "/openapi/*"]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
- level: Request
  resources: [{group: "", resources: ["secrets"]}]
- level: Metadata
  omitStages: ["RequestReceived"]
"""
TOKENS = 'admin-token,admin,uid-admin,"system:masters"\nalice-token,alice,uid-alice,"devs"\n'
# upstream's field order (audit.k8s.io/v1 Event as kube-apiserver writes it)
ORDER = ["kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user",
         "impersonatedUser", "sourceIPs", "userAgent", "objectRef", "responseStatus",
         "requestObject", "responseObject", "requestReceivedTimestamp", "stageTimestamp",
         "annotations"]  # fmt: skip


@dataclass
class Audited:
    server: ServerProcess
    log: Path
    kubeconfig: Path

    def events(self, predicate: Any, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The logged events ``predicate`` accepts, once there are ``count`` (the writer
        task writes shortly after the request)."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.log.read_text().splitlines() if self.log.exists() else []
            found = [e for e in map(json.loads, lines) if predicate(e)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


@pytest.fixture(scope="module", params=["uncached", "cached"])
def audited(
    etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Audited]:
    d = tmp_path_factory.mktemp("audit")
    (d / "policy.yaml").write_text(POLICY)
    (d / "tokens.csv").write_text(TOKENS)
    cache = "--watch-cache=false" if request.param == "uncached" else "--watch-cache=true"
    with start_server(
        etcd.endpoints, None, cache, "--secure-port=0", f"--cert-dir={d / 'certs'}",
        f"--token-auth-file={d / 'tokens.csv'}", f"--audit-policy-file={d / 'policy.yaml'}",
        f"--audit-log-path={d / 'audit.log'}",
    ) as proc:  # fmt: skip
        config = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "wc", "cluster": {"server": proc.secure_url,
                          "certificate-authority": str(d / "certs" / "apiserver.crt")}}],
            "users": [{"name": "admin", "user": {"token": "admin-token"}},
                      {"name": "alice", "user": {"token": "alice-token"}}],
            "contexts": [{"name": n, "context": {"cluster": "wc", "user": n}}
                         for n in ("admin", "alice")],
            "current-context": "admin",
        }  # fmt: skip
        (d / "kubeconfig").write_text(json.dumps(config))
        yield Audited(proc, d / "audit.log", d / "kubeconfig")


def kubectl(a: Audited, *args: str, context: str = "admin") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), f"--kubeconfig={a.kubeconfig}", f"--context={context}", *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _in_order(event: dict[str, Any]) -> bool:
    keys = list(event)
    return keys == [k for k in ORDER if k in event]


def test_kubectl_create_and_get_are_audited_at_request_response(audited: Audited) -> None:
    assert kubectl(audited, "create", "configmap", "audit-cm", "--from-literal=a=b").returncode == 0
    created = audited.events(
        lambda e: e["verb"] == "create" and "kubectl-create" in e["requestURI"], 2
    )
    stages = [e["stage"] for e in created]
    assert stages == ["RequestReceived", "ResponseComplete"], stages
    done = created[1]
    assert all(_in_order(e) for e in created)
    assert done["level"] == "RequestResponse" and done["auditID"] == created[0]["auditID"]
    assert done["user"] == {"username": "admin", "uid": "uid-admin",
                            "groups": ["system:masters", "system:authenticated"]}  # fmt: skip
    assert done["objectRef"] == {"resource": "configmaps", "namespace": "default",
                                 "name": "audit-cm", "apiVersion": "v1"}  # fmt: skip
    assert done["responseStatus"] == {"metadata": {}, "code": 201}
    assert done["requestObject"]["data"] == {"a": "b"}  # kubectl sent protobuf
    assert done["responseObject"]["metadata"]["name"] == "audit-cm"
    assert done["annotations"]["authorization.k8s.io/decision"] == "allow"
    assert "annotations" not in created[0]  # authorization had not run yet
    assert done["requestURI"].startswith("/api/v1/namespaces/default/configmaps?fieldManager=")

    assert kubectl(audited, "get", "configmap", "nope").returncode != 0
    (missing,) = audited.events(
        lambda e: e["stage"] == "ResponseComplete" and e.get("objectRef", {}).get("name") == "nope"
    )
    assert missing["responseStatus"] == {
        "metadata": {}, "status": "Failure", "message": 'configmaps "nope" not found',
        "reason": "NotFound", "details": {"name": "nope", "kind": "configmaps"}, "code": 404,
    }  # fmt: skip


def test_forbidden_metadata_level_and_impersonation(audited: Audited) -> None:
    assert kubectl(audited, "get", "pods", context="alice").returncode != 0
    (denied,) = audited.events(lambda e: e["user"]["username"] == "alice")
    assert denied["level"] == "Metadata" and denied["stage"] == "ResponseComplete"
    assert denied["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert denied["responseStatus"]["reason"] == "Forbidden"
    assert kubectl(audited, "get", "secrets", "--as=alice", "--as-group=devs").returncode != 0
    (impersonated,) = audited.events(
        lambda e: e.get("impersonatedUser") and e["stage"] == "ResponseComplete"
    )
    assert impersonated["user"]["username"] == "admin"
    assert impersonated["impersonatedUser"]["username"] == "alice"
    assert impersonated["level"] == "Request"  # the policy sees the authenticated user's request


def test_python_client_list_and_watch(audited: Audited) -> None:
    from kubernetes import client

    config = client.Configuration()
    config.host = audited.server.secure_url
    config.ssl_ca_cert = str(audited.log.parent / "certs" / "apiserver.crt")
    config.api_key = {"authorization": "Bearer admin-token"}
    with client.ApiClient(config) as api:
        core = client.CoreV1Api(api)
        cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-cm"), data={"x": "1"})
        core.create_namespaced_config_map("default", cm)
        resp = call_raw(core.list_namespaced_config_map, "default")
        audit_id = resp.headers["Audit-Id"]
        (listed,) = audited.events(
            lambda e: e["auditID"] == audit_id and e["stage"] == "ResponseComplete"
        )
        assert listed["verb"] == "list" and listed["responseObject"]["kind"] == "ConfigMapList"
        assert "py-cm" in [i["metadata"]["name"] for i in listed["responseObject"]["items"]]
        w = Watch()
        for _ in w.stream(core.list_namespaced_config_map, "default", timeout_seconds=1):
            pass
    watch = audited.events(lambda e: e["verb"] == "watch", 3)
    assert [e["stage"] for e in watch][:3] == [
        "RequestReceived",
        "ResponseStarted",
        "ResponseComplete",
    ]
    assert watch[1]["responseStatus"] == {"metadata": {}, "code": 200}
    assert "responseObject" not in watch[2]


def test_the_servers_own_writes_are_audited_as_system_apiserver(audited: Audited) -> None:
    """Bootstrap writers go through the loopback client over the secure port: each write
    is audited with the server's own user, authorized and admitted like any other."""

    def bootstrap_create(e: dict[str, Any]) -> bool:
        ref = e.get("objectRef") or {}
        return (e["verb"] == "create" and e["stage"] == "ResponseComplete"
                and (ref.get("resource"), ref.get("name")) in WRITTEN_AT_START)  # fmt: skip

    created = audited.events(bootstrap_create, len(WRITTEN_AT_START))
    assert {(e["objectRef"]["resource"], e["objectRef"]["name"]) for e in created} == (
        WRITTEN_AT_START
    )
    for e in created:
        assert e["user"]["username"] == "system:apiserver"
        assert e["user"]["groups"] == ["system:masters", "system:authenticated"]
        assert e["userAgent"].startswith("kube-apiserver/")
        assert e["sourceIPs"] == ["127.0.0.1"]
        assert e["responseStatus"] == {"metadata": {}, "code": 201}
        assert e["annotations"]["authorization.k8s.io/decision"] == "allow"


# one object of each bootstrap writer: system namespaces, RBAC bootstrap policy, system
# PriorityClasses, APF's bootstrap configuration, APIService autoregistration
WRITTEN_AT_START = {
    ("namespaces", "kube-system"),
    ("clusterroles", "cluster-admin"),
    ("clusterrolebindings", "cluster-admin"),
    ("priorityclasses", "system-node-critical"),
    ("flowschemas", "exempt"),
    ("prioritylevelconfigurations", "exempt"),
    ("apiservices", "v1.apps"),
}
