"""The kubelet API of the simulated nodes and the API server's path to it, through the
real kubectl: ``logs`` (``-f``, ``--previous``, ``--since``, ``--tail``, ``-c``),
``exec`` (one command, stdin, a TTY shell), ``cp`` both ways, ``attach``,
``port-forward`` to a pod and a Service, ``debug`` (an ephemeral container), and
``pods/proxy``/``services/proxy`` (``get --raw``, ``kubectl proxy``) to the pods' IPs
through the simulated cluster's egress.

One server (``--kubelet-client-certificate`` from a CA of the test's own,
``--egress-selector-config-file`` through the sim's konnectivity socket) and
``watchcache sim --root-ca-file`` of that CA (the kubelets' client CA) per module."""

from __future__ import annotations

import asyncio
import base64
import http.client
import os
import pty
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from lab import seed
from lab.apiserver import cli_command
from lab.etcd import EtcdCluster
from lab.kubeconfig import write_kubeconfig
from lab.pki import KUBELET_CLIENT, kubelet_client_flags
from lab.process import stop_process
from lab.sim.konnectivity import egress_selector_config
from proxy.server.certs import CertKey, new_ca, sign
from tests.e2e.conftest import wait_until as _wait
from tests.integration.conftest import JSON, KUBECTL, ServerProcess, start_server

pytestmark = pytest.mark.etcd

NODES = 2


@dataclass
class Cluster:
    server: ServerProcess
    kubeconfig: Path
    dir: Path

    def run(self, *args: str, stdin: str | bytes | None = None,
            timeout: float = 30) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
        data = stdin.encode() if isinstance(stdin, str) else stdin
        return subprocess.run([str(KUBECTL), "--kubeconfig", str(self.kubeconfig), *args],
                              input=data, capture_output=True, timeout=timeout)  # fmt: skip

    def kubectl(self, *args: str, stdin: str | bytes | None = None, timeout: float = 30) -> str:
        r = self.run(*args, stdin=stdin, timeout=timeout)
        assert r.returncode == 0, (r.stderr + r.stdout).decode()
        return r.stdout.decode()

    def as_alice(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[bytes]:
        """kubectl over HTTPS as ``alice`` (group ``devs``, no permission but what a test
        grants), so the request is authorized."""
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "alice",
                  "clusters": [{"name": "c", "cluster": {
                      "server": self.server.secure_url,
                      "certificate-authority": str(self.dir / "certs" / "apiserver.crt")}}],
                  "users": [{"name": "alice", "user": {
                      "client-certificate": str(self.dir / "alice.crt"),
                      "client-key": str(self.dir / "alice.key")}}],
                  "contexts": [{"name": "alice", "context": {"cluster": "c", "user": "alice",
                                                             "namespace": "default"}}]}  # fmt: skip
        path = self.dir / "alice.kubeconfig"
        path.write_text(orjson.dumps(config).decode())
        return subprocess.run([str(KUBECTL), "--kubeconfig", str(path), *args],
                              input=stdin.encode() if stdin else None, capture_output=True,
                              timeout=30)  # fmt: skip

    def json(self, *args: str) -> JSON:
        data: JSON = orjson.loads(self.kubectl(*args, "-o", "json"))
        return data


