"""API aggregation end to end, over real TLS: watchcache (``--secure-port``, RBAC, the
front-proxy flags) in front of the lab's extension API server
(``metrics.k8s.io/v1beta1``, in metrics-server's place: ``kubectl top``), with the real
kubectl and the official Python client. Ported from
``test/e2e/apimachinery/aggregator.go`` (register an APIService for an extension server,
wait until Available, read through the aggregator, check the identity the extension
server sees, and the local APIServices); each case states upstream's answer (checked
against a v1.32 kube-apiserver where it needs no backend: the ServiceNotFound and
FailedDiscoveryCheck conditions and the 503 body).

The last test stops the extension server: Available=False, 503, then back."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes import config, dynamic

from lab.etcd import EtcdCluster
from lab.extension.launcher import (
    APISERVICE_NAME,
    ExtensionPKI,
    ExtensionServer,
    start_extension,
)
from lab.kubeconfig import secure_kubeconfig
from lab.pki import ADMIN, LEARNER, LabPKI
from proxy.server.certs import CertKey, new_ca, sign
from tests.e2e.conftest import KUBECTL
from tests.integration.conftest import ServerProcess, start_server

JSON = dict[str, Any]
GV = "/apis/metrics.k8s.io/v1beta1"
NODE = "agg-node"
NS = "aggregation-e2e"


@dataclass
class Aggregated:
    server: ServerProcess
    pki: LabPKI
    ext_pki: ExtensionPKI
    kubeconfig: Path
    extension: ExtensionServer
    dir: Path


def kubectl(a: Aggregated, *args: str, context: str = ADMIN[0]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), f"--kubeconfig={a.kubeconfig}", f"--context={context}", *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def plain(a: Aggregated, method: str, path: str, body: JSON | None = None) -> JSON:
    """A request on the plain port (the lab's own tooling: system:masters)."""
    data = json.dumps(body).encode() if body is not None else None
    kind = "application/merge-patch+json" if method == "PATCH" else "application/json"
    req = urllib.request.Request(a.server.url + path, data, {"Content-Type": kind}, method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        return dict(json.load(r))


def secure(a: Aggregated, path: str, ctx: ssl.SSLContext, **headers: str) -> tuple[int, Any, str]:
    """(status, headers, body) of a GET on the secure port with ``ctx``'s certificate."""
    req = urllib.request.Request(a.server.secure_url + path, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def front_proxy_context(a: Aggregated, cert: str = "front-proxy-client") -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(a.pki.dir / "ca.crt"))
    ctx.load_cert_chain(a.ext_pki.dir / f"{cert}.crt", a.ext_pki.dir / f"{cert}.key")
    return ctx


def eventually(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.2)  # the availability controller checks every 5 s: nothing to await


UNAVAILABLE_TOTAL = (
    f'aggregator_unavailable_apiservice_total{{name="{APISERVICE_NAME}",'
    'reason="FailedDiscoveryCheck"}'
)


def metric(a: Aggregated, series: str) -> float:
    """The value of one series on ``/metrics`` (0 when absent)."""
    with urllib.request.urlopen(a.server.url + "/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
    return 0.0


def condition(a: Aggregated) -> JSON:
    obj = plain(a, "GET", f"/apis/apiregistration.k8s.io/v1/apiservices/{APISERVICE_NAME}")
    conditions = (obj.get("status") or {}).get("conditions") or [{}]  # none until checked
    return dict(conditions[0])


@pytest.fixture(scope="module")
def agg(etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aggregated]:
    d = tmp_path_factory.mktemp("aggregation")
    pki = LabPKI.create(d / "pki")
    ext_pki = ExtensionPKI.create(d / "pki" / "aggregation")
    server = start_server(etcd.endpoints, None, "--secure-port=0", *pki.server_flags(),
                          *ext_pki.server_flags())  # fmt: skip
    try:
        extension = start_extension(server.url, ext_pki, d / "extension.log")
        kubeconfig = d / "kubeconfig"
        kubeconfig.write_text(secure_kubeconfig(server.secure_url, pki.dir, (ADMIN[0], LEARNER[0])))
        a = Aggregated(server, pki, ext_pki, kubeconfig, extension, d)
        plain(a, "POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        plain(a, "POST", "/api/v1/nodes", {"metadata": {"name": NODE}})
        resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        plain(a, "PATCH", f"/api/v1/nodes/{NODE}/status",
              {"status": {"capacity": resources, "allocatable": resources}})  # fmt: skip
        for name in ("web", "db"):
            requests = {"requests": {"cpu": "200m", "memory": "64Mi"}}
            container = {"name": "c", "image": "nginx", "resources": requests}
            pod = {"metadata": {"name": name, "labels": {"app": name}},
                   "spec": {"containers": [container], "nodeName": NODE}}  # fmt: skip
            plain(a, "POST", f"/api/v1/namespaces/{NS}/pods", pod)
            plain(a, "PATCH", f"/api/v1/namespaces/{NS}/pods/{name}/status",
                  {"status": {"phase": "Running"}})  # fmt: skip
        eventually(lambda: condition(a).get("status") == "True")
        yield a
        a.extension.stop()
    finally:
        server.stop()


# -- the APIServices -----------------------------------------------------------------


def test_local_apiservices_as_upstream_lists_them(agg: Aggregated) -> None:
    """Upstream: one APIService per served built-in group-version, automanaged=onstart,
    Available=True with reason Local; none for apiregistration.k8s.io itself."""
    items = plain(agg, "GET", "/apis/apiregistration.k8s.io/v1/apiservices")["items"]
    local = {i["metadata"]["name"]: i for i in items if "service" not in i["spec"]}
    assert {"v1.", "v1.apps", "v1.batch", "v2.autoscaling", "v1.authentication.k8s.io"} <= set(
        local
    )
    assert not any(n.endswith("apiregistration.k8s.io") for n in local)
    for obj in local.values():
        assert obj["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "onstart"}
        cond = obj["status"]["conditions"][0]
        assert (cond["type"], cond["status"], cond["reason"]) == ("Available", "True", "Local")
        assert cond["message"] == "Local APIServices are always available"
    apps = {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15}
    assert local["v1.apps"]["spec"] == apps


def test_kubectl_lists_apiservices_with_upstreams_columns(agg: Aggregated) -> None:
    out = kubectl(agg, "get", "apiservices")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    row = next(line.split() for line in out.stdout.splitlines() if line.startswith(APISERVICE_NAME))
    assert row[1:3] == ["kube-system/watchcache-metrics", "True"]
    assert condition(agg)["reason"] == "Passed" and condition(agg)["message"] == "all checks passed"


def test_service_not_found_condition(agg: Aggregated) -> None:
    """Upstream (kube-apiserver 1.32): False, ServiceNotFound, ``service/<name> in
    "<namespace>" is not present``; requests to it: 503 ``service unavailable``."""
    body = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1.missing.example.com"},
            "spec": {"group": "missing.example.com", "version": "v1", "groupPriorityMinimum": 100,
                     "versionPriority": 10, "insecureSkipTLSVerify": True,
                     "service": {"namespace": "default", "name": "nothing-here"}}}  # fmt: skip
    plain(agg, "POST", "/apis/apiregistration.k8s.io/v1/apiservices", body)
    path = "/apis/apiregistration.k8s.io/v1/apiservices/v1.missing.example.com"

    def reason() -> str:
        conds = plain(agg, "GET", path).get("status", {}).get("conditions") or [{}]
        return str(conds[0].get("reason"))

    eventually(lambda: reason() == "ServiceNotFound")
    cond = plain(agg, "GET", path)["status"]["conditions"][0]
    assert cond["message"] == 'service/nothing-here in "default" is not present'
    code, headers, text = secure(
        agg, "/apis/missing.example.com/v1/things", agg.pki.ssl_context(ADMIN[0])
    )
    assert (code, text, headers["Content-Type"]) == (503, "service unavailable\n",
                                                     "text/plain; charset=utf-8")  # fmt: skip
    plain(agg, "DELETE", path)


# -- reading through the aggregator ----------------------------------------------------


def test_kubectl_get_podmetrics(agg: Aggregated) -> None:
    out = kubectl(agg, "get", "podmetrics", "-n", NS)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["NAME", "CPU(CORES)", "MEMORY(BYTES)", "WINDOW"]
    assert sorted(line.split()[0] for line in lines[1:]) == ["db", "web"]
    raw = json.loads(kubectl(agg, "get", "--raw", f"{GV}/namespaces/{NS}/pods/web").stdout)
    assert (raw["kind"], raw["metadata"]["name"], raw["containers"][0]["name"]) == (
        "PodMetrics", "web", "c")  # fmt: skip
    missing = kubectl(agg, "get", "podmetrics", "nope", "-n", NS)
    assert missing.returncode == 1
    assert f'podmetrics.metrics.k8s.io "{NS}/nope" not found' in missing.stderr
    pm = {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
          "metadata": {"name": "x", "namespace": NS}}  # fmt: skip
    created = subprocess.run(
        # (no client-side validation: the read-only API publishes no POST operation)
        [str(KUBECTL), f"--kubeconfig={agg.kubeconfig}", "create", "--validate=false", "-f", "-"],
        input=json.dumps(pm), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "the server does not allow this method on the requested resource" in created.stderr
    names = kubectl(agg, "get", "podmetrics", "-n", NS, "-o", "name").stdout.split()
    assert names == [f"podmetrics.metrics.k8s.io/{n}" for n in ("db", "web")]  # by kind


def test_kubectl_top(agg: Aggregated) -> None:
    """``kubectl top pods`` and ``top nodes`` read metrics.k8s.io as from metrics-server:
    the pods' usage (a share of their requests) and the node's (its pods' summed), with
    the node's allocatable for the percentages."""
    pods = kubectl(agg, "top", "pods", "-n", NS)
    assert pods.returncode == 0, pods.stderr
    lines = pods.stdout.splitlines()
    assert lines[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert set(rows) == {"db", "web"}
    for cpu, memory in rows.values():
        assert cpu.endswith("m") and 40 <= int(cpu[:-1]) <= 200
        assert memory.endswith("Mi") and 12 <= int(memory[:-2]) <= 64
    everywhere = kubectl(agg, "top", "pods", "-A")
    assert everywhere.returncode == 0, everywhere.stderr
    assert everywhere.stdout.splitlines()[0].split() == ["NAMESPACE", "NAME", "CPU(cores)",
                                                         "MEMORY(bytes)"]  # fmt: skip
    assert {(r.split()[0], r.split()[1]) for r in everywhere.stdout.splitlines()[1:]} >= {
        (NS, "db"), (NS, "web")}  # fmt: skip
    nodes = kubectl(agg, "top", "nodes")
    assert nodes.returncode == 0, nodes.stderr
    header, *node_rows = nodes.stdout.splitlines()
    assert header.split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    row = next(r.split() for r in node_rows if r.startswith(NODE))
    assert row[1].endswith("m") and row[2].endswith("%") and row[4].endswith("%")
    missing = kubectl(agg, "top", "pod", "nope", "-n", NS)
    assert missing.returncode == 1
    assert f'podmetrics.metrics.k8s.io "{NS}/nope" not found' in missing.stderr


def test_python_dynamic_client(agg: Aggregated) -> None:
    api = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(agg.kubeconfig), context=ADMIN[0]
    )
    with api:
        dyn = dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]
        pm = dyn.resources.get(api_version="metrics.k8s.io/v1beta1", kind="PodMetrics")
        listed = pm.get(namespace=NS, label_selector="app=web")
        assert [i.metadata.name for i in listed.items] == ["web"]
        assert pm.get(namespace=NS, name="db").containers[0].usage.cpu.endswith("m")


def test_discovery_merged(agg: Aggregated) -> None:
    out = kubectl(agg, "api-resources", "--api-group=metrics.k8s.io", "-o", "name")
    assert out.stdout.split() == ["nodes.metrics.k8s.io", "pods.metrics.k8s.io"]
    groups = json.loads(kubectl(agg, "get", "--raw", "/apis").stdout)["groups"]
    names = [g["name"] for g in groups]
    assert names[0] == "apiregistration.k8s.io" and names[-1] == "metrics.k8s.io"
    group = json.loads(kubectl(agg, "get", "--raw", "/apis/metrics.k8s.io").stdout)
    assert group["kind"] == "APIGroup" and group["preferredVersion"]["version"] == "v1beta1"
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    _, _, text = secure(agg, "/apis", agg.pki.ssl_context(ADMIN[0]), Accept=accept)
    item = json.loads(text)["items"][-1]
    assert item["metadata"]["name"] == "metrics.k8s.io"
    assert item["versions"][0]["freshness"] == "Current"
    assert {r["resource"] for r in item["versions"][0]["resources"]} == {"pods", "nodes"}
    # OpenAPI v3: the backend's document, listed in the index and proxied (kubectl explain)
    index = json.loads(kubectl(agg, "get", "--raw", "/openapi/v3").stdout)["paths"]
    assert index["apis/metrics.k8s.io/v1beta1"]["serverRelativeURL"].startswith(
        "/openapi/v3/apis/metrics.k8s.io/v1beta1?hash="
    )
    explained = kubectl(agg, "explain", "podmetrics.containers")
    assert explained.returncode == 0, explained.stderr
    assert "KIND:       PodMetrics" in explained.stdout


def test_identity_reaches_the_extension_server(agg: Aggregated) -> None:
    """Upstream: the aggregator authorizes first (403 from kube-apiserver), then the
    extension server sees the user in X-Remote-User/X-Remote-Group, trusted because of
    the front-proxy client certificate."""
    denied = kubectl(agg, "get", "podmetrics", "-n", NS, context=LEARNER[0])
    assert denied.returncode == 1
    assert ('User "learner" cannot list resource "pods" in API group '
            f'"metrics.k8s.io" in the namespace "{NS}"') in denied.stderr  # fmt: skip
    role = {"metadata": {"name": "aggregation-e2e-metrics"},
            "rules": [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods"],
                       "verbs": ["get", "list", "watch"]}]}  # fmt: skip
    plain(agg, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
    binding = {"metadata": {"name": "aggregation-e2e-metrics"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "aggregation-e2e-metrics"},
               "subjects": [{"kind": "User", "name": "learner",
                             "apiGroup": "rbac.authorization.k8s.io"}]}  # fmt: skip
    plain(agg, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
    ctx = agg.pki.ssl_context(LEARNER[0])
    eventually(lambda: secure(agg, f"{GV}/namespaces/{NS}/pods", ctx)[0] == 200, 10)
    _, headers, _ = secure(agg, f"{GV}/namespaces/{NS}/pods", ctx,
                           **{"X-Remote-User": "root", "Impersonate-User": "root"})  # fmt: skip
    _, headers, _ = secure(
        agg, f"{GV}/namespaces/{NS}/pods", ctx, **{"X-Remote-User": "root"}
    )
    assert headers["X-Extension-Seen-User"] == "learner"  # the client's X-Remote-User dropped
    assert headers["X-Extension-Seen-Groups"] == "learners,system:authenticated"


def test_extension_server_trusts_only_the_front_proxy(agg: Aggregated) -> None:
    """A real aggregated server: the identity headers count only with the front proxy's
    certificate. Without a certificate: 401; with a certificate of another CA (the
    cluster's client CA): the TLS handshake is refused, as Go's VerifyClientCertIfGiven."""
    url = f"https://127.0.0.1:{agg.extension.port}{GV}/namespaces/{NS}/pods"
    ca = str(agg.ext_pki.dir / "extension-ca.crt")
    headers = {"X-Remote-User": "lab-admin", "X-Remote-Group": "system:masters"}

    def get(cert: Path | None) -> int | str:
        ctx = ssl.create_default_context(cafile=ca)
        if cert is not None:
            ctx.load_cert_chain(cert.with_suffix(".crt"), cert.with_suffix(".key"))
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                        timeout=10, context=ctx) as r:  # fmt: skip
                return int(r.status)
        except urllib.error.HTTPError as e:
            return e.code
        except (urllib.error.URLError, ConnectionError, ssl.SSLError):
            return "refused"

    assert get(None) == 401
    assert get(agg.pki.dir / "lab-admin") == "refused"
    assert get(agg.ext_pki.dir / "front-proxy-client") == 200


async def test_watch_streams_through_the_proxy(agg: Aggregated) -> None:
    ctx = agg.pki.ssl_context(ADMIN[0])
    url = f"{agg.server.secure_url}{GV}/namespaces/{NS}/pods?watch=true"
    async with aiohttp.ClientSession() as session, session.get(url, ssl=ctx) as resp:
        assert resp.status == 200
        first = json.loads(await resp.content.readline())
        assert first["type"] == "ADDED"
        plain(
            agg, "PATCH", f"/api/v1/namespaces/{NS}/pods/web", {"metadata": {"labels": {"x": "1"}}}
        )
        while True:
            event = json.loads(await resp.content.readline())
            if event["type"] == "MODIFIED":
                break
        assert event["object"]["metadata"]["labels"]["x"] == "1"


# -- watchcache's own request-header authentication ------------------------------------


def test_watchcache_accepts_the_front_proxy(agg: Aggregated) -> None:
    """``--requestheader-*`` as kube-apiserver: a front-proxy certificate with an allowed
    CN makes the headers the identity; any other certificate's headers are ignored; a
    front-proxy CA certificate with another CN is 401."""
    path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    headers = {"X-Remote-User": "someone", "X-Remote-Group": "g1",
               "X-Remote-Extra-Scopes": "s1", "Content-Type": "application/json"}  # fmt: skip
    body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})

    def review(ctx: ssl.SSLContext) -> tuple[int, JSON]:
        req = urllib.request.Request(agg.server.secure_url + path, body.encode(), headers)
        try:
            with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
                return r.status, dict(json.load(r))
        except urllib.error.HTTPError as e:
            return e.code, dict(json.load(e))

    code, answer = review(front_proxy_context(agg))
    assert code == 201
    assert answer["status"]["userInfo"] == {"username": "someone",
                                            "groups": ["g1", "system:authenticated"],
                                            "extra": {"scopes": ["s1"]}}  # fmt: skip
    code, answer = review(agg.pki.ssl_context(ADMIN[0]))
    assert answer["status"]["userInfo"]["username"] == "lab-admin"
    other = agg.dir / "pki" / "other"
    other.mkdir()
    front_ca = agg.ext_pki.dir
    ca = CertKey((front_ca / "front-proxy-ca.crt").read_bytes(),
                 (front_ca / "front-proxy-ca.key").read_bytes())  # fmt: skip
    sign(ca, "not-allowed", client=True).write(other / "x.crt", other / "x.key")
    ctx = ssl.create_default_context(cafile=str(agg.pki.dir / "ca.crt"))
    ctx.load_cert_chain(other / "x.crt", other / "x.key")
    code, answer = review(ctx)
    assert (code, answer["reason"]) == (401, "Unauthorized")


# -- TLS to the backend ----------------------------------------------------------------


def test_ca_bundle_and_insecure_skip_tls_verify(agg: Aggregated) -> None:
    """A caBundle that did not sign the backend's certificate: FailedDiscoveryCheck with
    Go's x509 words, requests 503; insecureSkipTLSVerify instead: Available again."""
    path = f"/apis/apiregistration.k8s.io/v1/apiservices/{APISERVICE_NAME}"
    other = base64.b64encode(new_ca("not-the-extensions-ca").cert_pem).decode()
    plain(agg, "PATCH", path, {"spec": {"caBundle": other}})
    eventually(lambda: condition(agg).get("status") == "False")
    cond = condition(agg)
    assert cond["reason"] == "FailedDiscoveryCheck"
    assert cond["message"].endswith(
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )
    ctx = agg.pki.ssl_context(ADMIN[0])
    assert secure(agg, f"{GV}/namespaces/{NS}/pods", ctx)[0] == 503
    plain(agg, "PATCH", path, {"spec": {"caBundle": None, "insecureSkipTLSVerify": True}})
    eventually(lambda: condition(agg).get("status") == "True")
    assert secure(agg, f"{GV}/namespaces/{NS}/pods", ctx)[0] == 200
    ca = base64.b64encode(agg.ext_pki.ca_bundle).decode()
    plain(agg, "PATCH", path, {"spec": {"caBundle": ca, "insecureSkipTLSVerify": None}})
    eventually(lambda: condition(agg).get("status") == "True")


# -- the backend goes away (keep last: it stops the extension server) ------------------


def test_backend_stopped_then_back(agg: Aggregated) -> None:
    """Upstream: Available=False with FailedDiscoveryCheck and Go's dial error; requests
    503 ``service unavailable``; kubectl says the server cannot handle the request;
    discovery keeps the group (legacy) and marks it Stale (aggregated)."""
    port = agg.extension.port
    failures_before = metric(agg, UNAVAILABLE_TOTAL)
    agg.extension.stop()
    eventually(lambda: condition(agg).get("status") == "False")
    cond = condition(agg)
    url = f"https://localhost:{port}{GV}"
    assert cond["reason"] == "FailedDiscoveryCheck"
    assert cond["message"] == (f'failing or missing response from {url}: Get "{url}": dial tcp '
                               f"127.0.0.1:{port}: connect: connection refused")  # fmt: skip
    code, _, text = secure(agg, f"{GV}/namespaces/{NS}/pods", agg.pki.ssl_context(ADMIN[0]))
    assert (code, text) == (503, "service unavailable\n")
    assert metric(agg, f'aggregator_unavailable_apiservice{{name="{APISERVICE_NAME}"}}') == 1
    assert metric(agg, UNAVAILABLE_TOTAL) == failures_before + 1
    out = kubectl(agg, "get", "podmetrics", "-n", NS)
    assert out.returncode == 1
    assert "the server is currently unable to handle the request" in out.stderr
    groups = json.loads(kubectl(agg, "get", "--raw", "/apis").stdout)["groups"]
    assert groups[-1]["name"] == "metrics.k8s.io"
    agg.extension = ExtensionServer(agg.server.url, agg.ext_pki, port=port,
                                    log_path=agg.dir / "extension-2.log").start()  # fmt: skip
    eventually(lambda: condition(agg).get("status") == "True")
    assert kubectl(agg, "get", "podmetrics", "-n", NS).returncode == 0
