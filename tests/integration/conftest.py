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
- ``start_server(...)`` / ``ServerProcess``: the same outside pytest fixtures (e2e,
  benchmarks). ``ServerProcess.url``, ``.port``, ``.prefix``, ``.stop()``, ``.log()``.
- ``http`` (function, async): an ``aiohttp.ClientSession`` on the shared server's URL.
- ``namespace`` (function, async): a fresh namespace created through the shared server.

The server is started with ``python -m proxy.cli serve``; the fixture waits for its
``serving on`` line and then for ``/readyz``.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest

from lab.etcd import EtcdCluster, free_port

REPO = Path(__file__).resolve().parents[2]
PYTHON = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv").exists() else sys.executable


@dataclass
class ServerProcess:
    """A running ``watchcache serve``; ``stop()`` ends it by PID (SIGTERM, then SIGKILL)."""

    process: subprocess.Popen[str]
    port: int
    prefix: str
    etcd_servers: tuple[str, ...]
    log_path: Path
    args: list[str] = field(default_factory=list)
    # the HTTPS port when started with --secure-port (its "serving on https://" line)
    secure_port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def secure_url(self) -> str:
        assert self.secure_port is not None, "started without --secure-port"
        return f"https://127.0.0.1:{self.secure_port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def terminate(self) -> None:
        """Send SIGTERM (a clean shutdown) without waiting."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = 15.0) -> int:
        return self.process.wait(timeout)

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode


def _wait_serving_line(proc: subprocess.Popen[str], deadline: float, count: int = 1) -> list[str]:
    """The first ``count`` "serving on" lines (plain port first, then the secure one)."""
    assert proc.stdout is not None
    lines: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        while time.monotonic() < deadline:
            # once one line is in, the next may already sit in the pipe's text buffer
            # (select would not see it): the server prints its lines back to back
            if not lines and not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = proc.stdout.readline()
            if not line:  # EOF: the process ended
                break
            if line.startswith("serving on "):
                lines.append(line.strip())
                if len(lines) == count:
                    return lines
    finally:
        sel.close()
    raise RuntimeError("watchcache serve did not print 'serving on'")


def _wait_ready(url: str, deadline: float) -> None:
    last = ""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError) as e:
            last = str(e)
        time.sleep(0.05)  # process start-up: nothing to await but the port
    raise RuntimeError(f"watchcache serve never became ready: {last}")


def start_server(
    etcd_servers: list[str] | tuple[str, ...],
    prefix: str | None = None,
    *flags: str,
    wait_ready: bool = True,
    timeout: float = 30.0,
) -> ServerProcess:
    """Start ``watchcache serve`` on a free port; returns once it answers /readyz (or,
    with ``wait_ready=False``, once it prints its ``serving on`` line)."""
    prefix = prefix or f"/t-{uuid.uuid4().hex[:12]}/registry"
    port = free_port()
    log_fd, log_name = tempfile.mkstemp(prefix="watchcache-serve-", suffix=".log")
    args = [
        PYTHON,
        "-m",
        "proxy.cli",
        "serve",
        f"--etcd-servers={','.join(etcd_servers)}",
        f"--etcd-prefix={prefix}",
        f"--port={port}",
        *flags,
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=log_fd, text=True, cwd=REPO, env=env
    )
    os.close(log_fd)
    server = ServerProcess(proc, port, prefix, tuple(etcd_servers), Path(log_name), args)
    deadline = time.monotonic() + timeout
    try:
        secure = any(f.startswith("--secure-port") for f in flags)
        lines = _wait_serving_line(proc, deadline, 2 if secure else 1)
        if secure:
            server.secure_port = int(lines[-1].rsplit(":", 1)[1])
        if wait_ready:
            _wait_ready(server.url, deadline)
    except RuntimeError as e:
        server.stop()
        raise RuntimeError(f"{e}\n--- server log ---\n{server.log()}") from None
    return server


@pytest.fixture(scope="session")
def server(etcd: EtcdCluster) -> Iterator[ServerProcess]:
    """One shared uncached server on the session etcd (isolate tests by namespace)."""
    proc = start_server(etcd.endpoints, None, "--watch-cache=false")
    try:
        yield proc
    finally:
        proc.stop()


ServerFactory = Callable[..., ServerProcess]


@pytest.fixture
def server_factory(etcd: EtcdCluster) -> Iterator[ServerFactory]:
    """``server_factory(*flags, etcd=None, prefix=None, wait_ready=True)``: a private server."""
    started: list[ServerProcess] = []

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

    session_etcd = etcd
    try:
        yield factory
    finally:
        for proc in started:
            proc.stop()


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
) -> dict[str, object]:
    """A minimal valid Pod (for POST bodies)."""
    meta: dict[str, object] = {"name": name} if name else {}
    if labels:
        meta["labels"] = labels
    spec: dict[str, object] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, **extra}


async def create(
    http: aiohttp.ClientSession, path: str, body: dict[str, object], code: int = 201
) -> dict[str, object]:
    """POST ``body`` and return the decoded answer, asserting the status code."""
    async with http.post(path, json=body) as resp:
        data: dict[str, object] = await resp.json()
        assert resp.status == code, data
        return data