@pytest.fixture(scope="module")
def cluster(etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    d = tmp_path_factory.mktemp("kubelet")
    ca = new_ca("kubelet-test-ca")
    (d / "ca.crt").write_bytes(ca.cert_pem)
    for name, groups in (KUBELET_CLIENT, ("alice", ("devs",))):
        sign(ca, name, organizations=groups, client=True).write(d / f"{name}.crt",
                                                                d / f"{name}.key")  # fmt: skip
    uds = d / "konnectivity.sock"
    egress = egress_selector_config(d / "egress.yaml", uds)
    with start_server(etcd.endpoints, None, "--lifecycle-controllers=true", "--secure-port=0",
                      f"--cert-dir={d / 'certs'}", f"--client-ca-file={d / 'ca.crt'}",
                      f"--egress-selector-config-file={egress}",
                      *kubelet_client_flags(d)) as server:  # fmt: skip
        plan = seed.Plan(pods=0, nodes=NODES, namespaces=1, configmaps=0)
        result = asyncio.run(seed.seed_with_progress(server.url, plan, quiet=True))
        assert result.ok, result.errors
        log = open(d / "sim.log", "wb")  # noqa: SIM115 - the child's, closed below
        sim = subprocess.Popen(cli_command("sim", "--server", server.url, "--churn", "0",
                                           "--root-ca-file", str(d / "ca.crt"),
                                           "--konnectivity-uds-name", str(uds), "-v"),
                               stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            c = Cluster(server, write_kubeconfig(d / "kubeconfig", server.url), d)
            _wait("kubelet endpoints posted", lambda: all(
                n["status"].get("daemonEndpoints", {}).get("kubeletEndpoint", {}).get("Port")
                not in (None, 10250) for n in c.json("get", "nodes")["items"]))  # fmt: skip
            yield c
        finally:
            stop_process(sim, 20)
            log.close()


POD = """
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: default}
data: {greeting: hello from a ConfigMap}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  volumes: [{name: config, configMap: {name: web-config}}]
  containers:
  - name: nginx
    image: nginx:1.27
    ports: [{containerPort: 80, name: http}]
    env: [{name: MODE, value: lab}]
    volumeMounts: [{name: config, mountPath: /etc/web}]
  - name: sidecar
    image: ghcr.io/example/agent:1.0
"""


@pytest.fixture(scope="module")
def web(cluster: Cluster) -> str:
    cluster.kubectl("apply", "-f", "-", stdin=POD)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s", timeout=40)
    return "web"


def test_logs(cluster: Cluster, web: str) -> None:
    out = cluster.kubectl("logs", web, "-c", "nginx")
    assert "Configuration complete; ready for start up" in out
    r = cluster.run("logs", web)  # two containers: kubectl picks the first and says so
    assert r.returncode == 0 and 'Defaulted container "nginx"' in r.stderr.decode()
    side = cluster.kubectl("logs", web, "-c", "sidecar", "--timestamps", "--tail=2")
    lines = side.splitlines()
    assert 1 <= len(lines) <= 2 and all(line[:4].isdigit() and "Z " in line for line in lines)
    r = cluster.run("logs", web, "-c", "nope")
    assert r.returncode == 1
    assert "container nope is not valid for pod web" in r.stderr.decode()


def test_logs_since_and_previous(cluster: Cluster, web: str) -> None:
    time.sleep(1.5)
    assert cluster.kubectl("logs", web, "-c", "nginx", "--since=1h") == cluster.kubectl(
        "logs", web, "-c", "nginx")  # fmt: skip
    assert "docker-entrypoint" not in cluster.kubectl("logs", web, "-c", "nginx", "--since=1s")
    assert cluster.kubectl("logs", web, "-c", "nginx", "--limit-bytes=13") == "/docker-entry"
    r = cluster.run("get", "--raw", f"/api/v1/namespaces/default/pods/{web}/log?sinceSeconds=0")
    assert r.returncode == 1
    assert "sinceSeconds: Invalid value: 0: must be greater than 0" in r.stderr.decode()
    r = cluster.run("logs", web, "-c", "nginx", "--previous")
    assert r.returncode == 1
    assert ('previous terminated container "nginx" in pod "web" not found'
            in r.stderr.decode())  # fmt: skip


def test_logs_follow(cluster: Cluster, web: str) -> None:
    with subprocess.Popen([str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), "logs",
                           "-f", web, "-c", "sidecar", "--tail=0"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:  # fmt: skip
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 15)
            assert ready, "no line followed within 15 s"
            assert b"handled request" in proc.stdout.readline()
        finally:
            proc.terminate()


def test_exec(cluster: Cluster, web: str) -> None:
    assert cluster.kubectl("exec", web, "-c", "nginx", "--", "cat", "/etc/web/greeting") == (
        "hello from a ConfigMap")  # fmt: skip
    assert cluster.kubectl("exec", web, "-c", "nginx", "--", "env").count("MODE=lab") == 1
    assert cluster.kubectl("exec", web, "-c", "nginx", "--", "hostname") == "web\n"
    script = "cd /etc/web\npwd\nls\necho $MODE > /tmp/x\ncat /tmp/x\n"
    out = cluster.kubectl("exec", "-i", web, "-c", "nginx", "--", "sh", stdin=script)
    assert out == "/etc/web\ngreeting\nlab\n"
    r = cluster.run("exec", web, "-c", "nginx", "--", "sh", "-c", "exit 3")
    assert r.returncode == 3 and "command terminated with exit code 3" in r.stderr.decode()
    r = cluster.run("exec", web, "-c", "nginx", "--", "vim")
    assert r.returncode == 127 and "sh: vim: not found" in r.stderr.decode()


def test_exec_tty_shell(cluster: Cluster, web: str) -> None:
    """``exec -it`` in a terminal: a prompt, echo, and the answers."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: kubectl with the pty as its terminal
        os.execv(str(KUBECTL), [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), "exec",
                                "-it", web, "-c", "nginx", "--", "sh"])  # fmt: skip
    try:
        seen = _read_until(fd, b"/ # ")
        os.write(fd, b"echo hi there\r")
        seen += _read_until(fd, b"hi there\r\n/ # ")
        os.write(fd, b"exit\r")
        _read_until(fd, b"", within=10)
    finally:
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, seen


def _read_until(fd: int, marker: bytes, within: float = 15.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return seen  # the child exited
        if not chunk:
            return seen
        seen += chunk
        if marker and marker in seen:
            return seen
    if marker:
        raise AssertionError(f"{marker!r} not seen; got {seen!r}")
    return seen


def test_cp_both_ways(cluster: Cluster, web: str, tmp_path: Path) -> None:
    local = tmp_path / "notes.txt"
    local.write_text("copied in\n")
    cluster.kubectl("cp", str(local), f"default/{web}:/tmp/notes.txt", "-c", "nginx")
    assert cluster.kubectl("exec", web, "-c", "nginx", "--", "cat", "/tmp/notes.txt") == (
        "copied in\n")  # fmt: skip
    back = tmp_path / "greeting"
    cluster.kubectl("cp", f"default/{web}:/etc/web/greeting", str(back), "-c", "nginx")
    assert back.read_text() == "hello from a ConfigMap"


SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 8080, targetPort: http}]
"""


def _forwarded(cluster: Cluster, target: str, port: str) -> str:
    """``kubectl port-forward TARGET :PORT``, one HTTP GET through it: the body."""
    with subprocess.Popen([str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig),
                           "port-forward", target, f":{port}"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:  # fmt: skip
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 15)
            assert ready, "port-forward did not start within 15 s"
            line = proc.stdout.readline().decode()  # Forwarding from 127.0.0.1:N -> 80
            assert line.startswith("Forwarding from 127.0.0.1:"), line
            local = int(line.split(":")[1].split()[0])
            with urllib.request.urlopen(f"http://127.0.0.1:{local}/hello", timeout=10) as r:
                return str(r.read().decode())
        finally:
            proc.terminate()


def test_port_forward_pod(cluster: Cluster, web: str) -> None:
    body = _forwarded(cluster, f"pod/{web}", "80")
    assert body.startswith("Hello from default/web, container nginx, port 80")
    assert "You sent: GET /hello HTTP/1.1" in body


def test_port_forward_service(cluster: Cluster, web: str) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=SERVICE)
    body = _forwarded(cluster, "svc/web", "8080")  # targetPort http: the pod's port 80
    assert body.startswith("Hello from default/web, container nginx, port 80")


def test_attach_follows_output(cluster: Cluster, web: str) -> None:
    with subprocess.Popen([str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), "attach",
                           web, "-c", "sidecar"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:  # fmt: skip
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 15)
            assert ready, "nothing attached within 15 s"
            assert b"handled request" in proc.stdout.readline()
        finally:
            proc.terminate()


def test_run_interactive_attaches_a_shell(cluster: Cluster) -> None:
    """``kubectl run -i --rm``: the pod's main process is the shell kubectl attaches to;
    when it exits the container ends (restartPolicy Never: Succeeded) and kubectl deletes
    the pod."""
    out = cluster.kubectl("run", "shell", "-i", "--rm", "--restart=Never", "--image=busybox",
                          "--", "sh", stdin="hostname\nexit 0\n", timeout=60)  # fmt: skip
    assert "shell\n" in out
    _wait("the pod deleted", lambda: cluster.run("get", "pod", "shell").returncode == 1)


def test_debug_adds_an_ephemeral_container(cluster: Cluster, web: str) -> None:
    out = cluster.kubectl("debug", web, "-i", "--image=busybox", "--container=dbg", "--",
                          "sh", stdin="ls /etc/web\nexit\n", timeout=60)  # fmt: skip
    assert "greeting" not in out  # the debug container has its own filesystem
    pod = cluster.json("get", "pod", web)
    (ephemeral,) = pod["spec"]["ephemeralContainers"]
    assert (ephemeral["name"], ephemeral["image"], ephemeral["stdin"]) == ("dbg", "busybox", True)
    statuses = {s["name"]: s for s in pod["status"]["ephemeralContainerStatuses"]}
    assert "dbg" in statuses
    r = cluster.run("debug", web, "--image=busybox", "--container=dbg")
    assert r.returncode == 1 and "dbg" in r.stderr.decode()


def test_subresource_verbs_are_authorized(cluster: Cluster, web: str) -> None:
    """``get pods/log``; ``create pods/exec`` even for the WebSocket GET (upstream's
    AuthorizePodWebsocketUpgradeCreatePermission)."""
    cluster.kubectl("create", "role", "read-pods", "--verb=get", "--resource=pods")
    cluster.kubectl("create", "rolebinding", "alice-pods", "--role=read-pods", "--group=devs")
    _wait("alice reads the pod", lambda: cluster.as_alice("get", "pod", web).returncode == 0)
    r = cluster.as_alice("logs", web, "-c", "nginx")
    assert r.returncode == 1
    assert ('User "alice" cannot get resource "pods/log" in API group "" in the namespace '
            '"default"') in r.stderr.decode()  # fmt: skip
    cluster.kubectl("create", "role", "read-logs", "--verb=get", "--resource=pods/log,pods/exec")
    cluster.kubectl("create", "rolebinding", "alice-logs", "--role=read-logs", "--group=devs")
    _wait("alice reads the log",
          lambda: cluster.as_alice("logs", web, "-c", "nginx").returncode == 0)  # fmt: skip
    r = cluster.as_alice("exec", web, "-c", "nginx", "--", "true")
    assert r.returncode == 1
    assert ('User "alice" cannot create resource "pods/exec" in API group "" in the namespace '
            '"default"') in r.stderr.decode()  # fmt: skip
    cluster.kubectl("create", "role", "exec", "--verb=create", "--resource=pods/exec")
    cluster.kubectl("create", "rolebinding", "alice-exec", "--role=exec", "--group=devs")
    _wait("alice execs", lambda: cluster.as_alice("exec", web, "-c", "nginx", "--",
                                                  "hostname").stdout == b"web\n")  # fmt: skip


def test_nodes_proxy_and_upgrades_required(cluster: Cluster, web: str) -> None:
    listed = orjson.loads(cluster.kubectl("get", "--raw", "/api/v1"))["resources"]
    resources = {r["name"]: r for r in listed}
    assert (resources["pods/exec"]["kind"], resources["pods/exec"]["verbs"]) == (
        "PodExecOptions", ["create", "get"])  # fmt: skip
    assert (resources["pods/log"]["kind"], resources["pods/log"]["verbs"]) == ("Pod", ["get"])
    assert resources["nodes/proxy"]["kind"] == "NodeProxyOptions"
    assert resources["pods/ephemeralcontainers"]["verbs"] == ["get", "patch", "update"]
    node = cluster.json("get", "pod", web)["spec"]["nodeName"]
    assert cluster.kubectl("get", "--raw", f"/api/v1/nodes/{node}/proxy/healthz") == "ok"
    # through the cluster egress, as kube-apiserver's kubelet client with konnectivity
    assert "konnectivity: a tunnel to the kubelet at" in (cluster.dir / "sim.log").read_text()
    pods = orjson.loads(cluster.kubectl("get", "--raw", f"/api/v1/nodes/{node}/proxy/pods"))
    assert web in {p["metadata"]["name"] for p in pods["items"]}
    base = f"/api/v1/namespaces/default/pods/{web}"
    for path, headers, message in (
        ("exec?command=ls&stdout=true&container=nginx", {}, "Upgrade request required"),
        ("exec?command=ls&stdout=true&container=nginx",
         {"Connection": "Upgrade", "Upgrade": "SPDY/3.1"},
         "upgrading to SPDY/3.1 is not supported by this server"),
        ("exec?stdout=true&container=nginx", {}, "you must specify at least 1 command"),
    ):  # fmt: skip
        conn = http.client.HTTPConnection("127.0.0.1", cluster.server.port, timeout=10)
        try:  # (urllib always sends Connection: close)
            conn.request("POST", f"{base}/{path}", headers=headers)
            answer = conn.getresponse()
            status = orjson.loads(answer.read())
        finally:
            conn.close()
        assert (answer.status, status["reason"]) == (400, "BadRequest")
        assert status["message"].startswith(message)


def test_pod_on_a_node_that_does_not_exist(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin="""
apiVersion: v1
kind: Pod
metadata: {name: lost, namespace: default}
spec: {nodeName: ghost, containers: [{name: c, image: busybox}]}
""")
    r = cluster.run("logs", "lost")
    assert r.returncode == 1
    assert 'Error from server (NotFound): nodes "ghost" not found' in r.stderr.decode()


def test_official_python_client_exec_and_logs(cluster: Cluster, web: str) -> None:
    """kubernetes (client-python) unchanged: ``stream`` execs over WebSocket
    ``v4.channel.k8s.io``, ``read_namespaced_pod_log`` reads pods/log. (In a child
    process: the client leaves its keep-alive sockets to the collector.)"""
    script = f"""
from kubernetes import client
from kubernetes.stream import stream
api = client.CoreV1Api(client.ApiClient(client.Configuration(host={cluster.server.url!r})))
print(stream(api.connect_get_namespaced_pod_exec, {web!r}, "default", container="nginx",
             command=["cat", "/etc/web/greeting"], stderr=True, stdin=False, stdout=True,
             tty=False))
print(api.read_namespaced_pod_log({web!r}, "default", container="nginx", tail_lines=1))
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    greeting, log = r.stdout.split("\n", 1)
    assert greeting == "hello from a ConfigMap"
    assert "kube-probe/1.37" in log


def _raw(cluster: Cluster, path: str) -> subprocess.CompletedProcess[bytes]:
    return cluster.run("get", "--raw", f"/api/v1/namespaces/default/{path}")


def test_pods_proxy_reaches_the_pod_ip(cluster: Cluster, web: str) -> None:
    """``pods/NAME[:PORT]/proxy/PATH``: the pod's responder at its IP, through the
    simulated cluster's egress; no port: the first one a container declares."""
    ip = cluster.json("get", "pod", web)["status"]["podIP"]
    body = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/{web}:80/proxy/"
                                           "hello?x=1")  # fmt: skip
    assert body.startswith("Hello from default/web, container nginx, port 80")
    assert "You sent: GET /hello?x=1 HTTP/1.1" in body
    for name in (web, f"http:{web}:80"):
        assert "port 80" in cluster.kubectl("get", "--raw",
                                            f"/api/v1/namespaces/default/pods/{name}/proxy/")
    posted = cluster.kubectl("create", "--raw", f"/api/v1/namespaces/default/pods/{web}:80/"
                             "proxy/submit", "-f", "-", stdin='{"a": 1}')  # fmt: skip
    assert "You sent: POST /submit HTTP/1.1" in posted
    r = _raw(cluster, f"pods/{web}:81/proxy/")  # nothing declared there
    assert r.returncode == 1
    assert (f"while dialing {ip}:81, code 503: 503 dial tcp {ip}:81: connect: connection "
            "refused") in r.stderr.decode()  # fmt: skip
    r = _raw(cluster, f"pods/ftp:{web}:80/proxy/")
    assert f'invalid pod request "ftp:{web}:80"' in r.stderr.decode()
    r = _raw(cluster, "pods/absent:80/proxy/")
    assert 'pods "absent" not found' in r.stderr.decode()


def test_services_proxy_picks_a_ready_endpoint(cluster: Cluster, web: str) -> None:
    """The EndpointSlice controller lists the selected pods; ``services/NAME:PORT/proxy``
    goes to one of them at the target port, by number or port name."""
    cluster.kubectl("apply", "-f", "-", stdin=SERVICE)
    ip = cluster.json("get", "pod", web)["status"]["podIP"]

    def endpoints() -> list[str]:
        slices = cluster.json("get", "endpointslices", "-l", "kubernetes.io/service-name=web")
        return [f"{a}:{s['ports'][0]['port']}" for s in slices["items"]
                for e in s.get("endpoints") or [] for a in e["addresses"]
                if e["conditions"]["ready"]]  # fmt: skip

    _wait("the service's endpoints", lambda: endpoints() == [f"{ip}:80"])
    assert f"Endpoints:                {ip}:80" in cluster.kubectl("describe", "service", "web")
    table = cluster.kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=web")
    header, row = table.splitlines()
    assert header.split() == ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
    assert row.split()[1:4] == ["IPv4", "80", ip]
    for name in ("web:8080", "web", "http:web:8080"):
        body = cluster.kubectl("get", "--raw",
                               f"/api/v1/namespaces/default/services/{name}/proxy/x")  # fmt: skip
        assert body.startswith("Hello from default/web, container nginx, port 80"), name
        assert "You sent: GET /x HTTP/1.1" in body
    r = _raw(cluster, "services/web:9999/proxy/")
    assert ('Error from server (ServiceUnavailable): no service port 9999 found for service '
            '"web"') in r.stderr.decode()  # fmt: skip


def test_services_proxy_without_endpoints_is_503(cluster: Cluster) -> None:
    cluster.kubectl("create", "service", "clusterip", "empty", "--tcp=80:8080")
    _wait("its placeholder slice", lambda: cluster.json(
        "get", "endpointslices", "-l", "kubernetes.io/service-name=empty")["items"])
    conn = http.client.HTTPConnection("127.0.0.1", cluster.server.port, timeout=10)
    try:
        conn.request("GET", "/api/v1/namespaces/default/services/empty:80/proxy/")
        answer = conn.getresponse()
        status = orjson.loads(answer.read())
    finally:
        conn.close()
    assert (answer.status, status["reason"], status["message"]) == (
        503, "ServiceUnavailable", 'no endpoints available for service "empty"')


def test_kubectl_proxy_to_a_service(cluster: Cluster, web: str) -> None:
    """``kubectl proxy``, then the Service's proxy URL with plain HTTP, as the docs'
    "Access services running on clusters" walk-through does."""
    cluster.kubectl("apply", "-f", "-", stdin=SERVICE)
    with subprocess.Popen([str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), "proxy",
                           "--port=0"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as proc:  # fmt: skip
        try:
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], 15)
            assert ready, "kubectl proxy did not start within 15 s"
            line = proc.stdout.readline().decode()  # Starting to serve on 127.0.0.1:N
            local = int(line.rsplit(":", 1)[1])
            url = (f"http://127.0.0.1:{local}/api/v1/namespaces/default/services/web:8080/"
                   "proxy/index.html")  # fmt: skip
            _wait("the service's endpoints", lambda: _status(url) == 200)
            with urllib.request.urlopen(url, timeout=10) as r:
                assert "You sent: GET /index.html HTTP/1.1" in r.read().decode()
        finally:
            proc.terminate()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_proxy_subresources_are_authorized(cluster: Cluster, web: str) -> None:
    """``get pods/proxy`` and ``services/proxy``, with the name as the request names it
    (``web:80``)."""
    cluster.kubectl("apply", "-f", "-", stdin=SERVICE)
    r = cluster.as_alice("get", "--raw", f"/api/v1/namespaces/default/pods/{web}:80/proxy/")
    assert r.returncode == 1
    assert ('User "alice" cannot get resource "pods/proxy" in API group "" in the namespace '
            '"default"') in r.stderr.decode()  # fmt: skip
    cluster.kubectl("create", "role", "proxy", "--verb=get",
                    "--resource=pods/proxy,services/proxy")  # fmt: skip
    cluster.kubectl("create", "rolebinding", "alice-proxy", "--role=proxy", "--group=devs")

    def reads(path: str) -> bool:
        r = cluster.as_alice("get", "--raw", f"/api/v1/namespaces/default/{path}/proxy/")
        return r.stdout.startswith(b"Hello from default/web")

    _wait("alice reads through pods/proxy", lambda: reads(f"pods/{web}:80"))
    assert reads("services/web:8080")
    r = cluster.as_alice("create", "--raw", f"/api/v1/namespaces/default/pods/{web}:80/proxy/",
                         "-f", "-", stdin="{}")  # fmt: skip
    assert 'cannot create resource "pods/proxy"' in r.stderr.decode()


SNEAKY = """
apiVersion: v1
kind: Service
metadata: {name: sneaky, namespace: default}
spec:
  ports: [{port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: sneaky-1
  namespace: default
  labels: {kubernetes.io/service-name: sneaky}
addressType: IPv4
ports: [{name: "", port: 22}]
endpoints:
- addresses: [127.0.0.1]
  targetRef: {kind: Pod, name: web, namespace: default}
- addresses: [IP]
"""


def test_proxy_reaches_pods_only(cluster: Cluster, web: str) -> None:
    """Nothing of the host through the proxy subresources: an EndpointSlice written by
    hand is used only where its targetRef is a pod holding that address (a loopback
    address naming the pod, the pod's own address without a targetRef: neither), and a
    pod whose IP is not global unicast is refused."""
    ip = cluster.json("get", "pod", web)["status"]["podIP"]
    cluster.kubectl("apply", "-f", "-", stdin=SNEAKY.replace("IP", ip))
    r = _raw(cluster, "services/sneaky:80/proxy/")
    assert ('Error from server (ServiceUnavailable): no endpoints available for service '
            '"sneaky:80"') in r.stderr.decode()  # fmt: skip
    cluster.kubectl("apply", "-f", "-", stdin="""
apiVersion: v1
kind: Pod
metadata: {name: local, namespace: default}
spec: {nodeName: ghost, containers: [{name: c, image: busybox, ports: [{containerPort: 22}]}]}
""")
    status = {"status": {"podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}]}}
    cluster.kubectl("patch", "pod", "local", "--subresource=status", "--type=merge", "-p",
                    orjson.dumps(status).decode())  # fmt: skip
    r = _raw(cluster, "pods/local:22/proxy/")
    assert "Error from server (BadRequest): address not allowed" in r.stderr.decode()


def _webhook_manifests(ca: CertKey, cert: CertKey) -> str:
    """What upstream's e2e suite deploys for its admission-webhook specs (webhook.go's
    deployWebhookAndService): agnhost ``webhook`` with its certificate from a Secret,
    behind a Service whose port differs from the container's; and two configurations
    calling it, scoped to labelled ConfigMaps (the module's other tests make some)."""
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    flags = ["webhook", "--tls-cert-file=/webhook.local.config/certificates/tls.crt",
             "--tls-private-key-file=/webhook.local.config/certificates/tls.key",
             "--alsologtostderr", "-v=4", "--port=8444"]  # fmt: skip
    selector = {"matchLabels": {"webhook-test": "yes"}}

    def hook(kind: str, path: str) -> JSON:
        return {"name": f"{path.strip('/').replace('/', '-')}.k8s.io", "sideEffects": "None",
                "admissionReviewVersions": ["v1", "v1beta1"], "objectSelector": selector,
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                           "apiVersions": ["v1"], "resources": ["configmaps"]}],
                "clientConfig": {"caBundle": b64(ca.cert_pem), "service": {
                    "namespace": "default", "name": "e2e-test-webhook", "path": path,
                    "port": 8443}}}  # fmt: skip

    docs: list[JSON] = [
        {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
         "metadata": {"name": "sample-webhook-secret", "namespace": "default"},
         "data": {"tls.crt": b64(cert.cert_pem), "tls.key": b64(cert.key_pem)}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "sample-webhook", "namespace": "default",
                      "labels": {"app": "sample-webhook", "webhook": "true"}},
         "spec": {"volumes": [{"name": "webhook-certs",
                               "secret": {"secretName": "sample-webhook-secret"}}],
                  "containers": [{"name": "sample-webhook",
                                  "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                                  "args": flags, "ports": [{"containerPort": 8444}],
                                  "volumeMounts": [{"name": "webhook-certs", "readOnly": True,
                                                    "mountPath": "/webhook.local.config/"
                                                                 "certificates"}]}]}},
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "e2e-test-webhook", "namespace": "default"},
         "spec": {"selector": {"webhook": "true"},
                  "ports": [{"protocol": "TCP", "port": 8443, "targetPort": 8444}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "agnhost-deny"},
         "webhooks": [hook("validating", "/configmaps")]},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "MutatingWebhookConfiguration", "metadata": {"name": "agnhost-mutate"},
         "webhooks": [hook("mutating", "/mutating-configmaps")]},
        # a CONNECT's object is its options (PodAttachOptions): no labels to select by
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "agnhost-attach"},
         "webhooks": [{**hook("validating", "/pods/attach"), "objectSelector": {},
                       "rules": [{"operations": ["CONNECT"], "apiGroups": [""],
                                  "apiVersions": ["v1"], "resources": ["pods/attach"]}]}]},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "to-be-attached-pod", "namespace": "default"},
         "spec": {"containers": [{"name": "container1", "image": "busybox:1.36"}]}},
    ]  # fmt: skip
    return "\n---\n".join(orjson.dumps(d).decode() for d in docs)


def test_webhook_pods_are_called_through_the_egress(cluster: Cluster) -> None:
    """Upstream's e2e admission-webhook pod (the agnhost image, simulated by the lab's
    kubelets) answers the API server at its pod IP, through the cluster egress: a
    validating webhook denies, a mutating one patches, both verified by their
    certificate for ``e2e-test-webhook.default.svc``."""
    ca = new_ca("e2e-server-cert-ca")
    cert = sign(ca, "e2e-test-webhook.default.svc", server=True,
                dns_names=["e2e-test-webhook.default.svc"])  # fmt: skip
    manifests = _webhook_manifests(ca, cert)
    cluster.kubectl("apply", "-f", "-", stdin=manifests)
    try:
        cluster.kubectl("wait", "--for=condition=Ready", "pod/sample-webhook",
                        "--timeout=30s", timeout=40)  # fmt: skip
        _wait("the webhook Service has a ready endpoint", lambda: any(
            e.get("conditions", {}).get("ready") for s in cluster.json(
                "get", "endpointslices", "-l", "kubernetes.io/service-name=e2e-test-webhook"
            )["items"] for e in s.get("endpoints") or []))  # fmt: skip
        cm: JSON = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "denied", "namespace": "default",
                                 "labels": {"webhook-test": "yes"}},
                    "data": {"webhook-e2e-test": "webhook-disallow"}}  # fmt: skip
        r = cluster.run("create", "-f", "-", stdin=orjson.dumps(cm).decode())
        assert r.returncode != 0
        assert ('admission webhook "configmaps.k8s.io" denied the request: the configmap '
                "contains unwanted key and value") in r.stderr.decode()
        cm["metadata"]["name"], cm["data"] = "mutated", {"mutation-start": "yes"}
        cluster.kubectl("create", "-f", "-", stdin=orjson.dumps(cm).decode())
        data = cluster.json("get", "configmap", "mutated")["data"]
        assert data == {"mutation-start": "yes", "mutation-stage-1": "yes"}
        # a CONNECT is admitted too (upstream's ConnectResource): the attach refused
        cluster.kubectl("wait", "--for=condition=Ready", "pod/to-be-attached-pod",
                        "--timeout=30s", timeout=40)  # fmt: skip
        r = cluster.run("attach", "to-be-attached-pod", "-i", "-c", "container1", stdin="",
                        timeout=20)  # fmt: skip
        assert r.returncode != 0
        assert "attaching to pod 'to-be-attached-pod' is not allowed" in r.stderr.decode()
        # no caBundle: the tunnelled TLS fails as Go words it (the fail-closed spec)
        no_ca: JSON = orjson.loads(manifests.split("\n---\n")[3])
        no_ca["metadata"]["name"] = "agnhost-no-ca"
        hook = no_ca["webhooks"][0]
        hook["name"], hook["objectSelector"] = "no-ca.k8s.io", {"matchLabels": {"no-ca": "yes"}}
        del hook["clientConfig"]["caBundle"]
        cluster.kubectl("create", "-f", "-", stdin=orjson.dumps(no_ca).decode())
        cm["metadata"]["name"], cm["metadata"]["labels"] = "no-ca", {"no-ca": "yes"}
        r = cluster.run("create", "-f", "-", stdin=orjson.dumps(cm).decode())
        assert r.returncode != 0
        assert ('failed calling webhook "no-ca.k8s.io": failed to call webhook: Post '
                '"https://e2e-test-webhook.default.svc:8443/configmaps?timeout=10s": tls: failed '
                "to verify certificate: x509: certificate signed by unknown authority"
                ) in r.stderr.decode()  # fmt: skip
    finally:
        cluster.run("delete", "--ignore-not-found", "validatingwebhookconfiguration",
                    "agnhost-no-ca")  # fmt: skip
        cluster.run("delete", "--ignore-not-found", "-f", "-", stdin=manifests)
        cluster.run("delete", "--ignore-not-found", "configmap", "mutated", "denied")
